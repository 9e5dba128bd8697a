"""``make demo``: the main job, and the first page a newcomer opens.

Runs a handful of short teaching scenarios through the real store under the simulator (checking
every invariant), a small what-if sweep (on PySpark when Java 17+ is there, else with the map
executor), and the model checker on a small configuration when it is
available, then writes ``reports/out/index.html``: one self-contained page with every plot, linking
to each run's own report and output directory.
"""

from __future__ import annotations

import os
import shutil
import sys
import time

from sim.checking import check_run

from .catalogue import load_builtin

OUT = os.path.join("reports", "out")
TEACHING = [
    ("one-message-per-level", "How a delayed message travels: one message per delay level, 1 s to 2 h."),
    ("retry-ladder-to-dlq", "A consumer that always fails: 16 retries up the delay ladder, then the DLQ."),
    ("crash-before-delay-offset-flush", "A crash before delayOffset.json is written: duplicates, never loss."),
    ("backwards-clock-step", "The broker clock jumps back 5 minutes; correctDeliverTimestamp saves the day."),
    ("put-failures-during-delivery", "5% of delivery puts fail; 5.3.3 retries the same message 100 ms later."),
]
# The what-if sweep: GroupA's failure probability against each group's DLQ rate (12 short runs, ~10 s).
SWEEP_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sweeps", "dlq-rate.toml")


def _fresh(path: str) -> str:
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, exist_ok=True)
    return path


def run_teaching_scenarios(root: str) -> list[dict]:
    from sim.run import run_scenario

    out = []
    for name, blurb in TEACHING:
        run_dir = os.path.join(root, name)
        start = time.perf_counter()  # wall-clock ok: progress output
        result = run_scenario(load_builtin(name), out_dir=run_dir, scenario_arg=name, check=check_run)
        summary = result.summary
        violated = [k for k, v in summary["invariants"].items() if not v["holds"]]
        st = summary["stats"]
        print(f"  {name:34} {summary['virtual_ms'] / 1000:>7.0f} virtual s in {time.perf_counter() - start:5.1f} s: "  # wall-clock ok
              f"sent {st['sent']}, consumed {st['consumed']}, duplicates {st['duplicates']}, dlq {st['dlq']}; "
              f"{'VIOLATED ' + ', '.join(violated) if violated else 'all invariants hold'}")
        out.append({"name": name, "blurb": blurb, "dir": run_dir, "summary": summary, "violated": violated})
    return out


def run_demo_sweep(sweep_dir: str):
    from .java_check import java_major_version
    from .sweep import load_sweep_file, run_sweep

    major = java_major_version()
    executor = "spark" if major is not None and major >= 17 else "map"
    if executor == "map":
        print("  PySpark needs Java 17+ (see `make java`): running the sweep with --executor map instead")
    spec = load_sweep_file(SWEEP_FILE)
    result = run_sweep(spec, _fresh(sweep_dir), executor=executor, progress=True)
    where = "with the map executor" if result.master == "map" else f"on {result.master}"
    print(f"  {result.total} runs in {len(result.cells)} cells {where} in {result.wall_s:.0f} s: "
          f"{result.violated} runs with a violated invariant, {result.errors} errors")
    return result


CHECK_CLEAN = ["--messages", "1", "--levels", "2", "--max-retries", "1", "--crashes", "1"]
CHECK_MUTANT = ["--messages", "1", "--levels", "1", "--max-retries", "1", "--crashes", "1",
                "--mutant", "no_persist_at_shutdown"]


def _captured(check_main, argv: list[str], path: str) -> int:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = check_main(argv)
    with open(path, "w", encoding="utf-8") as f:
        f.write(buffer.getvalue())
    return code


def run_model_check(check_dir: str) -> bool:
    """The model checker on a small configuration (every property holds), then the same model with the
    #3473 bug put back, whose counterexample is drawn on the state graph; when ``scenarios.check_cli`` exists."""
    try:
        from scenarios.check_cli import check_main
    except ImportError:
        print("  skipped: the model checker's command line (scenarios/check_cli.py) is not there yet")
        return False
    _fresh(check_dir)
    try:
        clean = _captured(check_main, [*CHECK_CLEAN, "--json"], os.path.join(check_dir, "check.json"))
        mutant = _captured(check_main, [*CHECK_MUTANT, "--graph", os.path.join(check_dir, "counterexample.graphml")],
                           os.path.join(check_dir, "counterexample.txt"))
    except Exception as error:  # noqa: BLE001 - the demo goes on without the picture
        print(f"  skipped: the model check failed ({type(error).__name__}: {error})")
        return False
    print(f"  rmqsim check {' '.join(CHECK_CLEAN)}: exit {clean} (0: every property holds)")
    print(f"  rmqsim check {' '.join(CHECK_MUTANT)}: exit {mutant} (1: the bug's counterexample, drawn)")
    return True


