"""The ``rmqsim`` command line (DESIGN.md, "Command-line contract").

Exit codes: 0 all invariants hold; 1 an invariant was violated; 2 bad input or environment,
with a one-line reason and no traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_BAD_INPUT = 2


class UsageError(Exception):
    """Bad input or environment: printed as one line, exit code 2."""


def _cmd_inspect(args: argparse.Namespace) -> int:
    from store.inspect import format_inspection, inspect_store_dir

    if not os.path.isdir(args.store_dir):
        raise UsageError(f"{args.store_dir}: not a directory")
    doc = inspect_store_dir(args.store_dir, max_entries=args.max_entries)
    if args.json:
        json.dump(doc, sys.stdout, indent=1, sort_keys=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_inspection(doc))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rmqsim",
        description="Deterministic simulation and model checking of RocketMQ's store and scheduler.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("inspect", help="decode a RocketMQ store directory (real or simulated)")
    p.add_argument("store_dir", metavar="STORE_DIR")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    p.add_argument("--max-entries", type=int, default=None, metavar="N",
                   help="list at most N commit-log records and N units per queue (counts still cover all)")
    p.set_defaults(func=_cmd_inspect)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return EXIT_BAD_INPUT if exit_.code else EXIT_OK
    try:
        return args.func(args)
    except UsageError as error:
        print(f"rmqsim: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
