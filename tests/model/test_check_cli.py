"""``rmqsim check``: exit codes 0/1/2, text and JSON output, GraphML and the PNG picture."""

from __future__ import annotations

import json
import subprocess
import sys

import networkx as nx
import pytest

from scenarios.check_cli import check_main

SMALL = ["--messages", "1", "--levels", "1", "--max-retries", "0", "--crashes", "0", "--put-failures", "1",
         "--persist-points", "0"]


def test_clean_check_exits_0_and_says_ok(capsys):
    assert check_main(SMALL) == 0
    out = capsys.readouterr().out
    assert "OK: " in out and "no_loss" in out and "liveness" in out
    assert "states/s" in out


def test_a_mutant_exits_1_with_a_numbered_trace(capsys):
    assert check_main(SMALL + ["--mutant", "skip_failed_delivery"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATION of delay_offset_covers_delivered" in out
    assert "  1. send msg=m0 level=1" in out
    assert "  3. fault site=schedule.deliver_put level=1 msg=m0" in out
    assert "as a history (model/render.py): flagged by no_loss" in out and "DISAGREE" not in out


def test_bad_input_exits_2_with_one_line_and_no_traceback(capsys):
    for argv in (["--messages", "0"], ["--mutant", "no_such_bug"], ["--levels", "x"], ["--bogus"],
                 ["--mutant", "timer_read_time_early"], ["--send-levels", "1,9"], ["--crash-kinds", "reboot"],
                 ["--graph", "/no/such/dir/g.graphml"], ["--max-states", "0"]):
        assert check_main(SMALL + argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("rmqsim check: "), (argv, err)
        assert "Traceback" not in err


def test_a_limit_before_the_end_exits_2(capsys):
    argv = ["--messages", "2", "--levels", "2", "--crashes", "1", "--max-states", "3000"]
    assert check_main(argv) == 2
    captured = capsys.readouterr()
    assert "state limit reached" in captured.err and captured.err.count("\n") == 1


def test_json_document(capsys):
    assert check_main(SMALL + ["--mutant", "dlq_threshold_gt", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "violation" and doc["config"]["mutants"] == ["dlq_threshold_gt"]
    assert doc["violation"]["property"] == "reconsume_times_bounded"
    steps = doc["violation"]["trace"]
    assert [s["step"] for s in steps] == list(range(1, len(steps) + 1))
    assert steps[0] == {"step": 1, "verb": "send", "msg": "m0", "level": 1,
                        "store": ["SCHEDULE_TOPIC_XXXX:0@0"], "state": steps[0]["state"]}
    assert doc["stats"]["states"] > 0 and doc["stats"]["symmetry"] is True
    assert doc["history_cross_check"] == {"flagged_by": ["dlq_after_max_retries"], "oracles_agree": True}
    assert 0 <= doc["stats"]["fingerprint_collision_probability"] < 1e-9


def test_compare_symmetry_reports_the_factor(capsys):
    argv = ["--messages", "3", "--levels", "1", "--max-retries", "0", "--crashes", "0", "--put-failures", "0",
            "--persist-points", "0", "--compare-symmetry", "--json"]
    assert check_main(argv) == 0
    red = json.loads(capsys.readouterr().out)["symmetry_reduction"]
    assert red["states_without"] > red["states_with"] and red["factor"] > 1.5 and red["same_verdict"]


def test_graph_writes_graphml_and_a_png_with_the_path(tmp_path, capsys):
    path = tmp_path / "g.graphml"
    assert check_main(SMALL + ["--mutant", "skip_failed_delivery", "--graph", str(path)]) == 1
    out = capsys.readouterr().out
    g = nx.read_graphml(path)
    assert g.number_of_nodes() > 3
    on_path = [n for n, d in g.nodes(data=True) if d["on_path"]]
    assert len(on_path) == 4  # initial state + 3 actions
    assert sum(1 for _, _, d in g.edges(data=True) if d["on_path"]) == 3
    assert [n for n, d in g.nodes(data=True) if d["violation"]]
    png = tmp_path / "g.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert f"wrote {png}" in out


def test_no_png_for_a_big_graph(tmp_path, capsys):
    path = tmp_path / "big.graphml"
    argv = ["--messages", "2", "--levels", "1", "--max-retries", "1", "--crashes", "0", "--put-failures", "1",
            "--persist-points", "0", "--graph", str(path)]  # 752 states
    assert check_main(argv) == 0
    g = nx.read_graphml(path)
    assert g.number_of_nodes() > 300
    assert not (tmp_path / "big.png").exists()


def test_rmqsim_check_subcommand_runs_in_a_fresh_process():
    out = subprocess.run([sys.executable, "-m", "scenarios.cli", "check"] + SMALL, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "OK: " in out.stdout
    bad = subprocess.run([sys.executable, "-m", "scenarios.cli", "check", "--messages", "-1"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


def test_a_graph_over_the_limit_is_refused_unless_forced(tmp_path, capsys, monkeypatch):
    import scenarios.check_cli as check_cli

    monkeypatch.setattr(check_cli, "GRAPH_MAX_STATES", 300)
    path = tmp_path / "big.graphml"
    argv = ["--messages", "2", "--levels", "1", "--max-retries", "1", "--crashes", "0", "--put-failures", "1",
            "--persist-points", "0", "--graph", str(path)]  # 752 states
    assert check_main(argv) == 2
    captured = capsys.readouterr()
    assert "OK: " in captured.out  # the verdict is still printed
    assert "--force-graph" in captured.err and captured.err.count("\n") == 1 and not path.exists()
    assert check_main(argv + ["--force-graph"]) == 0
    assert nx.read_graphml(path).number_of_nodes() == 752


@pytest.mark.slow  # two whole checks (seconds); tests/model/test_reductions.py compares the two modes by default
def test_no_tick_collapse_explores_more_states_with_the_same_verdict(capsys):
    argv = ["--messages", "1", "--levels", "2", "--crashes", "1", "--put-failures", "0", "--json", "--no-progress"]
    assert check_main(argv) == 0
    collapsed = json.loads(capsys.readouterr().out)
    assert check_main(argv + ["--no-tick-collapse"]) == 0
    ticking = json.loads(capsys.readouterr().out)
    assert collapsed["verdict"] == ticking["verdict"] == "ok"
    assert collapsed["stats"]["acyclic"] and ticking["stats"]["acyclic"]
    assert collapsed["stats"]["states"] < ticking["stats"]["states"]
