"""The rmqsim command line: outputs, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from scenarios.cli import main


def test_run_writes_summary_history_and_store_then_replay_verifies(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "retry-ladder-to-dlq", "--seed", "2", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    for key in ("scenario", "seed", "era", "mutants", "virtual_ms", "wall_s", "events", "history_sha256",
                "invariants", "stats", "repro"):
        assert key in summary
    assert summary["seed"] == 2 and summary["repro"] == "rmqsim run retry-ladder-to-dlq --seed 2"
    lines = (out / "history.jsonl").read_text().splitlines()
    assert len(lines) == summary["events"]
    assert os.path.isdir(out / "store" / "commitlog") and os.path.isfile(out / "store" / "config" / "topics.json")
    capsys.readouterr()
    assert main(["replay", str(out)]) == 0
    assert "identical history" in capsys.readouterr().out
    summary["history_sha256"] = "0" * 64
    (out / "summary.json").write_text(json.dumps(summary))
    assert main(["replay", str(out)]) == 1
    assert main(["inspect", str(out / "store"), "--json", "--max-entries", "3"]) == 0
    doc = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert doc["commitlog"]["record_count"] >= 18 and len(doc["commitlog"]["records"]) == 3


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nduration = "soon"\n')
    assert main(["run", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(bad) in err[0] and "'duration'" in err[0]
    assert main(["run", "retry-ladder-to-dlq", "--mutant", "no_such_bug"]) == 2
    assert "unknown mutant 'no_such_bug'" in capsys.readouterr().err
    assert main(["replay", str(tmp_path)]) == 2
    assert main(["inspect", str(tmp_path / "missing")]) == 2
    assert main(["frobnicate"]) == 2


def test_scenarios_lists_the_catalogue(capsys):
    assert main(["scenarios"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) >= 12 and any(line.startswith("retry-ladder-to-dlq") for line in lines)


def test_console_script_entry_point():
    exe = os.path.join(os.path.dirname(sys.executable), "rmqsim")
    proc = subprocess.run([exe, "scenarios"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "one-message-per-level" in proc.stdout
