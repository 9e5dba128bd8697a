"""Same scenario + seed + options -> byte-identical history, in any process and PYTHONHASHSEED."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from scenarios.catalogue import load_builtin
from sim.run import run_scenario

from ..shared_runs import builtin_run

SCENARIO = "crash-before-delay-offset-flush"

_CHILD = """
import sys
from scenarios.catalogue import load_builtin
from sim.run import run_scenario
print(run_scenario(load_builtin(sys.argv[1]), int(sys.argv[2])).summary["history_sha256"])
"""


def _hash_in_subprocess(seed: int, hashseed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    out = subprocess.run([sys.executable, "-c", _CHILD, SCENARIO, str(seed)], capture_output=True, text=True,
                         check=True, env=env)
    return out.stdout.strip()


def test_same_inputs_same_history_in_process_and_across_processes_and_hash_seeds():
    first = builtin_run(SCENARIO, 1)  # made earlier in this process (by the modules that share it) or just now
    second = run_scenario(load_builtin(SCENARIO), 1)
    assert first.history.to_jsonl() == second.history.to_jsonl()
    assert first.summary["history_sha256"] == second.summary["history_sha256"]
    assert _hash_in_subprocess(1, "0") == first.summary["history_sha256"]
    assert _hash_in_subprocess(1, "12345") == first.summary["history_sha256"]


def test_different_seeds_give_different_histories():
    other = run_scenario(load_builtin(SCENARIO), 2).summary["history_sha256"]
    assert builtin_run(SCENARIO, 1).summary["history_sha256"] != other


def test_history_lines_are_ordered_json_with_seq_and_time():
    result = builtin_run("retry-ladder-to-dlq")
    events = [json.loads(line) for line in result.history.lines()]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert all(a["t_ms"] <= b["t_ms"] for a, b in zip(events, events[1:], strict=False))
