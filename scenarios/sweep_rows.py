"""One sweep row: run one planned (parameters, seed) and return one flat dict. Pure: no file, no Spark.

A run that raises is a row with its ``error``, never a failed sweep. Besides the run's statistics a row
carries ``groups``: one entry per consumer group (a long table nested in the row) with the counts the
per-group metrics of ``reports/sweep_metrics.py`` are made of, so rates are per group, never summed
over groups.
"""

from __future__ import annotations

import os
import time
import traceback

from model.invariants import groups_from_history
from model.stats import CONSUME_SUCCESS, pending_messages, percentile, time_to_dlq_ms

from .scenario import scenario_from_dict

# The invariant names (DESIGN.md); each becomes a boolean column ``ok_<name>``. A checker that
# reports further invariants still lists them in ``violated``.
try:
    from model.invariants import CHECKS as _CHECKS

    INVARIANTS = tuple(_CHECKS)
except ImportError:  # pragma: no cover - the checker is part of the project
    INVARIANTS = ("no_loss", "at_least_once_redelivery", "no_early_delivery", "per_level_order",
                  "dlq_after_max_retries", "retry_schedule", "bounded_lateness", "duplicates")
MAX_DLQ_SAMPLES = 2000  # time-to-DLQ values kept per run
SPARK_TASK_FAILED = "SparkTaskFailed"  # a row whose Spark task died (not a Python exception); recomputed on resume
# The fields of one ``groups`` entry (all counts of distinct messages unless said otherwise).
GROUP_FIELDS = ("expected", "consumed", "dlq", "lost", "pending", "duplicates", "attempts", "time_to_dlq_mean_ms")

__all__ = ["GROUP_FIELDS", "INVARIANTS", "MAX_DLQ_SAMPLES", "SPARK_TASK_FAILED", "describe_error",
           "group_counts", "percentile", "run_task", "time_to_dlq_ms"]


def group_counts(events: list[dict], end_ms: int | None, timer_precision_ms: int = 1000,
                 era: str | None = None) -> list[dict]:
    """Per consumer group (in order of first start): the messages its subscription takes (``expected``), how
    many it consumed, dead-lettered, lost (neither, and not pending), left pending; its duplicate consumptions
    and consume attempts; the mean time to its DLQ copies. A broadcasting group counts a message done when
    any instance consumed it."""
    groups: dict[str, list] = {}
    for g in groups_from_history(events):
        groups.setdefault(g.group, []).append((g.topic, g.tags))
    sends = [e for e in events if e["kind"] == "send" and e["status"] == "SEND_OK"]
    not_due = pending_messages(events, end_ms, timer_precision_ms, era) if end_ms is not None else {}
    first_send: dict[str, int] = {}
    for e in sends:
        first_send.setdefault(e["msg_id"], e["t_ms"])
    out = []
    for group, subs in groups.items():
        expected = {e["msg_id"] for e in sends
                    if any(e["topic"] == topic and (tags is None or e.get("tags") in tags) for topic, tags in subs)}
        broadcast = _broadcasting(events, group)
        consumed, dlq, seen = set(), set(), set()
        duplicates = attempts = 0
        dlq_ms = []
        for e in events:
            if e.get("group") != group or e.get("msg_id") not in expected:
                continue
            if e["kind"] == "consume":
                attempts += 1
                if e["status"] == CONSUME_SUCCESS:
                    key = (e["client_id"], e["msg_id"]) if broadcast else e["msg_id"]
                    duplicates += key in seen
                    seen.add(key)
                    consumed.add(e["msg_id"])
            elif e["kind"] == "dlq":
                if e["msg_id"] not in dlq:
                    dlq_ms.append(e["t_ms"] - first_send[e["msg_id"]])
                dlq.add(e["msg_id"])
        done = consumed | dlq
        pending = {m for m in expected - done if m in not_due}
        out.append({"group": group, "expected": len(expected), "consumed": len(consumed), "dlq": len(dlq),
                    "lost": len(expected - done - pending), "pending": len(pending), "duplicates": duplicates,
                    "attempts": attempts,
                    "time_to_dlq_mean_ms": round(sum(dlq_ms) / len(dlq_ms)) if dlq_ms else None})
    return out


