"""A picture of a small model-checking state graph, with the counterexample path highlighted.

Why this layout: breadth-first depth is the distance from the initial state, so drawing depth left to
right makes the shortest counterexample a left-to-right walk; inside a column, states are ordered by
their parents' positions (one barycentre sweep) so that edges cross less. The trace itself is printed
beside the graph, step numbers matching the numbers on the path.
"""

from __future__ import annotations

import textwrap

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

COLOURS = {
    "initial": "#2ca02c",
    "path": "#ff7f0e",
    "violation": "#d62728",
    "terminal": "#1f77b4",
    "other": "#c7c7c7",
    "unexpanded": "#ffffff",
}


def _layout(g: nx.DiGraph, path: list[int]) -> dict[int, tuple[float, float]]:
    """Columns by depth; the counterexample on the middle row, the rest ordered by their parents."""
    columns: dict[int, list[int]] = {}
    for node, data in g.nodes(data=True):
        columns.setdefault(data["depth"], []).append(node)
    on_path = set(path)
    pos: dict[int, tuple[float, float]] = {}
    for depth in sorted(columns):
        nodes = columns[depth]

        def key(n: int, depth: int = depth) -> tuple[float, int]:
            ys = [pos[p][1] for p in g.predecessors(n) if p in pos and g.nodes[p]["depth"] < depth]
            return (-(sum(ys) / len(ys)) if ys else 0.0, n)

        nodes.sort(key=key)
        marked = [n for n in nodes if n in on_path]
        rest = [n for n in nodes if n not in on_path]
        if marked:
            # the path node in the middle, the others alternately above and below in barycentre order
            above = rest[: len(rest) // 2]
            below = rest[len(rest) // 2:]
            order = above + marked + below
            centre = len(above)
        else:
            order, centre = rest, (len(rest) - 1) / 2.0
        for k, node in enumerate(order):
            pos[node] = (float(depth), centre - k)
    return pos


def draw_state_graph(g: nx.DiGraph, path: list[int], out_png: str, title: str = "",
                     trace: list[str] | None = None, violation: int | None = None) -> None:
    """Draw ``g`` (nodes carry ``depth``; edges ``action``) with ``path`` highlighted, into ``out_png``."""
    pos = _layout(g, path)
    ys = [y for _, y in pos.values()] or [0.0]
    depth = max((d for _, d in g.nodes(data="depth")), default=0)
    trace = trace or []
    width = min(36.0, 2.5 + 0.9 * (depth + 1))
    height = min(28.0, max(5.0, 0.26 * (max(ys) - min(ys) + 1)))
    side = 6.8
    fig = plt.figure(figsize=(width + side, height + 0.8))
    split = width / (width + side)
    ax = fig.add_axes((0.01, 0.02, split - 0.02, 0.90))
    on_path = set(path)
    path_edges = set(zip(path, path[1:], strict=False))

    def colour(n: int) -> str:
        data = g.nodes[n]
        if n == violation:
            return COLOURS["violation"]
        if data.get("initial") or n == 0:
            return COLOURS["initial"]
        if n in on_path:
            return COLOURS["path"]
        if data.get("terminal"):
            return COLOURS["terminal"]
        if not data.get("expanded", True):
            return COLOURS["unexpanded"]
        return COLOURS["other"]

    plain = [(u, v) for u, v in g.edges() if (u, v) not in path_edges]
    nx.draw_networkx_edges(g, pos, edgelist=plain, ax=ax, edge_color="#b8b8b8", width=0.5, arrowsize=5,
                           node_size=50, connectionstyle="arc3,rad=0.06")
    nodes = list(g.nodes())
    sizes = [240 if n in on_path else 50 for n in nodes]
    nx.draw_networkx_nodes(g, pos, nodelist=nodes, node_color=[colour(n) for n in nodes], node_size=sizes, ax=ax,
                           linewidths=0.4, edgecolors="#444444")
    if path_edges:
        nx.draw_networkx_edges(g, pos, edgelist=sorted(path_edges), ax=ax, edge_color=COLOURS["violation"],
                               width=2.2, arrowsize=12, node_size=240, connectionstyle="arc3,rad=0.06")
        labels: dict[int, str] = {}
        for k, n in enumerate(path):
            labels.setdefault(n, str(k))  # a lasso returns to a node: keep its first step number
        nx.draw_networkx_labels(g, pos, labels=labels, ax=ax, font_size=7, font_weight="bold")
    ax.set_axis_off()
    ax.margins(0.03)
    fig.suptitle(title, fontsize=10, x=0.01, ha="left")
    side_ax = fig.add_axes((split, 0.02, 1.0 - split - 0.01, 0.90))
    side_ax.set_axis_off()
    handles = [Line2D([0], [0], marker="o", color="w", markerfacecolor=COLOURS[k], markeredgecolor="#444444",
                      markersize=8, label=label)
               for k, label in (("initial", "initial state"), ("path", "counterexample state (step number)"),
                                ("violation", "violating state"), ("terminal", "terminal state"),
                                ("other", "other state"))]
    if any(not expanded for _, expanded in g.nodes(data="expanded", default=True)):
        handles.append(Line2D([0], [0], marker="o", color="w", markerfacecolor=COLOURS["unexpanded"],
                              markeredgecolor="#444444", markersize=8, label="not expanded (picture limit)"))
    handles.append(Line2D([0], [0], color=COLOURS["violation"], lw=2.2, label="counterexample action"))
    side_ax.legend(handles=handles, loc="upper left", fontsize=7.5, frameon=True)
    if trace:
        lines: list[str] = []
        for line in trace:
            lines.extend(textwrap.wrap(line, 64, subsequent_indent="      ") or [""])
        side_ax.text(0.0, 0.70, "\n".join(lines), va="top", ha="left", family="monospace", fontsize=8,
                     transform=side_ax.transAxes)
    fig.savefig(out_png, dpi=130)
    plt.close(fig)


def draw_result(result, out_png: str) -> None:
    """Draw a ``model.checker.CheckResult``: the whole explored graph, its counterexample highlighted."""
    from model.graph_io import counterexample_ids

    ids = counterexample_ids(result)
    g = result.graph.to_networkx(highlight=ids, violation=result.violation.state_id if result.violation else None)
    partial = not result.complete and result.graph.expanded < result.states
    if partial and result.violation is not None:
        # a search cut short: show the layers up to the violation, not the ragged frontier beyond
        limit = max(g.nodes[n]["depth"] for n in ids)
        g = g.subgraph([n for n, d in g.nodes(data="depth") if d <= limit]).copy()
    cfg = result.config
    title = (f"rmqsim check: {cfg.messages} msg, {cfg.levels} level(s), max retries {cfg.max_retries}, "
             f"crashes {cfg.crashes}, put failures {'unbounded' if cfg.put_failures is None else cfg.put_failures}, "
             f"persist points {cfg.persist_points}, era {cfg.era}"
             + (f", mutant {','.join(sorted(cfg.mutants))}" if cfg.mutants else "")
             + f" — {result.states} states, {result.verdict()}"
             + (f" (showing the {g.number_of_nodes()} states up to the violation's depth)" if partial else ""))
    trace: list[str] = []
    if result.violation is not None:
        v = result.violation
        trace.append(f"{v.prop} ({v.kind}):")
        trace.extend(textwrap.wrap(v.explanation, 62))
        trace.append("")
        trace.extend(step.text().strip() for step in v.steps)
        if v.cycle_steps:
            trace.append("then forever:")
            trace.extend(step.text().strip() for step in v.cycle_steps)
        last = (v.cycle_steps or v.steps)[-1:]
        if last:
            from model.spec import describe

            trace.append("")
            trace.append("state: " + describe(last[0].state))
    draw_state_graph(g, ids, out_png, title=title, trace=trace,
                     violation=result.violation.state_id if result.violation else None)
