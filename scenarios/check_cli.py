"""``rmqsim check``: the exhaustive model check from the command line (the checker is model/checker.py).

Exit codes as every rmqsim command: 0 every property holds on the whole (bounded) state space;
1 a property is violated (the shortest trace is printed); 2 bad input, the exploration hit a limit
before it finished, or a ``--graph`` too big to write without ``--force-graph`` (one line on stderr,
no traceback). It lives here, not in model/, because drawing the graph needs reports/ (matplotlib).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

from model.checker import CheckResult, check, format_stats
from model.checkpoint import MANIFEST, CheckpointError
from model.graph_io import png_path_for, write_graphml
from model.properties import PROPERTY_NAMES
from model.spec import CRASH_KINDS, ERA_5, ERAS, MUTANTS, ModelConfig, ModelConfigError

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT = 0, 1, 2
PNG_MAX_STATES = 300
GRAPH_MAX_STATES = 100_000  # a bigger GraphML file needs --force-graph (it keeps every state in memory)


class BadInput(Exception):
    """Printed as one line; exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print usage and exit; we want one line
        raise BadInput(message)


def _int_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, not {text!r}") from None


def _failures(text: str) -> int | None:
    if text.lower() in ("inf", "unbounded"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count or 'inf', not {text!r}") from None


def _kinds(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def build_parser(prog: str = "rmqsim check") -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description="Exhaustive model check of the abstract delay/retry/offset protocol.",
                epilog=f"mutants: {', '.join(sorted(MUTANTS))}")
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--messages", type=int, default=1, metavar="N", help="messages the producer sends (1)")
    p.add_argument("--levels", type=int, default=2, metavar="L", help="delay levels; level l waits l ticks (2)")
    p.add_argument("--max-retries", type=int, default=1, metavar="R", help="maxReconsumeTimes (1)")
    p.add_argument("--crashes", type=int, default=1, metavar="C", help="broker crashes allowed (1)")
    p.add_argument("--put-failures", type=_failures, default=1, metavar="F",
                   help="put failures allowed (sends, deliveries, send-backs), or 'inf' (1)")
    p.add_argument("--persist-points", type=int, default=1, metavar="P",
                   help="persists of delayOffset.json / consumerOffset.json allowed, besides shutdowns (1)")
    p.add_argument("--send-levels", type=_int_list, default=(), metavar="L1,L2,...",
                   help="the delay level of each message, 0 = none (default: 1, 2, ..., cycling)")
    p.add_argument("--crash-kinds", type=_kinds, default=CRASH_KINDS, metavar="KINDS",
                   help="process (kill -9) and/or graceful (default: both)")
    p.add_argument("--era", choices=ERAS, default=ERA_5,
                   help="RocketMQ behaviour: 5.3.3, or 4.9.8 (adds rebuild errors as faults) (5.3.3)")
    p.add_argument("--mutant", action="append", default=[], metavar="NAME", help="put back a historical bug")
    p.add_argument("--no-symmetry", action="store_true", help="do not merge states that rename messages")
    p.add_argument("--no-tick-collapse", action="store_true",
                   help="let time pass one tick at a time (default: jump to the next instant a unit becomes due, "
                        "on searches whose graph is proven acyclic)")
    p.add_argument("--por", action="store_true",
                   help="partial-order reduction (model/por.py) on searches whose graph is proven acyclic: 2-12%% "
                        "fewer states on the small configurations for about 8%% more time per state, so off by default")
    p.add_argument("--no-compact", action="store_true",
                   help="keep the queues' processed prefixes once no crash can come (default: drop them, "
                        "model/retire.py, on searches whose graph is proven acyclic)")
    p.add_argument("--no-retire", action="store_true",
                   help="keep the persisted offsets and the persist budget once no crash can come (default: forget "
                        "them, model/retire.py, on searches whose graph is proven acyclic); implies --no-compact")
    p.add_argument("--compare-symmetry", action="store_true",
                   help="also explore without symmetry reduction and report the reduction factor")
    p.add_argument("--max-states", type=int, default=200_000_000, metavar="N", help="stop after N states")
    p.add_argument("--memory-mb", type=float, default=2048, metavar="M", help="stop above M MiB resident")
    p.add_argument("--max-seconds", type=float, default=None, metavar="S", help="stop after S seconds")
    p.add_argument("--graph", default=None, metavar="FILE",
                   help=f"write the state graph as GraphML (and FILE.png when <= {PNG_MAX_STATES} states); "
                        f"refused above {GRAPH_MAX_STATES} states unless --force-graph")
    p.add_argument("--force-graph", action="store_true",
                   help="write --graph whatever its size (every state is kept in memory)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="expand each BFS level in N processes (model/parallel.py; same result as 1), or with --sweep "
                        "run the sweep on N peer processes (model/sweep_workers.py); only on searches whose graph is "
                        "proven acyclic: not with --graph or --put-failures inf (1)")
    p.add_argument("--sweep", action="store_true",
                   help="explore in sweep-line order (model/sweep.py): fingerprints of the progress layer being "
                        "expanded only, the rest and the parent pointers on disk; same states, edges and verdicts, a "
                        "counterexample not always the shortest; not with --graph or --put-failures inf")
    p.add_argument("--checkpoint", default=None, metavar="DIR",
                   help="with --sweep: keep the search's files in DIR and record a checkpoint there at the end of a "
                        "layer; the same command run again resumes from it (after a limit, a kill or a power loss), "
                        "with the same states, ids and verdict; DIR is removed once the search has a verdict")
    p.add_argument("--checkpoint-every", type=float, default=60.0, metavar="S",
                   help="with --checkpoint: record one at the first layer's end S seconds after the last (60)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def config_from_args(args: argparse.Namespace) -> ModelConfig:
    cfg = ModelConfig(messages=args.messages, levels=args.levels, max_retries=args.max_retries,
                      crashes=args.crashes, put_failures=args.put_failures, persist_points=args.persist_points,
                      send_levels=args.send_levels, crash_kinds=args.crash_kinds, mutants=frozenset(args.mutant),
                      era=args.era)
    return cfg.validate()


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``check`` command (also the entry of ``scenarios/cli.py``)."""
    try:
        cfg = config_from_args(args)
    except ModelConfigError as error:
        raise BadInput(str(error)) from None
    for name, value in (("--max-states", args.max_states), ("--memory-mb", args.memory_mb),
                        ("--workers", args.workers)):
        if value is not None and value <= 0:
            raise BadInput(f"{name} must be positive")
    if args.graph:
        folder = os.path.dirname(os.path.abspath(args.graph))
        if not os.path.isdir(folder):
            raise BadInput(f"--graph {args.graph}: directory {folder} does not exist")
    limits = dict(max_states=args.max_states, memory_mb=args.memory_mb, max_seconds=args.max_seconds)
    after = PNG_MAX_STATES if args.graph else 0  # a picture shows the counterexample's surroundings
    keep = dict(keep_states=bool(args.graph), keep_states_until=None if args.force_graph else GRAPH_MAX_STATES)
    if args.workers > 1 and args.graph:
        raise BadInput("--workers runs only searches without edges or states: not with --graph")
    if args.workers > 1 and cfg.put_failures is None:
        raise BadInput("--workers runs only searches whose graph is proven acyclic: not with --put-failures inf "
                       "(it needs the edge store and the SCC search)")
    if args.sweep and (args.graph or cfg.put_failures is None):
        raise BadInput("--sweep runs only searches without edges or states, whose graph is proven acyclic: not with "
                       "--graph or --put-failures inf")
    if args.checkpoint is not None and not args.sweep:
        raise BadInput("--checkpoint is kept by the sweep-line search only: add --sweep")
    if args.checkpoint is not None and args.compare_symmetry:
        raise BadInput("--checkpoint resumes one search: not with --compare-symmetry (two searches)")
    if args.checkpoint_every < 0:
        raise BadInput("--checkpoint-every must not be negative")
    limits["workers"] = args.workers
    limits["sweep"] = args.sweep
    with _progress_bar(not args.no_progress) as (progress, say):
        try:
            result = check(cfg, symmetry=not args.no_symmetry, progress=progress, explore_after_violation=after,
                           collapse_ticks=not args.no_tick_collapse, por=args.por, **_retire_options(args), **keep,
                           checkpoint=args.checkpoint, checkpoint_every_s=args.checkpoint_every,
                           on_resume=lambda where: say(f"rmqsim check: resuming from the checkpoint in "
                                                       f"{args.checkpoint}: {where}"), **limits)
        except CheckpointError as error:
            raise BadInput(str(error)) from None
    if not args.sweep:
        _say_if_serial(args.workers, result)
    _say_if_not_swept(args.sweep, result)
    other: CheckResult | None = None
    if args.compare_symmetry:
        with _progress_bar(not args.no_progress) as (progress, _say):
            other = check(cfg, symmetry=args.no_symmetry, progress=progress,
                          collapse_ticks=not args.no_tick_collapse, por=args.por, **_retire_options(args), **limits)
        _say_if_serial(args.workers, other)
    files: list[str] = []
    refused = bool(args.graph) and not result.graph.keep_states
    if args.graph and not refused:
        try:
            write_graphml(result, args.graph)
            files.append(args.graph)
            early = result.violation is not None and result.violation.state_id < PNG_MAX_STATES
            if result.states <= PNG_MAX_STATES or early:  # early: cut just past the limit for the picture
                from reports.state_graph import draw_result

                png = png_path_for(args.graph)
                draw_result(result, png)
                files.append(png)
        except OSError as error:
            raise BadInput(f"--graph {args.graph}: {error.strerror or error}") from None
    if args.json:
        json.dump(_document(result, other, files), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        _print_text(result, other, files)
    if refused:
        print(f"rmqsim check: --graph {args.graph} not written: {result.states} states exceed the limit of "
              f"{GRAPH_MAX_STATES} (add --force-graph to write it anyway)", file=sys.stderr)
        return EXIT_BAD_INPUT
    if result.violation is not None:
        return EXIT_VIOLATION
    if not result.complete:
        print(f"rmqsim check: {result.stop} reached after {result.states} states and no violation so far; "
              f"the check is incomplete ({_how_to_go_on(result)})", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


def _how_to_go_on(result: CheckResult) -> str:
    if result.checkpoint is None:
        return "raise the limit or shrink the bounds"
    if not os.path.isfile(os.path.join(result.checkpoint, MANIFEST)):
        return (f"no checkpoint recorded in {result.checkpoint} yet: the first comes at the end of a layer "
                f"--checkpoint-every seconds after the start, so the same command would start again")
    return (f"run the same command again to resume from the last checkpoint in {result.checkpoint}; work since it is "
            f"done again")


def _say_if_serial(workers: int, result: CheckResult) -> None:
    """--workers asked for, but an edge did not lower the progress rank: the search restarted serially."""
    if workers > 1 and result.workers == 1:
        print(f"rmqsim check: --workers {workers} not used: an edge did not lower the progress rank, so the graph "
              f"may have cycles and the search ran again in one process with the edge store", file=sys.stderr)


def _say_if_not_swept(sweep: bool, result: CheckResult) -> None:
    """--sweep asked for, but an edge raised the sweep key or did not lower the rank: the search ran as BFS."""
    if sweep and not result.sweep_layers:
        print("rmqsim check: --sweep not used: an edge did not lower the sweep key or the progress rank, so the "
              "search ran again breadth-first, in one process", file=sys.stderr)


def _retire_options(args: argparse.Namespace) -> dict:
    """model/retire.py's two switches (compacting the queues needs the persisted offsets forgotten)."""
    return {"retire": not args.no_retire, "compact": not (args.no_retire or args.no_compact)}


@contextlib.contextmanager
def _progress_bar(enabled: bool):
    """A bar of explored states on stderr (scenarios/progress.py: periodic lines when not a terminal), and how to
    say a line on stderr beside it: (update or None, say)."""

    def say(text: str) -> None:
        print(text, file=sys.stderr)

    if not enabled:
        yield None, say
        return
    from .progress import progress_bar

    bar = progress_bar(desc="model check", unit=" states")

    def update(states: int, depth: int, frontier: int) -> None:
        bar.n = states
        bar.set_postfix_str(f"depth={depth}, frontier={frontier}")
        bar.refresh()

    def say_beside_the_bar(text: str) -> None:
        write = getattr(bar, "write", None)  # tqdm's: clears the bar, prints the line, draws the bar again
        if write is None:
            say(text)
        else:
            write(text, file=sys.stderr)

    try:
        yield update, say_beside_the_bar
    finally:
        bar.close()


def _reduction(result: CheckResult, other: CheckResult | None) -> dict | None:
    if other is None:
        return None
    with_sym, without = (result, other) if result.symmetry else (other, result)
    factor = without.states / with_sym.states if with_sym.states else 0.0
    return {"states_with": with_sym.states, "states_without": without.states, "factor": round(factor, 3),
            "same_verdict": with_sym.verdict() == without.verdict(),
            "complete": with_sym.complete and without.complete}


def _as_history(result: CheckResult) -> tuple[list[str], bool]:
    """The counterexample judged by the history invariants too (the second oracle)."""
    from model.render import cross_check

    return cross_check(result.violation, result.config)


def _document(result: CheckResult, other: CheckResult | None, files: list[str]) -> dict:
    history = None
    if result.violation is not None:
        flagged, agreed = _as_history(result)
        history = {"flagged_by": flagged, "oracles_agree": agreed}
    return {"history_cross_check": history, "config": result.config.as_dict(), "verdict": result.verdict(), "stats": result.stats(),
            "properties": list(PROPERTY_NAMES),
            "violation": result.violation.as_dict() if result.violation is not None else None,
            "symmetry_reduction": _reduction(result, other), "files": files}


def _print_text(result: CheckResult, other: CheckResult | None, files: list[str]) -> None:
    print(format_stats(result))
    red = _reduction(result, other)
    if red is not None:
        print(f"  symmetry reduction: {red['states_without']} states without, {red['states_with']} with "
              f"(factor {red['factor']:.2f}{'' if red['complete'] else ', incomplete'}; "
              f"verdicts {'agree' if red['same_verdict'] else 'DIFFER'})")
    if result.violation is not None:
        print(result.violation.format())
        flagged, agreed = _as_history(result)
        print(f"  as a history (model/render.py): {'flagged by ' + ', '.join(flagged) if flagged else 'no history invariant flags it'}"
              f"{'' if agreed else ' (the two oracles DISAGREE: a bug in one of them)'}")
    elif result.complete:
        print(f"OK: {', '.join(PROPERTY_NAMES)} hold on all {result.states} states "
              f"(liveness under strong fairness of the system's actions)")
    per_layer = ""
    if result.sweep_layers:
        per_layer = f" (each look-up meets only its own layer: at most {result.sweep_peak_states} fingerprints)"
    print(f"  fingerprint collision probability: calculated (optimistic): {result.collision_probability:.1E}{per_layer}")
    for path in files:
        print(f"  wrote {path}")


def check_main(argv: list[str]) -> int:
    """``rmqsim check [options]``: returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
        return run(args)
    except BadInput as error:
        print(f"rmqsim check: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except SystemExit as exit_:  # --help
        return EXIT_OK if not exit_.code else EXIT_BAD_INPUT
    except BrokenPipeError:  # the reader went away (| head)
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(check_main(sys.argv[1:]))