def _broadcasting(events: list[dict], group: str) -> bool:
    return any(e["kind"] == "consumer_start" and e["group"] == group and e["model"] == "BROADCASTING"
               for e in events)


def _default_checker():
    from sim.checking import check_run

    return check_run


def describe_error(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        where = f" (at {os.path.basename(last.filename)}:{last.lineno} in {last.name})"
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}{where}"[:500]


def run_task(task: dict, check=None) -> dict:
    """Run one (parameters, seed); never raises: an exception becomes the row's ``error``."""
    start = time.perf_counter()  # wall-clock ok: measured, never part of a history
    row = {"cell": task["cell"], "cell_id": task["cell_id"], "seed": task["seed"], **task["params"],
           "repro": task["repro"], "error": None, "checked": False, "holds": None, "violated": [],
           "first_violation": None, **{f"ok_{name}": None for name in INVARIANTS}}
    try:
        from sim.run import run_scenario, simulator_error_line

        scenario = scenario_from_dict(task["doc"], task["source"])
        checker = check if check is not None else _default_checker()
        result = run_scenario(scenario, task["seed"], mutants=task["mutants"], check=checker,
                              scenario_arg=task["source"])
        summary = result.summary
        if summary.get("simulator_error") is not None:  # the run stopped on a bug: the row's error says where
            row.update({"error": simulator_error_line(summary)[:500], "history_sha256": summary["history_sha256"],
                        "wall_s": round(time.perf_counter() - start, 4)})  # wall-clock ok
            return row
        invariants = summary["invariants"] or {}
        violated = sorted(name for name, v in invariants.items() if not v["holds"])
        first = None
        for name in violated:
            for violation in invariants[name]["violations"][:1]:
                first = f"{name}: {violation.get('msg_id')}: {violation.get('explanation')}"[:400]
                break
            if first:
                break
        stats = summary["stats"]
        late = stats.get("lateness_ms", {})
        dlq_times = time_to_dlq_ms(result.history.events)  # the same definition as summary.json's stats
        row.update({
            "era": summary["era"], "mutants": "+".join(summary["mutants"]), "virtual_ms": summary["virtual_ms"],
            "events": summary["events"], "history_sha256": summary["history_sha256"],
            "checked": bool(invariants), "holds": (not violated) if invariants else None,
            "violated": violated, "first_violation": first,
            **{f"ok_{name}": invariants[name]["holds"] if name in invariants else None for name in INVARIANTS},
            "sent": stats.get("sent"), "consumed": stats.get("consumed"),
            "failed_attempts": stats.get("failed_attempts"), "duplicates": stats.get("duplicates"),
            "dlq": stats.get("dlq"), "crashes": stats.get("crashes"), "faults": stats.get("faults"),
            "delivered_from_schedule": stats.get("delivered_from_schedule"),
            "lateness_p50_ms": late.get("p50"), "lateness_p99_ms": late.get("p99"), "lateness_max_ms": late.get("max"),
            "time_to_dlq_ms": dlq_times[:MAX_DLQ_SAMPLES],
            "time_to_dlq_p50_ms": percentile(dlq_times, 0.5), "time_to_dlq_max_ms": max(dlq_times) if dlq_times else None,
            "probes_hit": sorted(summary.get("probes", {})),  # coverage probes (store/probes.py) this run reached
            "pending": stats.get("pending"),
            "unstored": stats.get("unstored"),  # PUT_OK, nothing stored: records larger than a commit-log file
            "groups": group_counts(result.history.events, result.world.end_mono_ms - result.world.start_mono_ms,
                                   result.world.store_config.timer_precision_ms, result.world.store_config.era),
        })
    except (Exception, SystemExit) as error:  # a run that raises is a row, never a failed sweep
        row["error"] = describe_error(error)
    row["wall_s"] = round(time.perf_counter() - start, 4)  # wall-clock ok
    return row

