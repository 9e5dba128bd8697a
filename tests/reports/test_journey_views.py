"""The journey in the run report, read back from the Axes drawn: violating lanes first and marked, hops
labelled with level and reconsumeTimes, a log axis for a retry ladder, no empty or unexplained plots."""

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from reports import run_plots  # noqa: E402
from reports.report import write_report  # noqa: E402
from scenarios.cli import main  # noqa: E402


def _load(run_dir):
    with open(run_dir / "summary.json") as f:
        summary = json.load(f)
    with open(run_dir / "history.jsonl") as f:
        events = [json.loads(line) for line in f]
    return summary, events


@pytest.fixture(scope="module")
def lost_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("views") / "lost"
    assert main(["run", "consumer-crash", "--mutant", "commit_max_offset", "--out", str(out)]) == 1
    return out


@pytest.fixture(scope="module")
def ladder_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("views") / "ladder"
    assert main(["run", "retry-ladder-to-dlq", "--out", str(out)]) == 0
    return out


def test_violating_messages_are_drawn_first_and_marked(lost_run):
    summary, events = _load(lost_run)
    lost = [v["msg_id"] for v in summary["invariants"]["no_loss"]["violations"]]
    assert len(lost) == 8
    fig, ax = plt.subplots()
    lanes = run_plots.plot_timeline(events, summary, ax=ax)
    assert [lane.msg_id for lane in lanes[:8]] == sorted(lost, key=[lane.msg_id for lane in lanes].index)
    assert {lane.msg_id for lane in lanes[:8]} == set(lost)
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert all(t.startswith("✗ ") for t in ticks[:8]) and not any(t.startswith("✗") for t in ticks[8:])
    marks = [t.get_text() for t in ax.texts if t.get_text().startswith("VIOLATES")]
    assert marks == ["VIOLATES no_loss"] * 8
    plt.close(fig)


def test_violating_messages_drawn_even_beyond_the_lane_limit(lost_run):
    summary, events = _load(lost_run)
    fig, ax = plt.subplots()
    lanes = run_plots.plot_timeline(events, summary, limit=3, ax=ax)
    lost = {v["msg_id"] for v in summary["invariants"]["no_loss"]["violations"]}
    assert lost <= {lane.msg_id for lane in lanes}
    plt.close(fig)


def test_retry_ladder_hops_are_labelled_on_a_log_axis(ladder_run):
    summary, events = _load(ladder_run)
    fig, ax = plt.subplots()
    run_plots.plot_timeline(events, summary, ax=ax)
    labels = [t.get_text() for t in ax.texts]
    assert labels[:3] == ["L3 r1", "L4 r2", "L5 r3"]
    assert "L18 r16" in labels and labels[-1] == "DLQ r17"
    assert ax.get_xscale() == "symlog"  # 10 s to 2 h of waits: a linear axis squeezes the first levels
    plt.close(fig)


def test_short_runs_keep_a_linear_axis(lost_run):
    summary, events = _load(lost_run)
    fig, ax = plt.subplots()
    run_plots.plot_timeline(events, summary, ax=ax)
    assert ax.get_xscale() == "linear"
    plt.close(fig)


def test_negative_lateness_is_explained(ladder_run):
    summary, events = _load(ladder_run)
    # every scheduled copy due a minute later than it was: each delivery (measured from its copy) comes early
    early = [dict(e, due_ms=e["due_ms"] + 60_000) if e["kind"] == "store" and "due_ms" in e else e for e in events]
    fig, ax = plt.subplots()
    run_plots.plot_lateness(early, summary, ax=ax)
    notes = [t.get_text() for t in ax.texts]
    assert any("BEFORE its due time" in n for n in notes)
    plt.close(fig)
    fig, ax = plt.subplots()
    run_plots.plot_lateness(events, summary, ax=ax)
    assert not any("negative" in t.get_text() for t in ax.texts)
    plt.close(fig)


def test_report_embeds_the_trace_of_each_violating_message(lost_run, tmp_path):
    summary, _ = _load(lost_run)
    page = write_report(str(lost_run), str(tmp_path / "r.html"))
    html = (tmp_path / "r.html").read_text()
    assert page.plots == 1  # the timeline; no empty lateness plot for a run without scheduled messages
    assert "No lateness plot" in html
    for violation in summary["invariants"]["no_loss"]["violations"]:
        msg_id = violation["msg_id"]
        assert f'href="#consumer-crash-seed1-trace-{msg_id}"' in html
        assert f'<details id="consumer-crash-seed1-trace-{msg_id}">' in html
    assert html.count("BEFORE it was consumed") == 8


def test_first_scheduled_copy_is_labelled_with_its_level(tmp_path):
    out = tmp_path / "levels"
    assert main(["run", "one-message-per-level", "--out", str(out)]) == 0
    summary, events = _load(out)
    fig, ax = plt.subplots()
    lanes = run_plots.plot_timeline(events, summary, ax=ax)
    labels = {t.get_text() for t in ax.texts}
    levels = {lane.delay_level for lane in lanes if lane.delay_level}
    assert levels and {f"L{level}" for level in levels} <= labels
    plt.close(fig)
