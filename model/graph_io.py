"""Writing the explored state graph: GraphML (streamed, any size) and the networkx view for pictures.

Why a streaming writer: ``networkx.write_graphml`` needs the whole graph as a DiGraph first, which
costs far more memory than the checker's arrays; GraphML is simple enough to write line by line.
The output reads back with ``networkx.read_graphml``.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from .checker import CheckResult
from .spec import describe

_KEYS = (
    ("d_label", "node", "label", "string"),
    ("d_depth", "node", "depth", "int"),
    ("d_terminal", "node", "terminal", "boolean"),
    ("d_pending", "node", "pending", "boolean"),
    ("d_on_path", "node", "on_path", "boolean"),
    ("d_violation", "node", "violation", "boolean"),
    ("e_action", "edge", "action", "string"),
    ("e_verb", "edge", "verb", "string"),
    ("e_on_path", "edge", "on_path", "boolean"),
)


def counterexample_ids(result: CheckResult) -> list[int]:
    """State ids along the counterexample (the lasso's loop appended), or [] when none."""
    v = result.violation
    if v is None:
        return []
    return list(v.path_ids) + list(v.cycle_ids)


def _path_edges(ids: list[int]) -> set[tuple[int, int]]:
    return set(zip(ids, ids[1:], strict=False))


def write_graphml(result: CheckResult, path: str) -> None:
    g = result.graph
    ids = counterexample_ids(result)
    on_path = set(ids)
    path_edges = _path_edges(ids)
    bad = result.violation.state_id if result.violation is not None else -1

    def b(value: bool) -> str:
        return "true" if value else "false"

    with open(path, "w", encoding="utf-8") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        f.write('<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n')
        for key, domain, name, kind in _KEYS:
            f.write(f'  <key id="{key}" for="{domain}" attr.name="{name}" attr.type="{kind}"/>\n')
        f.write('  <graph id="model" edgedefault="directed">\n')
        for i, s in enumerate(g.states):
            f.write(f'    <node id="n{i}"><data key="d_label">{escape(describe(s))}</data>'
                    f'<data key="d_depth">{g.depth[i]}</data><data key="d_terminal">{b(g.terminal[i])}</data>'
                    f'<data key="d_pending">{b(g.pending[i])}</data><data key="d_on_path">{b(i in on_path)}</data>'
                    f'<data key="d_violation">{b(i == bad)}</data></node>\n')
        for i in range(g.expanded):
            done: set[int] = set()
            for j, aid in g.edges(i):
                if j in done:
                    continue
                done.add(j)
                action = g.actions[aid]
                f.write(f'    <edge source="n{i}" target="n{j}"><data key="e_action">{escape(action.text())}</data>'
                        f'<data key="e_verb">{action.verb}</data>'
                        f'<data key="e_on_path">{b((i, j) in path_edges)}</data></edge>\n')
        f.write("  </graph>\n</graphml>\n")


def png_path_for(graph_path: str) -> str:
    return (graph_path[: -len(".graphml")] if graph_path.endswith(".graphml") else graph_path) + ".png"
