"""Reports: every plot function writes a plausible PNG, the HTML page embeds them, ``rmqsim report``
exit codes, and the layering (matplotlib only in reports/, pyspark only in scenarios/sweep_spark.py)."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import random
import re
import struct
import subprocess
import sys

import pytest

from reports import run_plots, sweep_plots
from reports.report import ReportError, write_report
from reports.sweep_data import load_sweep, summarize, wilson
from scenarios import sweep as sw
from scenarios.cli import _checker, main
from scenarios.scenario import scenario_from_dict
from sim.run import run_scenario

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DOC = {
    "name": "report-sample", "description": "Delayed messages, a consumer that fails some attempts, a crash.",
    "duration": "20s", "drain": "3m",
    "topic": [{"name": "TopicTest", "queues": 2}],
    "producer": [{"topic": "TopicTest", "messages": 60, "rate": "5/s", "delay_levels": [1, 2, 3]}],
    "consumer": [{"group": "GroupA", "topic": "TopicTest", "fail_probability": 0.3, "max_reconsume_times": 1}],
    "faults": {"process_crashes": 1},
}


def png_size(path: str) -> tuple[int, int]:
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def assert_plausible_png(path: str, min_w: int = 800, min_h: int = 300, min_bytes: int = 15_000) -> None:
    width, height = png_size(path)
    assert width >= min_w and height >= min_h, (path, width, height)
    assert min_bytes <= os.path.getsize(path) <= 3_000_000, (path, os.path.getsize(path))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("run") / "run")
    result = run_scenario(scenario_from_dict(DOC, "test"), 3, out_dir=out, check=_checker())
    stats = result.summary["stats"]
    assert stats["failed_attempts"] > 0 and stats["dlq"] > 0 and stats["crashes"] == 1  # the sample has it all
    return out


def _events(run_dir):
    with open(os.path.join(run_dir, "history.jsonl")) as f:
        return [json.loads(line) for line in f]


def _summary(run_dir):
    with open(os.path.join(run_dir, "summary.json")) as f:
        return json.load(f)


def test_run_plots_write_plausible_pngs(run_dir, tmp_path):
    events, summary = _events(run_dir), _summary(run_dir)
    timeline = run_plots.plot_timeline(events, summary, str(tmp_path / "timeline.png"), limit=30)
    assert_plausible_png(timeline, min_h=700)
    assert_plausible_png(run_plots.plot_lateness(events, summary, str(tmp_path / "lateness.png")))
    # nothing scheduled: no empty lateness plot (the report says why instead)
    plain = [e for e in events if e["kind"] != "deliver"]
    assert run_plots.plot_lateness(plain, summary, str(tmp_path / "empty.png")) is None
    assert not (tmp_path / "empty.png").exists()


def test_timeline_shows_the_interesting_messages_first(run_dir):
    events = _events(run_dir)
    lanes = run_plots.message_lanes(events)
    assert len(lanes) == 60 and [lane.index for lane in lanes] == list(range(60))
    chosen, why = run_plots.select_lanes(lanes, events, limit=12)
    assert len(chosen) == 12 and "12 of 60 messages" in why
    assert run_plots.select_lanes(lanes[:5], events, limit=12)[1] == "all 5 messages"
    # 40 plain messages; #10 is dead-lettered, #25 fails once, #33 is consumed twice
    synthetic = []
    for i in range(40):
        msg = f"M{i:02d}"
        synthetic.append({"t_ms": i * 100, "kind": "send", "msg_id": msg, "status": "SEND_OK", "delay_level": 0})
        statuses = ["RECONSUME_LATER", "CONSUME_SUCCESS"] if i == 25 else ["CONSUME_SUCCESS"] * (2 if i == 33 else 1)
        for k, status in enumerate(statuses):
            synthetic.append({"t_ms": i * 100 + 5 + k, "kind": "consume", "msg_id": msg, "group": "G",
                              "client_id": "G-0@sim", "status": status})
        if i == 10:
            synthetic.append({"t_ms": i * 100 + 9, "kind": "dlq", "msg_id": msg, "group": "G"})
    chosen, _ = run_plots.select_lanes(run_plots.message_lanes(synthetic), synthetic, limit=6)
    assert [lane.index for lane in chosen] == [0, 1, 2, 10, 25, 33]


def synthetic_sweep(out: str, checked: bool = True, dlq: bool = True) -> str:
    """A sweep directory as ``rmqsim sweep`` writes it (rows only; no Spark needed)."""
    base = os.path.join(out, "tiny.toml")
    os.makedirs(out, exist_ok=True)
    with open(base, "w") as f:
        from scenarios.toml_out import dumps
        f.write(dumps(DOC))
    sweep_file = os.path.join(out, "s.toml")
    with open(sweep_file, "w") as f:
        f.write('base = "tiny.toml"\nseeds = 6\n[grid]\n"broker.flush_delay_offset_interval" = ["1s", "10s", "30s"]\n'
                'mutant = ["none", "skip_failed_delivery"]\n"broker.era" = ["5.3.3", "4.9.8"]\n')
    spec = sw.load_sweep_file(sweep_file)
    rows = []
    for params, seed in spec.points():
        rng = random.Random(f"{sw.cell_key(spec.keys, params)}/{seed}")
        interval = {"1s": 1, "10s": 10, "30s": 30}[params["broker.flush_delay_offset_interval"]]
        bug = params["mutant"] != "none" and params["broker.era"] == "5.3.3"
        holds = not (bug and rng.random() < 0.7)
        row = {"cell": sw.cell_key(spec.keys, params), "cell_id": sw.cell_id(sw.cell_key(spec.keys, params)),
               "seed": seed, **spec.typed_params(params),
               "era": params["broker.era"], "mutants": "", "error": None, "checked": checked,
               "holds": holds if checked else None, "violated": [] if holds or not checked else ["no_loss"],
               "sent": 600, "consumed": 600, "duplicates": rng.randint(0, 3 * interval),
               "dlq": rng.randint(0, 3) if dlq else 0, "lateness_p99_ms": rng.randint(90, 400 * interval),
               "lateness_max_ms": 500 * interval,
               "time_to_dlq_ms": [rng.randint(40_000, 90_000) for _ in range(2)] if dlq else [],
               "wall_s": 0.2, "repro": f"rmqsim run x.toml --seed {seed}"}
        rows.append(row)
    rows[3]["error"] = "RuntimeError: boom (at x.py:1 in f)"
    sw.write_part(out, sw.rows_to_table(rows, spec.column_types))
    with open(os.path.join(out, "sweep.json"), "w") as f:
        json.dump({**spec.metadata(), "complete": True, "last_invocation": {"master": "local[2]"}}, f)
    return out


def test_sweep_plots_draw_what_the_rows_say(tmp_path, sweep_report):
    from matplotlib.figure import Figure

    data = load_sweep(synthetic_sweep(str(tmp_path / "sweep")))
    assert len(data.runs) == 3 * 2 * 2 * 6 and data.checked
    assert sweep_plots.heatmap_layout(data) == ("broker.flush_delay_offset_interval", "mutant", "broker.era")
    # the summaries behind the plots: Wilson intervals and per-cell counts
    table = summarize(data, ["broker.era", "mutant"])
    row = table[(table["broker.era"] == "4.9.8") & (table["mutant"] == "none")].iloc[0]
    assert row["violations"] == 0 and row["checked"] == 18 and row["rate_hi"] == pytest.approx(wilson(0, 18)[2])
    p, lo, hi = wilson(2, 4)
    assert (p, round(lo, 6), round(hi, 6)) == (0.5, 0.150039, 0.849961)
    # heatmap panel: the image holds each cell's rate (the bug only bites in 5.3.3 with the mutant)
    xk, yk, fk = sweep_plots.heatmap_layout(data)
    cells = summarize(data, [xk, yk, fk])
    ax = Figure().add_subplot()
    image = sweep_plots.draw_heatmap(ax, data, cells, xk, yk, fk, "4.9.8")
    assert image.get_array().tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    ax = Figure().add_subplot()
    image = sweep_plots.draw_heatmap(ax, data, cells, xk, yk, fk, "5.3.3")
    grid = image.get_array().tolist()
    assert grid[0] == [0.0, 0.0, 0.0] and all(v > 0 for v in grid[1])
    # curves: an ordered duration axis (a line and a band per era) at the means of the rows
    ax = Figure().add_subplot()
    sweep_plots.draw_curve(ax, data, xk, "duplicates", "duplicates per run")
    by_era = {line.get_label(): line for line in ax.lines}
    assert set(by_era) == {"broker.era = 5.3.3", "broker.era = 4.9.8"}
    assert list(by_era["broker.era = 4.9.8"].get_xdata()) == [1.0, 10.0, 30.0]
    means = summarize(data, [xk, "broker.era"])
    expected = [means[(means[xk] == v) & (means["broker.era"] == "4.9.8")].iloc[0]["duplicates_mean"]
                for v in ("1s", "10s", "30s")]
    assert list(by_era["broker.era = 4.9.8"].get_ydata()) == pytest.approx(expected)
    from matplotlib.collections import PolyCollection
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 2
    # the mutant axis is categorical: grouped points, no line joins them
    ax = Figure().add_subplot()
    sweep_plots.draw_curve(ax, data, "mutant", "duplicates", "duplicates per run")
    assert all(c.lines[0].get_linestyle() == "None" for c in ax.containers) and len(ax.containers) == 2
    xs = sorted(x for c in ax.containers for x in c.lines[0].get_xdata())
    assert len(xs) == 4 and xs[0] < xs[1] < 0.5 < xs[2] < xs[3]  # two eras side by side at each mutant value
    # time to DLQ: every DLQ time of the finished rows is in the histograms
    ax = Figure().add_subplot()
    assert sweep_plots.draw_time_to_dlq(ax, data)
    counted = sum(sum(p.get_path().vertices[:, 1]) for p in ax.patches) / 2  # a step outline visits each bin twice
    assert counted == pytest.approx(sum(len(a) for a in data.ok["time_to_dlq_ms"]))
    # eras: bar heights are the per-(era, interval) violation rates
    ax = Figure().add_subplot()
    sweep_plots.draw_eras(ax, data, "rate", "violation rate")
    heights = [bar.get_height() for bar in ax.patches]
    assert len(heights) == 2 * 3 and max(heights[:3]) > 0 and heights[3:] == [0.0, 0.0, 0.0]
    # and the PNG wrappers still write a picture of each: the files the shared report drew with them
    out, _code, _printed = sweep_report
    written = sorted(os.listdir(os.path.join(out, "report-plots")))
    for suffix in ("heatmap", "curves", "dlq", "eras"):
        (name,) = [n for n in written if n.endswith(f"-{suffix}.png")]
        assert_plausible_png(os.path.join(out, "report-plots", name))


def test_sweep_plots_say_nothing_when_there_is_nothing_to_show(tmp_path):
    data = load_sweep(synthetic_sweep(str(tmp_path / "sweep"), checked=False, dlq=False))
    assert sweep_plots.plot_heatmap(data, str(tmp_path / "h.png")) is None
    assert sweep_plots.plot_time_to_dlq(data, str(tmp_path / "d.png")) is None
    assert not os.path.exists(tmp_path / "h.png") and not os.path.exists(tmp_path / "d.png")
    assert sweep_plots.plot_curves(data, str(tmp_path / "c.png")) is not None


def _embedded_pngs(html: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)]


def _copy_run(run_dir, dest, holds: bool):
    """The sample run with verdicts set by the test (the report's exit code follows the summary)."""
    dest.mkdir()
    summary = _summary(run_dir)
    summary["invariants"] = {name: {"holds": True, "checked": 1, "violations": []} for name in summary["invariants"]}
    if not holds:
        summary["invariants"]["no_loss"] = {"holds": False, "checked": 1,
                                            "violations": [{"msg_id": "M1", "explanation": "lost on purpose"}]}
    (dest / "summary.json").write_text(json.dumps(summary))
    (dest / "history.jsonl").write_text(open(os.path.join(run_dir, "history.jsonl")).read())
    return str(dest)


def _report_on_the_command_line(argv: list[str]) -> tuple[int, str]:
    """``rmqsim report ...``: its exit code and what it printed (for module fixtures, which cannot use capsys)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def good_report(run_dir, tmp_path_factory):
    """``rmqsim report`` on the sample run with every verdict set to hold, written once (two plots): the page's
    contents and the exit code are judged on the same report."""
    where = tmp_path_factory.mktemp("good-report")
    good = _copy_run(run_dir, where / "good-run", holds=True)
    path = str(where / "ok.html")
    code, printed = _report_on_the_command_line(["report", good, "--out", path])
    return path, code, printed


def test_run_report_is_one_self_contained_page(good_report):
    path, _code, printed = good_report
    assert printed == f"wrote {path} (run report: 2 plots)\n"
    html = open(path).read()
    images = _embedded_pngs(html)
    assert len(images) == 2 and all(img.startswith(b"\x89PNG") and len(img) > 15_000 for img in images)
    assert "<b>Timeline.</b>" in html and "<b>Delivery lateness per level.</b>" in html
    assert "report-sample" in html and "rmqsim run" in html
    assert not re.search(r'src="(?!data:)', html), "every image must be embedded"


@pytest.fixture(scope="module")
def sweep_report(tmp_path_factory):
    """``rmqsim report`` on the synthetic sweep, written once (four plots, seconds): the page's contents, the
    PNG wrappers and the exit code are judged on the same report."""
    out = synthetic_sweep(str(tmp_path_factory.mktemp("sweep-report") / "sweep"))
    code, printed = _report_on_the_command_line(["report", out])
    return out, code, printed


def test_sweep_report_embeds_every_plot_and_lists_failing_runs(sweep_report):
    out, _code, printed = sweep_report
    path = os.path.join(out, "report.html")
    lines = printed.splitlines()
    assert lines[0] == f"wrote {path} (sweep report: 4 plots)", lines
    assert lines[1].startswith("  the sweep has invariant violations: [") and "runs" in lines[1], lines
    html = open(path).read()
    assert len(_embedded_pngs(html)) == 4
    for text in ("<b>Heatmap.</b>", "<b>Curves.</b>", "<b>Time to DLQ.</b>", "<b>Eras.</b>", "Failing runs",
                 "RuntimeError: boom"):
        assert text in html, text


def test_report_command_exit_codes(run_dir, good_report, sweep_report, tmp_path, capsys):
    assert good_report[1] == 0 and "run report: 2 plots" in good_report[2]  # the shared report of a run that holds
    # a run with a violated invariant: the page is written, the exit code says so
    bad = _copy_run(run_dir, tmp_path / "bad-run", holds=False)
    assert main(["report", bad]) == 1
    assert "lost on purpose" in open(os.path.join(bad, "report.html")).read()
    assert sweep_report[1] == 1  # a sweep with violations: the shared report's exit code
    capsys.readouterr()
    for argv in (["report", str(tmp_path / "missing")], ["report", os.path.join(sweep_report[0], "runs")],
                 ["report", run_dir, "--out", str(tmp_path / "page.png")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("rmqsim: "), err
    with pytest.raises(ReportError):
        write_report(str(tmp_path / "missing"))


def test_matplotlib_only_in_reports_and_pyspark_only_in_the_sweep_module():
    offenders = []
    for folder in ("store", "sim", "model", "scenarios", "reports"):
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT)
                text = open(path, encoding="utf-8").read()
                if re.search(r"^\s*(import|from)\s+pyspark", text, re.M) and rel != os.path.join("scenarios", "sweep_spark.py"):
                    offenders.append(f"{rel} imports pyspark")
                if re.search(r"^\s*(import|from)\s+matplotlib", text, re.M) and not rel.startswith("reports" + os.sep):
                    offenders.append(f"{rel} imports matplotlib")
    assert not offenders, offenders
    # and at run time: importing the CLI and the sweep module loads neither; the reports load no pyspark
    code = ("import sys, scenarios.cli, scenarios.sweep, scenarios.sweep_spark\n"
            "bad = [m for m in ('pyspark', 'matplotlib') if m in sys.modules]\n"
            "import reports.report, reports.run_plots, reports.sweep_plots\n"
            "bad += ['pyspark (reports)'] if 'pyspark' in sys.modules else []\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == ""


# --- what-if reports: [report] metric against a swept key ------------------------------------------------


def whatif_sweep(out: str, by_values: str, report: str, rows_of) -> str:
    """A sweep directory with a [report], whose rows ``rows_of(params, seed)`` the test chooses."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tiny.toml"), "w") as f:
        from scenarios.toml_out import dumps
        f.write(dumps(DOC))
    sweep_file = os.path.join(out, "s.toml")
    with open(sweep_file, "w") as f:
        f.write(f'base = "tiny.toml"\nseeds = 4\n[grid]\n{by_values}\n[report]\n{report}\n')
    spec = sw.load_sweep_file(sweep_file)
    rows = []
    for params, seed in spec.points():
        cell = sw.cell_key(spec.keys, params)
        rows.append({"cell": cell, "cell_id": sw.cell_id(cell), "seed": seed, **spec.typed_params(params),
                     "error": None, "checked": True, "holds": True, "violated": [], "repro": "x",
                     **rows_of(params, seed)})
    sw.write_part(out, sw.rows_to_table(rows, spec.column_types))
    with open(os.path.join(out, "sweep.json"), "w") as f:
        json.dump({**spec.metadata(), "complete": True, "last_invocation": {"master": "map"}}, f)
    return out


