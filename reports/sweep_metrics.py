"""The what-if metrics a sweep's ``[report] metric = ...`` may ask for, declared once with their units.

Standard library only: the sweep grammar (``scenarios/sweep_spec.py``) validates names against this table,
the row runner fills the per-group counts it names, and ``reports/sweep_data.py`` estimates them.

A *rate* is a share of messages, estimated per consumer group as pooled counts over the seed replicates
(numerator / denominator summed over the runs of a parameter value) with a Wilson 95% interval. A *mean*
is one value per run (per group when ``per_group``), estimated as the mean over the seed replicates with a
normal 95% interval of the mean.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    kind: str            # "rate" (Wilson over pooled counts) or "mean" (mean of one value per run)
    per_group: bool      # read from the row's per-group ``groups`` column (else a run-level column)
    numerator: str       # a field of a ``groups`` entry (rate) or the value's field/column (mean)
    denominator: str     # a field of a ``groups`` entry (rate or per-message mean); "" for a plain value
    text: str            # what it measures, for the report and the README


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("dlq_rate", "share of messages", "rate", True, "dlq", "expected",
           "messages the group dead-lettered (%DLQ%group) / messages its subscription takes"),
    Metric("loss_rate", "share of messages", "rate", True, "lost", "expected",
           "messages the group neither consumed nor dead-lettered by the end of the drain, and not pending / "
           "messages its subscription takes (fault-excused losses included)"),
    Metric("pending_rate", "share of messages", "rate", True, "pending", "expected",
           "messages not yet due at the end of the drain / messages its subscription takes"),
    Metric("consumed_rate", "share of messages", "rate", True, "consumed", "expected",
           "messages the group consumed successfully at least once / messages its subscription takes"),
    Metric("duplicates_per_message", "duplicates per message", "mean", True, "duplicates", "expected",
           "successful consumptions beyond the first, per message the subscription takes (per run)"),
    Metric("attempts_per_message", "attempts per message", "mean", True, "attempts", "expected",
           "consume attempts (successful or not) per message the subscription takes (per run)"),
    Metric("pending", "messages per run", "mean", True, "pending", "",
           "messages of the group not yet due at the end of the drain (per run)"),
    Metric("time_to_dlq_ms", "ms (virtual)", "mean", True, "time_to_dlq_mean_ms", "",
           "mean time from a message's first send to its %DLQ% copy (per run; runs without a DLQ copy left out)"),
    Metric("p99_lateness_ms", "ms", "mean", False, "lateness_p99_ms", "",
           "99th percentile of delivery lateness of the run's scheduled messages (per run)"),
    Metric("violation_rate", "share of runs", "rate", False, "violations", "checked",
           "runs with at least one invariant violated / runs checked"),
)}

ALL_GROUPS = "(all)"  # the group label of a run-level metric


def metric_names() -> str:
    return ", ".join(METRICS)
