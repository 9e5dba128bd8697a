"""``rmqsim trace RUN_DIR [MSG_ID | --violations | --lost]``: a terminal journey of messages of a run."""

from __future__ import annotations

import argparse
import json
import os
import sys


class TraceInputError(Exception):
    """Bad input: the CLI prints it as one line and exits 2."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a directory written by rmqsim run --out")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("msg_id", nargs="?", metavar="MSG_ID", help="the message id (UNIQ_KEY) to follow")
    which.add_argument("--violations", action="store_true", help="every message an invariant violation names")
    which.add_argument("--lost", action="store_true", help="the messages of the no_loss violations")


def violating_messages(summary: dict, only: str | None = None) -> list[tuple[str, str, str]]:
    """(msg_id, invariant, explanation) for each violation naming a message, in summary order."""
    found = []
    for name, result in (summary.get("invariants") or {}).items():
        if only is not None and name != only:
            continue
        for violation in result.get("violations") or ():
            msg_id = violation.get("msg_id")
            if msg_id:
                found.append((msg_id, name, violation.get("explanation", "")))
    return found


def run_trace(args: argparse.Namespace, out=None) -> int:
    """0 when the traced messages are not named by any violation, 1 when some are."""
    out = out or sys.stdout
    from model.journey import journey, message_ids
    from reports.trace_text import render

    run_dir = args.run_dir
    summary_path = os.path.join(run_dir, "summary.json")
    history_path = os.path.join(run_dir, "history.jsonl")
    if not os.path.isdir(run_dir):
        raise TraceInputError(f"{run_dir}: not a directory")
    if not (os.path.isfile(summary_path) and os.path.isfile(history_path)):
        raise TraceInputError(f"{run_dir}: not a run directory (no summary.json and history.jsonl; "
                              f"write one with rmqsim run SCENARIO --out {run_dir})")
    try:
        with open(summary_path, encoding="utf-8") as f:
            summary = json.load(f)
        with open(history_path, encoding="utf-8") as f:
            events = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as error:
        raise TraceInputError(f"{run_dir}: cannot read the run: {error}") from None
    named = violating_messages(summary)
    if args.msg_id:
        wanted = args.msg_id.upper()
        if wanted not in set(message_ids(events)):
            raise TraceInputError(f"{run_dir}: no message {args.msg_id} in this run's history")
        targets = [(wanted, [f"{name}: {why}" for m, name, why in named if m == wanted])]
    else:
        chosen = violating_messages(summary, "no_loss" if args.lost else None)
        by_msg: dict[str, list[str]] = {}  # each message once, with every violation naming it
        for msg_id, name, why in chosen:
            by_msg.setdefault(msg_id, []).append(f"{name}: {why}")
        targets = list(by_msg.items())
        if not targets:
            what = "no_loss violation" if args.lost else "invariant violation naming a message"
            out.write(f"{run_dir}: no {what}; nothing to trace\n")
            return 0
    for i, (msg_id, whys) in enumerate(targets):
        if i:
            out.write("\n")
        out.write(render(msg_id, journey(events, msg_id), "; ".join(whys) or None))
    return 1 if any(whys for _, whys in targets) else 0