def _groups(p: float, seed: int) -> dict:
    """GroupA dead-letters p of its 100 messages (a seed moves it by one), GroupB always 2: per group."""
    a = round(100 * p) + (seed % 2)
    return {"groups": [{"group": "GroupA", "expected": 100, "consumed": 100 - a, "dlq": a, "lost": 0, "pending": 0,
                        "duplicates": seed, "attempts": 100 + 2 * a, "time_to_dlq_mean_ms": 40_000},
                       {"group": "GroupB", "expected": 100, "consumed": 98, "dlq": 2, "lost": 0, "pending": 0,
                        "duplicates": 0, "attempts": 104, "time_to_dlq_mean_ms": 40_000}],
            "dlq": a + 2, "lateness_p99_ms": 100 + seed}


def test_whatif_plot_draws_the_metric_per_group_with_wilson_bands(tmp_path):
    from matplotlib.collections import PolyCollection
    from matplotlib.figure import Figure

    from reports.sweep_data import metric_table

    out = whatif_sweep(str(tmp_path / "w"), '"consumer.fail_probability" = [0.1, 0.3, 0.5]',
                       'metric = "dlq_rate"\nby = "consumer.fail_probability"',
                       lambda params, seed: _groups(params["consumer.fail_probability"], seed))
    data = load_sweep(out)
    # the parameter is stored as a float column, not as '0.1' strings
    import pyarrow.parquet as pq
    part = os.path.join(out, "runs", sorted(os.listdir(os.path.join(out, "runs")))[0])
    assert str(pq.read_schema(part).field("p_consumer_fail_probability").type) == "double"
    assert data.types == {"consumer.fail_probability": "float"} and not data.categorical("consumer.fail_probability")
    table = metric_table(data, "dlq_rate", "consumer.fail_probability")
    a = table[table["group"] == "GroupA"]
    # pooled counts per group over the 4 seeds: 0.1 -> 10+11+10+11 of 400; never summed with GroupB
    assert list(a["k"]) == [42, 122, 202] and list(a["n"]) == [400, 400, 400]
    assert list(table[table["group"] == "GroupB"]["k"]) == [8, 8, 8]
    runs = metric_table(data, "violation_rate", "consumer.fail_probability")  # a run-level rate: all runs
    assert list(runs["group"]) == ["(all)"] * 3 and list(runs["k"]) == [0, 0, 0] and list(runs["n"]) == [4, 4, 4]
    p, lo, hi = wilson(42, 400)
    assert a.iloc[0]["estimate"] == pytest.approx(p) and a.iloc[0]["lo"] == pytest.approx(lo)
    ax = Figure().add_subplot()
    sentence = sweep_plots.plot_metric(ax, data, "dlq_rate", "consumer.fail_probability")
    lines = [line for line in ax.lines if line.get_label() in ("group GroupA", "group GroupB")]
    assert [line.get_label() for line in lines] == ["group GroupA", "group GroupB"]
    assert list(lines[0].get_xdata()) == [0.1, 0.3, 0.5]
    assert list(lines[0].get_ydata()) == pytest.approx([42 / 400, 122 / 400, 202 / 400])
    assert list(lines[1].get_ydata()) == pytest.approx([0.02, 0.02, 0.02])
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2
    ys = bands[0].get_paths()[0].vertices[:, 1]
    assert min(ys) == pytest.approx(lo) and max(ys) == pytest.approx(wilson(202, 400)[2])
    assert sentence.startswith("dlq_rate for GroupA rises from 0.10 [0.08, 0.14] at 0.1 to 0.51 [0.46, 0.55] at 0.5")
    assert "dlq_rate for GroupB stays at 0.02" in sentence and "Wilson" in sentence
    # the page opens with the question's plot and sentence
    page = write_report(out)
    html = open(page.path).read()
    assert html.index("<b>What-if.</b>") < html.index("Base scenario") and "dlq_rate for GroupA rises" in html


