"""Reports: every plot function writes a plausible PNG, the HTML page embeds them, ``rmqsim report``
exit codes, and the layering (matplotlib only in reports/, pyspark only in scenarios/sweep_spark.py)."""

from __future__ import annotations

import base64
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
               "seed": seed, **{spec.columns[k]: sw.format_value(v) for k, v in params.items()},
               "era": params["broker.era"], "mutants": "", "error": None, "checked": checked,
               "holds": holds if checked else None, "violated": [] if holds or not checked else ["no_loss"],
               "sent": 600, "consumed": 600, "duplicates": rng.randint(0, 3 * interval),
               "dlq": rng.randint(0, 3) if dlq else 0, "lateness_p99_ms": rng.randint(90, 400 * interval),
               "lateness_max_ms": 500 * interval,
               "time_to_dlq_ms": [rng.randint(40_000, 90_000) for _ in range(2)] if dlq else [],
               "wall_s": 0.2, "repro": f"rmqsim run x.toml --seed {seed}"}
        rows.append(row)
    rows[3]["error"] = "RuntimeError: boom (at x.py:1 in f)"
    sw.write_part(out, sw.rows_to_table(rows, [spec.columns[k] for k in spec.keys]))
    with open(os.path.join(out, "sweep.json"), "w") as f:
        json.dump({**spec.metadata(), "complete": True, "last_invocation": {"master": "local[2]"}}, f)
    return out


def test_sweep_plots_write_plausible_pngs(tmp_path):
    data = load_sweep(synthetic_sweep(str(tmp_path / "sweep")))
    assert len(data.runs) == 3 * 2 * 2 * 6 and data.checked
    assert sweep_plots.heatmap_layout(data) == ("broker.flush_delay_offset_interval", "mutant", "broker.era")
    for name in ("heatmap", "curves", "time_to_dlq", "eras"):
        path = getattr(sweep_plots, f"plot_{name}")(data, str(tmp_path / f"{name}.png"))
        assert path is not None, name
        assert_plausible_png(path)
    # the summaries behind the plots: Wilson intervals and per-cell counts
    table = summarize(data, ["broker.era", "mutant"])
    row = table[(table["broker.era"] == "4.9.8") & (table["mutant"] == "none")].iloc[0]
    assert row["violations"] == 0 and row["checked"] == 18 and row["rate_hi"] == pytest.approx(wilson(0, 18)[2])
    p, lo, hi = wilson(2, 4)
    assert (p, round(lo, 6), round(hi, 6)) == (0.5, 0.150039, 0.849961)


def test_sweep_plots_say_nothing_when_there_is_nothing_to_show(tmp_path):
    data = load_sweep(synthetic_sweep(str(tmp_path / "sweep"), checked=False, dlq=False))
    assert sweep_plots.plot_heatmap(data, str(tmp_path / "h.png")) is None
    assert sweep_plots.plot_time_to_dlq(data, str(tmp_path / "d.png")) is None
    assert not os.path.exists(tmp_path / "h.png") and not os.path.exists(tmp_path / "d.png")
    assert sweep_plots.plot_curves(data, str(tmp_path / "c.png")) is not None


def _embedded_pngs(html: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)]


def test_run_report_is_one_self_contained_page(run_dir, tmp_path):
    page = write_report(run_dir, str(tmp_path / "run.html"))
    assert page.kind == "run" and page.plots == 2
    html = open(page.path).read()
    images = _embedded_pngs(html)
    assert len(images) == 2 and all(img.startswith(b"\x89PNG") and len(img) > 15_000 for img in images)
    assert "<b>Timeline.</b>" in html and "<b>Delivery lateness per level.</b>" in html
    assert "report-sample" in html and "rmqsim run" in html
    assert not re.search(r'src="(?!data:)', html), "every image must be embedded"


def test_sweep_report_embeds_every_plot_and_lists_failing_runs(tmp_path):
    out = synthetic_sweep(str(tmp_path / "sweep"))
    page = write_report(out)
    assert page.kind == "sweep" and page.plots == 4 and page.path == os.path.join(out, "report.html")
    html = open(page.path).read()
    assert len(_embedded_pngs(html)) == 4
    for text in ("<b>Heatmap.</b>", "<b>Curves.</b>", "<b>Time to DLQ.</b>", "<b>Eras.</b>", "Failing runs",
                 "RuntimeError: boom"):
        assert text in html, text
    assert page.violated and "runs" in page.violated[0]


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


def test_report_command_exit_codes(run_dir, tmp_path, capsys):
    good = _copy_run(run_dir, tmp_path / "good-run", holds=True)
    assert main(["report", good, "--out", str(tmp_path / "ok.html")]) == 0
    assert "run report: 2 plots" in capsys.readouterr().out
    # a run with a violated invariant: the page is written, the exit code says so
    bad = _copy_run(run_dir, tmp_path / "bad-run", holds=False)
    assert main(["report", bad]) == 1
    assert "lost on purpose" in open(os.path.join(bad, "report.html")).read()
    assert main(["report", synthetic_sweep(str(tmp_path / "sweep"))]) == 1
    capsys.readouterr()
    for argv in (["report", str(tmp_path / "missing")], ["report", str(tmp_path / "sweep" / "runs")],
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
