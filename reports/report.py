"""``rmqsim report DIR [--out FILE.html]``: plots of a run, a sweep or a model check, on one HTML page.

DIR is recognised by its files: a run has ``summary.json`` and ``history.jsonl`` (``rmqsim run``),
a sweep has ``sweep.json`` and ``runs/`` (``rmqsim sweep``), a model check has ``check.json`` or
PNG pictures (``rmqsim check``; the state graph is drawn by ``reports/state_graph.py``).
"""

from __future__ import annotations

import glob
import json
import math
import os
import re
from dataclasses import dataclass

from .html import Section, esc, page, table, verdict, write_page
from .sweep_data import ERA_KEY, display_value, is_sweep_dir, load_sweep


class ReportError(Exception):
    """DIR is not something a report can be drawn from (one line, exit code 2)."""


@dataclass
class Page:
    path: str
    kind: str           # "run", "sweep" or "check"
    plots: int
    violated: list[str]  # invariants violated (run) / "N of M runs" (sweep); empty when none


def is_run_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "summary.json")) and os.path.isfile(os.path.join(path, "history.jsonl"))


def is_check_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "check.json")) or bool(glob.glob(os.path.join(path, "*.png")))


def slug(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "-", text).strip("-").lower() or "x"


def _fmt(value, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


# --- one run ---------------------------------------------------------------------------------------


def load_run(run_dir: str) -> tuple[dict, list[dict]]:
    try:
        with open(os.path.join(run_dir, "summary.json"), encoding="utf-8") as f:
            summary = json.load(f)
        with open(os.path.join(run_dir, "history.jsonl"), encoding="utf-8") as f:
            events = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as error:
        raise ReportError(f"{run_dir}: not a readable run output ({error})") from None
    return summary, events


def run_sections(run_dir: str, plot_dir: str, level: int = 2, prefix: str = "") -> tuple[list[Section], list[str]]:
    from .run_plots import plot_lateness, plot_timeline

    summary, events = load_run(run_dir)
    name = summary.get("scenario", os.path.basename(run_dir))
    tag = prefix or slug(f"{name}-seed{summary.get('seed')}")
    invariants = summary.get("invariants") or {}
    violated = [n for n, v in invariants.items() if not v.get("holds", True)]
    stats = summary.get("stats", {})
    late = stats.get("lateness_ms", {})
    description = (summary.get("scenario_doc") or {}).get("description", "")
    head = Section(f"{name} (seed {summary.get('seed')})", tag, level=level)
    if description:
        head.text(esc(description))
    mutants = ", ".join(summary.get("mutants") or []) or "none"
    head.text(f"Era <b>{esc(summary.get('era'))}</b>, mutants <b>{esc(mutants)}</b>; "
              f"{summary.get('virtual_ms', 0) / 1000:.0f} s of virtual time in {summary.get('wall_s', 0):.2f} s of wall "
              f"time, {summary.get('events')} history events. Replay: <code>{esc(summary.get('repro', ''))}</code>")
    head.body.append(table(
        ["sent", "consumed", "failed attempts", "duplicates", "DLQ", "crashes", "faults",
         "lateness p50 / p99 / max (ms)"],
        [[stats.get("sent"), stats.get("consumed"), stats.get("failed_attempts"), stats.get("duplicates"),
          stats.get("dlq"), stats.get("crashes"), stats.get("faults"),
          f"{_fmt(late.get('p50'))} / {_fmt(late.get('p99'))} / {_fmt(late.get('max'))}"]],
        numeric=set(range(7))))
    vacuous = [n for n, v in invariants.items() if v.get("vacuous")]
    if vacuous and not violated:
        head.text('<span class="bad">Vacuous verdict</span>: ' + ", ".join(
            f"{esc(inv)} checked nothing it should have ({esc(invariants[inv].get('vacuous_reason', ''))})"
            for inv in vacuous) + ".")
    elif invariants and not violated:
        head.text('<span class="ok">Every invariant holds</span>: ' + ", ".join(
            f"{esc(inv)} ({v.get('checked')} checked)" for inv, v in invariants.items()) + ".")
    elif invariants:
        rows = []
        for inv, v in invariants.items():
            first = v.get("violations") or []
            why = "; ".join(f"{x.get('msg_id')}: {x.get('explanation')}" for x in first[:2])
            rows.append([esc(inv), verdict(v.get("holds")), v.get("checked"), esc(why)])
        head.body.append(table(["invariant", "verdict", "checked", "first violations"], rows, numeric={2}, raw={0, 1, 3}))
    else:
        head.text("No invariant verdicts in this run's summary.", "note")
    timeline = plot_timeline(events, summary, os.path.join(plot_dir, f"{tag}-timeline.png"))
    lateness = plot_lateness(events, summary, os.path.join(plot_dir, f"{tag}-lateness.png"))
    head.plot(timeline, f"timeline of {name}",
              "<b>Timeline.</b> One lane per message (the y label is its index in send order and its delay level). "
              "A bar is time spent waiting: blue in <code>SCHEDULE_TOPIC_XXXX</code> for its delay level, orange for "
              "a retry (re-sent with level 3 + reconsumeTimes through <code>%RETRY%group</code>), purple in the timer "
              "wheel; each stored copy is labelled with its level and reconsumeTimes (<code>L4 r2</code>), "
              "<code>RETRY</code> or <code>DLQ</code>; ▸ marks the delivery back to the real topic, a green dot a successful consume, a red ✕ a failed "
              "one, a black square the copy in <code>%DLQ%group</code>. Vertical lines cross all lanes at crashes "
              "(red), restarts (green dashed), clock steps (purple dotted) and the start of the drain phase; red "
              "ticks at the top are injected put failures. Messages a violation names are always drawn, first, in red "
              "(✗), and their journeys follow below. Time is virtual (the simulation's clock); the axis turns "
              "logarithmic when the waits span seconds to hours.")
    _violating_traces(head, events, summary, tag)
    head.plot(lateness, f"lateness of {name}",
              "<b>Delivery lateness per level.</b> For every scheduled delivery (delay level, retry or timer): the "
              "time the message was put back into its topic minus its due time (the scheduled copy's store time plus "
              "its delay), in milliseconds of the simulator's clock, as in summary.json and bounded_lateness. "
              "Without faults RocketMQ polls each level every 100 ms, so lateness stays within about 100 ms; a crash "
              "before the delay offsets are flushed, a put failure or a clock step shows as outliers.",
              missing="No lateness plot: no scheduled message (delay level, retry or timer) was delivered in this run.")
    return [head], violated


MAX_TRACES = 50


def _violating_traces(head: Section, events: list[dict], summary: dict, tag: str) -> None:
    """The journey (``rmqsim trace``) of each message a violation names, each under its own anchor."""
    from model.journey import journey
    from reports.trace_text import render

    from .run_plots import violating_ids

    ids = violating_ids(summary)
    if not ids:
        return
    whys: dict[str, list[str]] = {}
    for inv, result in (summary.get("invariants") or {}).items():
        for violation in result.get("violations") or ():
            whys.setdefault(violation.get("msg_id"), []).append(f"{inv}: {violation.get('explanation', '')}")
    links = ", ".join(f'<a href="#{tag}-trace-{esc(m)}">{esc(m)}</a>' for m in ids[:MAX_TRACES])
    head.text(f'<span class="bad">{len(ids)} violating message{"s" if len(ids) != 1 else ""}</span>, drawn first '
              f"in the timeline (red lanes); their journeys, as <code>rmqsim trace DIR --violations</code> prints "
              f"them: {links}" + (f" (first {MAX_TRACES} of {len(ids)})" if len(ids) > MAX_TRACES else "") + ".")
    for msg_id in ids[:MAX_TRACES]:
        text = render(msg_id, journey(events, msg_id), "; ".join(whys.get(msg_id, [])) or None)
        head.body.append(f'<details id="{tag}-trace-{esc(msg_id)}"><summary>trace of <code>{esc(msg_id)}</code>'
                         f"</summary><pre>{esc(text)}</pre></details>")


# --- a sweep ---------------------------------------------------------------------------------------


def sweep_sections(sweep_dir: str, plot_dir: str, level: int = 2, prefix: str = "") -> tuple[list[Section], list[str]]:
    from .sweep_metrics import METRICS
    from .sweep_plots import (
        heatmap_layout,
        plot_curves,
        plot_eras,
        plot_heatmap,
        plot_time_to_dlq,
        plot_whatif,
    )

    try:
        data = load_sweep(sweep_dir)
    except (OSError, ValueError, KeyError) as error:
        raise ReportError(f"{sweep_dir}: not a readable sweep output ({error})") from None
    meta = data.meta
    tag = prefix or slug(f"sweep-{meta.get('name', 'sweep')}")
    runs = data.runs
    n_err = int(runs["error"].notna().sum()) if len(runs) else 0
    ok = data.ok
    checked = ok[ok["checked"].fillna(False).astype(bool)] if len(ok) else ok
    n_viol = int((~checked["holds"].fillna(True).astype(bool)).sum()) if len(checked) else 0
    head = Section(f"Sweep '{meta.get('name')}'", tag, level=level)
    report = meta.get("report") or {}
    if report:  # the question the sweep file asked comes first: its plot and one sentence with the answer
        path, sentence = plot_whatif(data, os.path.join(plot_dir, f"{tag}-whatif.png"))
        metric = METRICS[report["metric"]]
        head.text(f"<b>{esc(sentence)}</b>")
        head.plot(path, f"{report['metric']} against {report['by']}",
                  f"<b>What-if.</b> <code>{esc(report['metric'])}</code> ({esc(metric.text)}; {esc(metric.unit)}) "
                  f"against <code>{esc(report['by'])}</code>, other parameters pooled, one series per consumer "
                  f"group{'' if metric.per_group else ' (a run-level metric: all runs)'}. "
                  + ("Wilson 95% interval over the messages pooled across the seed replicates."
                     if metric.kind == "rate" else "Mean over the seed replicates with a normal 95% interval.")
                  + (" A categorical parameter is drawn as grouped points, never joined by lines."
                     if data.categorical(report["by"]) else ""),
                  missing=f"No what-if plot: no finished run to estimate {report['metric']} from.")
    if meta.get("description"):
        head.text(esc(meta["description"]))
    grid = "; ".join(f"<code>{esc(k)}</code> ∈ {{{esc(', '.join(meta['values'][k]))}}}" for k in data.keys) or "no parameter"
    mode = (f"{meta.get('seeds')} seeds per cell" if meta.get("mode") == "grid"
            else f"a swarm of {meta.get('swarm_runs')} random draws")
    fixed = ", ".join(f"{k} = {v}" for k, v in (meta.get("overrides") or {}).items())
    last = meta.get("last_invocation", {})
    head.text(f"Base scenario <code>{esc(meta.get('base'))}</code>{' with ' + esc(fixed) if fixed else ''}; "
              f"parameters: {grid}; {esc(mode)}. {len(runs)} runs, <span class=\"{'bad' if n_viol else 'ok'}\">"
              f"{n_viol} with an invariant violated</span> (of {len(checked)} checked), {n_err} that raised an error. "
              + ("Computed with the map executor." if last.get("master") == "map"
                 else f"Computed on <code>{esc(last.get('master', '?'))}</code>."))
    if data.cells is not None and len(data.cells):
        rows = []
        cols = [data.column(k) for k in data.keys]
        for _, c in data.cells.head(60).iterrows():
            rate = ("–" if c.get("violation_rate") is None or (isinstance(c.get("violation_rate"), float) and math.isnan(c["violation_rate"]))
                    else f"{c['violation_rate']:.2f} [{c['violation_rate_lo']:.2f}, {c['violation_rate_hi']:.2f}]")
            rows.append([*(display_value(c[col]) for col in cols), int(c["runs"]), rate, _fmt(c.get("duplicates_mean")),
                         _fmt(c.get("lateness_p99_ms_mean"), 0), _fmt(c.get("dlq_mean")),
                         _fmt(c.get("time_to_dlq_p50_ms") / 1000 if c.get("time_to_dlq_p50_ms") is not None
                              and not (isinstance(c.get("time_to_dlq_p50_ms"), float) and math.isnan(c["time_to_dlq_p50_ms"]))
                              else None), int(c["errors"])])
        k = len(cols)
        head.text("<b>Cells</b> (aggregated into <code>cells.parquet</code>): violation rate with its Wilson "
                  "95% interval, and means per run.")
        head.body.append(table([*data.keys, "runs", "violation rate [95% CI]", "duplicates", "lateness p99 (ms)",
                                "DLQ copies per run (all groups)", "time to DLQ p50 (s)", "errors"], rows,
                               numeric=set(range(k, k + 7)) - {k + 1}))
        if len(data.cells) > 60:
            head.text(f"… and {len(data.cells) - 60} more cells in <code>cells.json</code>.", "note")
    bad = runs[(runs["error"].notna()) | (runs["holds"] == False)].head(8) if len(runs) else runs  # noqa: E712
    if len(bad):
        rows = [[r["cell"], r["seed"], r["error"] or ", ".join(r["violated"] if r["violated"] is not None else []),
                 r.get("first_violation") or "", f"<code>{esc(r['repro'])}</code>"] for _, r in bad.iterrows()]
        head.text("<b>Failing runs</b> (first few), each with the command that replays it:")
        head.body.append(table(["cell", "seed", "violated / error", "first violation", "replay"], rows, raw={4}))
    sections = [head]
    xk, yk, fk = heatmap_layout(data)
    s = Section("Violation rate", f"{tag}-heatmap", level=level + 1)
    s.plot(plot_heatmap(data, os.path.join(plot_dir, f"{tag}-heatmap.png")), "violation rate heatmap",
           f"<b>Heatmap.</b> The share of runs in which at least one invariant was violated, for each combination of "
           f"<code>{esc(xk)}</code>{' and <code>' + esc(yk) + '</code>' if yk else ''}"
           f"{' (one panel per <code>' + esc(fk) + '</code>)' if fk else ''}, pooled over the seeds and any other "
           f"parameter. Each cell shows the rate, its Wilson 95% confidence interval and the number of runs; with few "
           f"seeds the interval is wide, so read the interval, not only the colour.",
           missing=("No heatmap: the sweep has no parameter." if not data.keys else
                    "No heatmap: no run carries invariant verdicts (no checker was available)."))
    sections.append(s)
    s = Section("Duplicates and lateness", f"{tag}-curves", level=level + 1)
    s.plot(plot_curves(data, os.path.join(plot_dir, f"{tag}-curves.png")), "duplicates and lateness curves",
           "<b>Curves.</b> For each parameter (x axis, other parameters pooled): left, the mean number of duplicate "
           "consumptions per run (the same message consumed again by the same group, expected after crashes); right, "
           "the mean of each run's 99th percentile of delivery lateness in ms. Shaded: 95% confidence band of the "
           "mean over the runs; one curve per era or mutant when the sweep varies it.",
           missing="No curves: no parameter with two or more values, or no finished run.")
    sections.append(s)
    s = Section("Time to the dead-letter queue", f"{tag}-dlq", level=level + 1)
    s.plot(plot_time_to_dlq(data, os.path.join(plot_dir, f"{tag}-dlq.png")), "time to DLQ",
           "<b>Time to DLQ.</b> For every message that ended in <code>%DLQ%group</code>: virtual time from its first "
           "send to the dead-letter copy. With the default 16 retries through levels 3…18 this is about 4.8 hours; "
           "fewer <code>max_reconsume_times</code> shorten the ladder. Dashed lines are medians.",
           missing="No time-to-DLQ plot: no message reached a dead-letter queue in this sweep.")
    sections.append(s)
    if ERA_KEY in data.keys:
        s = Section("Eras compared", f"{tag}-eras", level=level + 1)
        s.plot(plot_eras(data, os.path.join(plot_dir, f"{tag}-eras.png")), "era comparison",
               "<b>Eras.</b> The same runs split by <code>broker.era</code> (RocketMQ 5.3.3 against 4.9.8 scheduler "
               "behaviour): violation rate, duplicates, lateness p99 and DLQ messages per run, with 95% intervals "
               "(Wilson for the rate, normal for the means).")
        sections.append(s)
    violated = [f"{n_viol} of {len(checked)} runs"] if n_viol else []
    if n_err:
        violated.append(f"{n_err} runs raised an error")
    return sections, violated


# --- a model check --------------------------------------------------------------------------------


def check_sections(check_dir: str, level: int = 2, prefix: str = "check") -> tuple[list[Section], list[str]]:
    """A model-check output: ``check.json`` (``rmqsim check --json``), traces (``*.txt``) and the state-graph
    pictures (``*.png``, drawn by ``reports/state_graph.py`` for ``rmqsim check --graph FILE``)."""
    s = Section("Model check", prefix, level=level)
    violated = []
    meta_path = os.path.join(check_dir, "check.json")
    meta = None
    if os.path.isfile(meta_path):
        try:
            with open(meta_path, encoding="utf-8") as f:
                meta = json.load(f)
        except (OSError, ValueError):
            meta = None
    if isinstance(meta, dict):
        cfg, stats = meta.get("config") or {}, meta.get("stats") or {}
        shown = ", ".join(f"{k} {json.dumps(v) if isinstance(v, list) else v}" for k, v in cfg.items())
        ok = meta.get("verdict") == "ok"
        s.text(f"<b>Exhaustive check</b> of the abstract model (<code>rmqsim check</code>): every reachable state of "
               f"a small configuration ({esc(shown)}) is explored "
               f"{'in sweep-line order' if stats.get('sweep_layers') else 'breadth-first'}"
               f"{f' by {workers} processes' if (workers := stats.get('workers') or 1) > 1 else ''}"
               f" and every property is checked on it; "
               f"liveness through the strongly connected components.")
        rows = [["verdict", f'<span class="{"ok" if ok else "bad"}">{esc(meta.get("verdict"))}</span>'],
                ["states / edges / depth", esc(f"{stats.get('states')} / {stats.get('edges')} / {stats.get('depth')}")],
                ["time", esc(f"{stats.get('seconds')} s ({stats.get('states_per_second')} states/s)"
                             f"{f' in {sittings} sittings (resumed from checkpoints)' if (sittings := stats.get('sittings') or 1) > 1 else ''}")],
                ["properties", esc(", ".join(meta.get("properties") or []))]]
        s.body.append(table(["", ""], rows, raw={1}))
        if meta.get("violation"):
            violated.append("model check violation")
    for path in sorted(glob.glob(os.path.join(check_dir, "*.txt")))[:3]:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(20_000)
        s.body.append(f"<p class=\"what\"><code>{esc(os.path.basename(path))}</code>:</p><pre>{esc(text)}</pre>")
    for path in sorted(glob.glob(os.path.join(check_dir, "*.png"))):
        name = os.path.splitext(os.path.basename(path))[0].replace("_", " ").replace("-", " ")
        s.plot(path, name, f"<b>State graph ({esc(name)}).</b> The model's states, breadth-first from the initial "
                           "state (green) on the left, so the depth is the number of actions taken; the counterexample "
                           "path is drawn in red up to the violating state, its steps numbered as in the trace above.")
    return [s], violated


# --- the page --------------------------------------------------------------------------------------


def write_report(dir_path: str, out: str | None = None) -> Page:
    if not os.path.isdir(dir_path):
        raise ReportError(f"{dir_path}: not a directory")
    out = out or os.path.join(dir_path, "report.html")
    if not out.endswith((".html", ".htm")):
        raise ReportError(f"{out}: the report is one HTML page; give a file name ending in .html")
    plot_dir = os.path.splitext(out)[0] + "-plots"
    if is_run_dir(dir_path):
        kind = "run"
        sections, violated = run_sections(dir_path, plot_dir)
        title = f"rmqsim run: {sections[0].title}"
        lead = "One simulated run: what each message went through, and how late the scheduled deliveries were."
    elif is_sweep_dir(dir_path):
        kind = "sweep"
        sections, violated = sweep_sections(dir_path, plot_dir)
        title = f"rmqsim sweep: {sections[0].title[6:]}"
        lead = "Many seeded runs over a parameter grid, one task each (on Spark or the map executor), aggregated per cell."
    elif is_check_dir(dir_path):
        kind = "check"
        sections, violated = check_sections(dir_path)
        title = "rmqsim model check"
        lead = "Exhaustive exploration of the abstract model for a small configuration."
    else:
        raise ReportError(f"{dir_path}: neither a run (summary.json + history.jsonl), a sweep (sweep.json + runs/) "
                          f"nor a model-check output (check.json or *.png)")
    write_page(out, page(title, lead, sections))
    return Page(out, kind, sum(s.plots for s in sections), violated)