def test_whatif_categorical_parameter_is_grouped_points_and_means_have_normal_intervals(tmp_path):
    from matplotlib.figure import Figure

    def rows_of(params, seed):
        late = {"5.3.3": 100, "4.9.8": 300}[params["broker.era"]] + 10 * seed
        return {**_groups(0.2, seed), "lateness_p99_ms": late}

    out = whatif_sweep(str(tmp_path / "c"), '"broker.era" = ["5.3.3", "4.9.8"]',
                       'metric = "p99_lateness_ms"\nby = "broker.era"', rows_of)
    data = load_sweep(out)
    assert data.categorical("broker.era")
    ax = Figure().add_subplot()
    sentence = sweep_plots.plot_metric(ax, data, "p99_lateness_ms", "broker.era")
    (bars,) = [c for c in ax.containers if c.get_label() == "all runs"]
    points = bars.lines[0]
    assert points.get_linestyle() == "None" and points.get_marker() == "o"  # points, not a joined line
    assert list(points.get_xdata()) == [0, 1] and list(points.get_ydata()) == [125.0, 325.0]
    from matplotlib.collections import PolyCollection
    assert not [c for c in ax.collections if isinstance(c, PolyCollection)]  # error bars, not a band
    assert [t.get_text() for t in ax.get_xticklabels()] == ["5.3.3", "4.9.8"]
    import statistics
    half = 1.959963984540054 * statistics.stdev([110, 120, 130, 140]) / 2
    (segment, _) = bars.lines[2][0].get_segments()  # the first value's error bar spans its interval
    assert segment[0][1] == pytest.approx(125 - half) and segment[1][1] == pytest.approx(125 + half)
    assert sentence.startswith(f"p99_lateness_ms is 125 [{125 - half:.0f}, {125 + half:.0f}] at broker.era = 5.3.3")
    # per-group categorical metric: the two groups stand side by side, never on the same x
    ax = Figure().add_subplot()
    sweep_plots.plot_metric(ax, data, "duplicates_per_message", "broker.era")
    xs = {c.get_label(): list(c.lines[0].get_xdata()) for c in ax.containers if c.get_label().startswith("group")}
    assert set(xs) == {"group GroupA", "group GroupB"} and xs["group GroupA"][0] < xs["group GroupB"][0] < 1