def write_index(runs: list[dict], sweep_dir: str | None, check_dir: str | None) -> str:
    from reports.html import Section, esc, page, table, write_page
    from reports.report import check_sections, is_check_dir, run_sections, sweep_sections, write_report

    plot_dir = _fresh(os.path.join(OUT, "plots"))
    sections = []
    intro = Section("Start here", "start")
    intro.text(
        "rmqsim runs the real code of a RocketMQ broker's store (commit log, consume queues, the delay-level "
        "scheduler <code>ScheduleMessageService</code>, the timer wheel, retries through "
        "<code>%RETRY%group</code> and the dead-letter queue <code>%DLQ%group</code>) under a virtual clock, injects "
        "crashes, power failures, put failures and clock steps, and checks every run against invariants: "
        "no loss, at-least-once redelivery, no early delivery, per-level order, DLQ after exactly the maximum "
        "retries. Every run is deterministic: the same scenario and seed give the same history, byte for byte.")
    rows = []
    for run in runs:
        st = run["summary"]["stats"]
        link = os.path.relpath(os.path.join(run["dir"], "report.html"), OUT)
        verdict = ('<span class="bad">VIOLATED: ' + esc(", ".join(run["violated"])) + "</span>" if run["violated"]
                   else '<span class="ok">all hold</span>')
        rows.append([f'<a href="#{esc(run["name"])}">{esc(run["name"])}</a>', esc(run["blurb"]),
                     st["sent"], st["consumed"], st["duplicates"], st["dlq"], verdict,
                     f'<a href="{esc(link)}">page</a> · <code>{esc(run["summary"]["repro"])}</code>'])
    intro.text("<b>The teaching scenarios</b> below each show one mechanism; their timelines say what every message "
               "went through. Each has its own page and a replay command.")
    intro.body.append(table(["scenario", "what it shows", "sent", "consumed", "duplicates", "DLQ", "invariants",
                             "own page · replay"], rows, numeric={2, 3, 4, 5}, raw={0, 1, 6, 7}))
    extra = []
    if sweep_dir:
        extra.append(f'<a href="#sweep">a what-if sweep</a> (<a href="'
                     f'{esc(os.path.relpath(os.path.join(sweep_dir, "report.html"), OUT))}">its own page</a>)')
    if check_dir and is_check_dir(check_dir):
        extra.append('<a href="#check">the model check</a> with a counterexample on its state graph')
    intro.text("Further down: " + (", ".join(extra) if extra else "nothing else this time") +
               ". Run your own: <code>rmqsim run SCENARIO --seed N</code>, <code>rmqsim sweep FILE.toml</code>, "
               "<code>rmqsim report DIR</code> (see <code>rmqsim scenarios</code> for the catalogue).")
    sections.append(intro)
    for run in runs:
        run_secs, _ = run_sections(run["dir"], plot_dir, level=2, prefix=run["name"])
        run_secs[0].title = run["name"]
        run_secs[0].body.insert(0, f'<p class="lead">{esc(run["blurb"])}</p>')
        write_report(run["dir"])
        sections.extend(run_secs)
    if sweep_dir:
        sweep_secs, _ = sweep_sections(sweep_dir, plot_dir, level=3, prefix="sweep")
        write_report(sweep_dir)
        wrapper = Section("A what-if sweep", "sweep", level=2)
        wrapper.text("The same scenario over a grid of parameters, several seeds per cell, every run one task "
                     f"(<code>rmqsim sweep {esc(os.path.relpath(SWEEP_FILE))}</code>), asking one question in its "
                     "<code>[report]</code> table: how does each group's DLQ rate grow with GroupA's failure "
                     f"probability? Rows are in <code>{esc(os.path.join(sweep_dir, 'runs'))}</code>, the "
                     "aggregation in <code>cells.parquet</code>.")
        for s in sweep_secs:
            wrapper.body.append(s.html())
            wrapper.plots += s.plots
        sections.append(wrapper)
    if check_dir and is_check_dir(check_dir):
        check_secs, _ = check_sections(check_dir, level=2, prefix="check")
        check_secs[0].body.insert(0, '<p class="lead">The same protocol as an abstract state machine, explored '
                                     'exhaustively. First the correct model (<code>rmqsim check '
                                     f'{esc(" ".join(CHECK_CLEAN))}</code>, <code>check.json</code>); then the model '
                                     'with bug #3473 put back (<code>rmqsim check '
                                     f'{esc(" ".join(CHECK_MUTANT))} --graph …</code>): a graceful shutdown that does '
                                     'not persist the delay offsets, so a delivered message is delivered again after '
                                     'the restart. Its shortest counterexample is the trace and the red path.</p>')
        sections.extend(check_secs)
    lead = ("What a delayed message, a retry and a dead letter go through in RocketMQ's store, what crashes and "
            "clock steps do to them, and what the invariants say, from runs made by <code>make demo</code>.")
    path = os.path.join(OUT, "index.html")
    write_page(path, page("rmqsim: RocketMQ's store and scheduler, simulated", lead, sections))
    return path


def main() -> int:
    start = time.perf_counter()  # wall-clock ok
    os.makedirs(OUT, exist_ok=True)
    shutil.rmtree(os.path.join(OUT, "demo-store"), ignore_errors=True)  # the earlier demo's output
    print("rmqsim demo: 1/4 teaching scenarios (the real store under the simulator, every invariant checked)")
    runs = run_teaching_scenarios(_fresh(os.path.join(OUT, "runs")))
    print("rmqsim demo: 2/4 a small what-if sweep (PySpark local[*], or the map executor without Java)")
    sweep_dir = os.path.join(OUT, "sweep")
    sweep = run_demo_sweep(sweep_dir)
    print("rmqsim demo: 3/4 the model checker on a small configuration")
    check_dir = os.path.join(OUT, "check")
    checked = run_model_check(check_dir)
    print("rmqsim demo: 4/4 the page")
    index = write_index(runs, sweep_dir if sweep else None, check_dir if checked else None)
    print(f"rmqsim demo: open {index} ({time.perf_counter() - start:.0f} s)")  # wall-clock ok
    return 1 if any(run["violated"] for run in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