@pytest.mark.parametrize(("sweep", "workers"), [(False, 1), (True, 1), (False, 2), (True, 2)],
                         ids=["bfs", "sweep", "bfs-workers", "sweep-peers"])
def test_a_check_report_says_how_the_states_were_explored(tmp_path, capsys, sweep, workers):
    from scenarios.check_cli import check_main

    args = ["--messages", "1", "--crashes", "0", "--json", "--no-progress", "--workers", str(workers)]
    assert check_main(args + (["--sweep"] if sweep else [])) == 0
    (tmp_path / "check.json").write_text(capsys.readouterr().out, encoding="utf-8")
    write_report(str(tmp_path), str(tmp_path / "report.html"))
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert ("explored in sweep-line order" in html) == sweep
    assert ("explored breadth-first" in html) != sweep
    assert ("by 2 processes and every property" in html) == (workers == 2)
    assert "sittings" not in html


def test_a_check_report_says_a_search_took_several_sittings(tmp_path, capsys):
    from scenarios.check_cli import check_main

    args = ["--messages", "1", "--crashes", "1", "--json", "--no-progress", "--sweep", "--checkpoint",
            str(tmp_path / "ck"), "--checkpoint-every", "0"]
    assert check_main([*args, "--max-states", "1"]) == 2
    capsys.readouterr()
    assert check_main(args) == 0
    (tmp_path / "check.json").write_text(capsys.readouterr().out, encoding="utf-8")
    write_report(str(tmp_path), str(tmp_path / "report.html"))
    assert "in 2 sittings (resumed from checkpoints)" in (tmp_path / "report.html").read_text(encoding="utf-8")
