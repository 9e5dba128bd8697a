"""The ``rmqsim`` command line (DESIGN.md, "Command-line contract").

Exit codes: 0 all invariants hold; 1 an invariant was violated; 2 bad input or environment,
with a one-line reason and no traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_BAD_INPUT = 2


class UsageError(Exception):
    """Bad input or environment: printed as one line, exit code 2."""


def _cmd_inspect(args: argparse.Namespace) -> int:
    from scenarios.inspect_text import format_inspection
    from store.inspect import inspect_store_dir, is_store_dir

    if not os.path.isdir(args.store_dir):
        raise UsageError(f"{args.store_dir}: not a directory")
    if not is_store_dir(args.store_dir):
        raise UsageError(f"{args.store_dir}: not a RocketMQ store directory (no commitlog/, consumequeue/, config/, "
                         f"checkpoint, timerlog/ or timerwheel in it)")
    if args.max_entries is not None and args.max_entries < 0:
        raise UsageError(f"--max-entries must be 0 or more; got {args.max_entries}")
    if args.key is not None:
        return _cmd_inspect_key(args)
    try:
        doc = inspect_store_dir(args.store_dir, max_entries=args.max_entries)
    except OSError as error:
        raise UsageError(f"{args.store_dir}: cannot read {error.filename or 'the store'}: {error.strerror}") from None
    if args.json:
        json.dump(doc, sys.stdout, indent=1, sort_keys=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_inspection(doc))
    return EXIT_OK


def _cmd_inspect_key(args: argparse.Namespace) -> int:
    """``inspect STORE --key KEY``: every copy of one message and where it is now; exit 2 if not found."""
    from scenarios.locate_text import format_location
    from store.inspect import inspect_store_dir
    from store.locate import locate_message

    if not args.key.strip():
        raise UsageError("--key must not be empty")
    try:
        doc = inspect_store_dir(args.store_dir)
    except OSError as error:
        raise UsageError(f"{args.store_dir}: cannot read {error.filename or 'the store'}: {error.strerror}") from None
    result = locate_message(doc, args.key)
    if not result["found"]:
        raise UsageError(f"{args.key}: no message with this UNIQ_KEY, key or offsetMsgId in {args.store_dir}")
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_location(result))
    return EXIT_OK


def _cmd_check(args: argparse.Namespace) -> int:
    """``rmqsim check``: the exhaustive model check (scenarios/check_cli.py does the work)."""
    from .check_cli import BadInput, run

    try:
        return run(args)
    except BadInput as error:
        raise UsageError(f"check: {error}") from None


def _one_line_error(message: str):
    """argparse's error for ``check``: one line on stderr, exit code 2 (no usage block)."""
    print(f"rmqsim check: {message}", file=sys.stderr)
    raise SystemExit(EXIT_BAD_INPUT)


def _one_line_errors(parser: argparse.ArgumentParser) -> None:
    """argparse's errors (``--seed abc``) as one line on stderr and exit code 2, without the usage block."""
    def error(message: str):
        print(f"{parser.prog}: {message} (see {parser.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)

    parser.error = error


def _writable_dir(path: str, what: str) -> None:
    """Create ``path`` (a directory the command writes into) now, so that a bad one is exit 2 before any work."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise UsageError(f"{what} {path}: cannot create the directory: {error.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: the directory is not writable")


def _writable_file(path: str, what: str) -> None:
    """The file ``path`` can be written (its directory created) before any work is done."""
    if os.path.isdir(path):
        raise UsageError(f"{what} {path}: is a directory, not a file")
    parent = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as error:
        raise UsageError(f"{what} {path}: cannot create its directory: {error.strerror}") from None
    if not os.access(parent, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UsageError(f"{what} {path}: not writable")


def _progress_bar(label: str):
    """Progress over virtual time on stderr: a bar on a terminal, a line every few seconds otherwise."""
    from .progress import progress

    bar = progress(label, 100, "%")

    def update(done_ms: int, total_ms: int) -> None:
        bar.update(int(100 * done_ms / max(total_ms, 1)), note=f"{done_ms / 1000:.0f}/{total_ms / 1000:.0f} virtual s")
        if done_ms >= total_ms:
            bar.close()

    return update


def _load(scenario_arg: str, seed: int | None = None):
    from .catalogue import resolve_scenario
    from .scenario import ScenarioError

    try:
        return resolve_scenario(scenario_arg)
    except ScenarioError as error:
        raise UsageError(str(error)) from None


def _print_run(summary: dict, out_dir: str | None) -> None:
    from sim.run import simulator_error_line

    st = summary["stats"]
    late = st["lateness_ms"]
    print(f"{summary['scenario']} seed {summary['seed']} era {summary['era']}"
          f"{' mutants ' + ','.join(summary['mutants']) if summary['mutants'] else ''}: "
          f"{summary['virtual_ms'] / 1000:.0f} virtual s in {summary['wall_s']:.2f} wall s, {summary['events']} events")
    print(f"  sent {st['sent']}, consumed {st['consumed']} (+{st['failed_attempts']} failed attempts), "
          f"duplicates {st['duplicates']}, dlq {st['dlq']}, crashes {st['crashes']}, faults {st['faults']}, "
          f"delivery lateness p50/p99/max {late['p50']}/{late['p99']}/{late['max']} ms"
          + (f", pending {st['pending']} (not due before the end of the drain)" if st.get("pending") else "")
          + (f", unstored {st['unstored']} (PUT_OK for records larger than a commit-log file: RocketMQ's loss)"
             if st.get("unstored") else ""))
    if summary.get("from_store"):
        pre = summary["preloaded"]
        print(f"  from store {summary['from_store']}: {pre['copies']} copies of {pre['messages']} messages, "
              f"{pre['pending']} waiting to be delivered, {pre['dead_letters']} dead letters")
    for name, verdict in summary["invariants"].items():
        mark = ("VAC " if verdict.get("vacuous") else "ok  ") if verdict["holds"] else "FAIL"
        extra = f", {verdict['pending']} pending" if verdict.get("pending") else ""
        extra += f": vacuous, {verdict.get('vacuous_reason')}" if verdict.get("vacuous") else ""
        print(f"  {mark} {name} ({verdict['checked']} checked{extra})")
        for violation in verdict["violations"][:3]:
            print(f"       {violation.get('msg_id') or 'seq ' + str(violation.get('seq'))}: {violation['explanation']}")
    print(f"  history sha256 {summary['history_sha256']}")
    if out_dir:
        print(f"  wrote {out_dir}/summary.json, history.jsonl, store/")
    error_line = simulator_error_line(summary)
    if error_line is not None:
        print(f"  {error_line}; the run stopped, its history is not checked (traceback in summary.json)")
    if error_line is not None or any(not v["holds"] for v in summary["invariants"].values()):
        print(f"  replay: {summary['repro']}")


def _verdict_exit(summary: dict) -> int:
    """1 unless every invariant holds and none is vacuous (summary.json's "verdict")."""
    if any(not v["holds"] for v in summary["invariants"].values()):
        return EXIT_VIOLATION
    return EXIT_OK if summary.get("verdict", "holds") == "holds" else EXIT_VIOLATION


def _cmd_run(args: argparse.Namespace) -> int:
    from sim.run import run_scenario
    from store.mutants import UnknownMutant

    if args.shrink_runs < 1:
        raise UsageError("--shrink-runs must be at least 1")
    scenario = _load(args.scenario)
    if args.shrink and args.from_store:
        raise UsageError("--shrink does not work with --from-store (the shrinker reruns the scenario without the store)")
    image = _store_image(args.from_store, scenario, args.era) if args.from_store else None
    out_dir = args.out or os.path.join("out", "runs", f"{scenario.name}-seed{args.seed if args.seed is not None else scenario.seed}")
    _writable_dir(out_dir, "--out")
    try:
        result = run_scenario(scenario, args.seed, era=args.era, mutants=args.mutant or (), disk=args.disk,
                              out_dir=out_dir, faithful_polling=args.faithful_polling, shuffle_ties=args.shuffle_ties,
                              progress=_progress_bar(scenario.name), scenario_arg=args.scenario,
                              check=_checker(), from_store=image)
    except UnknownMutant as error:
        raise UsageError(str(error)) from None
    _print_run(result.summary, out_dir)
    code = _verdict_exit(result.summary)
    if code == EXIT_VIOLATION and args.shrink and result.summary.get("verdict") != "simulator_error":
        _shrink_run(result, os.path.join(out_dir, "shrunk.toml"), args.era, args.shrink_runs)
    return code


def _store_image(store_dir: str, scenario, era: str | None):
    """``run --from-store DIR``: DIR read and checked before anything is written (exit 2 with the path and offset)."""
    from sim.from_store import StoreImageError, load_store_image
    from sim.world import World

    world = World(scenario, scenario.seed, era=era)  # the run's store and broker settings, nothing started
    try:
        return load_store_image(store_dir, world.store_config, world.broker_config, world.clock.epoch_ms)
    except StoreImageError as error:
        raise UsageError(f"--from-store {error}") from None


def _shrink_run(result, path: str, era: str | None, max_runs: int) -> None:
    """``run --shrink``: a smaller scenario that fails the same invariant, written to ``path``."""
    from sim.shrink import first_failing_invariant, format_report, shrink, write_shrunk

    from .progress import shrink_progress

    invariant = first_failing_invariant(result.summary)
    print(f"shrinking on {invariant} (at most {max_runs} runs) ...")
    shrunk = shrink(result.scenario.doc, result.seed, invariant, era=era, mutants=result.mutants,
                    max_runs=max_runs, first=result, check=_checker(), progress=shrink_progress())
    write_shrunk(shrunk, path)
    for line in format_report(shrunk):
        print(line)


def _cmd_mutants(args: argparse.Namespace) -> int:
    from store.mutants import UnknownMutant

    from .catalogue import builtin_names
    from .mutants_runner import all_accounted_for, format_list, format_summary, format_table, run_mutants

    if args.list:
        for line in format_list():
            print(line)
        return EXIT_OK
    if args.max_seeds < 1:
        raise UsageError("--max-seeds must be at least 1")
    if args.explore is not None:
        return _mutants_explore(args)
    for flag, given in (("--json", args.json), ("--fixed-ties", args.fixed_ties), ("--no-steer", args.no_steer)):
        if given:
            raise UsageError(f"{flag} goes with --explore N")
    unknown = sorted(set(args.scenario or ()) - set(builtin_names()))
    if unknown:
        raise UsageError(f"{unknown[0]}: not a built-in scenario (see `rmqsim scenarios`)")
    try:
        outcomes = run_mutants(args.mutant, max_seeds=args.max_seeds, scenarios=args.scenario, check=_checker(),
                               progress=True)
    except UnknownMutant as error:
        raise UsageError(str(error)) from None
    for line in format_table(outcomes) + [""] + format_summary(outcomes):
        print(line)
    return EXIT_OK if all_accounted_for(outcomes) else EXIT_VIOLATION


def _mutants_explore(args: argparse.Namespace) -> int:
    """``mutants --explore N``: each mutant against N generated scenarios, ties shuffled, steered."""
    from store.mutants import UnknownMutant

    from .mutants_runner import format_explore, run_explore

    if args.explore < 1:
        raise UsageError("--explore must be at least 1")
    out_dir = args.out or os.path.join("out", "explore")
    _writable_dir(out_dir, "--out")
    try:
        outcomes, findings = run_explore(args.explore, args.mutant, out_dir=out_dir, check=_checker(),
                                         shuffle_ties=not args.fixed_ties, steer=not args.no_steer, progress=True)
    except UnknownMutant as error:
        raise UsageError(str(error)) from None
    if args.json:
        print(json.dumps({"mutants": {o.mutant: o.as_json() for o in outcomes}}, indent=2))
    else:
        for line in format_explore(outcomes, findings, args.explore):
            print(line)
    return EXIT_OK if all(o.caught for o in outcomes) else EXIT_VIOLATION


def _cmd_gate(args: argparse.Namespace) -> int:
    from .gate import format_probes, run_gate, write_junit

    if args.runs is not None and args.runs < 1:
        raise UsageError("--runs must be at least 1")
    if args.budget is not None and not 0 < args.budget < float("inf"):
        raise UsageError("--budget must be a positive number of seconds")
    if args.shrink_runs < 1:
        raise UsageError("--shrink-runs must be at least 1")
    if args.explore < 0:
        raise UsageError("--explore must be at least 0")
    from store.mutants import UnknownMutant

    from .catalogue import builtin_names

    unknown = sorted(set(args.scenario or ()) - set(builtin_names()))
    if unknown:
        raise UsageError(f"{unknown[0]}: not a built-in scenario (see `rmqsim scenarios`)")
    _writable_dir(args.out, "--out")
    if args.junit:
        _writable_file(args.junit, "--junit")
    try:
        gate = run_gate(runs=args.runs, budget_s=args.budget, seed_base=args.seed_base, out_dir=args.out,
                        shrink_runs=args.shrink_runs, names=args.scenario, mutants=args.mutant or (),
                        progress=True, check=_checker(), on_failure=_print_gate_failure, explore=args.explore)
    except UnknownMutant as error:
        raise UsageError(str(error)) from None
    if args.junit:
        write_junit(gate, args.junit)
    failing = gate.failing
    if failing is None:
        _print_gate_head(gate)
        print("  every invariant held in every run")
        print("\n".join(format_probes(gate.probes)))
        if args.junit:
            print(f"  wrote {args.junit}")
        return EXIT_OK
    if gate.run_dir:
        print(f"  wrote {gate.run_dir}/summary.json, history.jsonl, store/")
    if gate.shrink is not None:
        from sim.shrink import format_report

        for line in format_report(gate.shrink):
            print(line)
    elif gate.shrink_error:
        print(f"  (shrinking failed: {gate.shrink_error})")
    print("\n".join(format_probes(gate.probes)))
    if args.junit:
        print(f"  wrote {args.junit}")
    return EXIT_VIOLATION


def _print_gate_head(gate) -> None:
    seeds = sorted({r.seed for r in gate.runs})
    seed_text = f"{seeds[0]}..{seeds[-1]}" if seeds else "-"
    print(f"gate: {len(gate.runs)} runs over {len(gate.covered)} built-in scenarios, "
          f"seeds {seed_text} (seed base {gate.seed_base}), {gate.wall_s:.1f} s")
    missed = sorted(set(gate.scenarios) - set(gate.covered))
    print(f"  covered: {', '.join(gate.covered)}" + (f"; not this time: {', '.join(missed)}" if missed else ""))


def _print_gate_failure(gate) -> None:
    """The FAIL lines, printed as soon as the run failed (before the write-out and the shrink)."""
    _print_gate_head(gate)
    failing = gate.failing
    if failing.error is not None:
        print(f"  FAIL {failing.scenario} seed {failing.seed}: the simulator raised {failing.error.splitlines()[0]}")
    elif not failing.failed:
        print(f"  FAIL {failing.scenario} seed {failing.seed}: {', '.join(failing.vacuous)} vacuous "
              f"({failing.violation['explanation']})")
    else:
        v = failing.violation
        print(f"  FAIL {failing.scenario} seed {failing.seed}: {', '.join(failing.failed)} violated")
        print(f"       {v.get('msg_id') or 'log'}: {v['explanation']}")
    print(f"  replay: {failing.repro}")
    if failing.error is None and failing.failed:
        print("  shrinking the failing run ...", flush=True)
    sys.stdout.flush()


def _checker():
    """The run checker (kept for callers; the public name is ``sim.checking.check_run``)."""
    from sim.checking import check_run

    return check_run


def _cmd_replay(args: argparse.Namespace) -> int:
    from scenarios.scenario import ScenarioError, scenario_from_dict
    from sim.run import run_scenario, simulator_error_line

    path = os.path.join(args.dir, "summary.json")
    try:
        with open(path, encoding="utf-8") as f:
            summary = json.load(f)
        scenario = scenario_from_dict(summary["scenario_doc"], f"{path}:scenario_doc")
        seed, expected = summary["seed"], summary["history_sha256"]
    except (OSError, ValueError, KeyError, TypeError, ScenarioError) as error:
        raise UsageError(f"{path}: not a run summary ({error})") from None
    image = _store_image(summary["from_store"], scenario, summary.get("era")) if summary.get("from_store") else None
    result = run_scenario(scenario, seed, era=summary.get("era"), mutants=summary.get("mutants", ()),
                          disk=summary.get("disk", "memory"), faithful_polling=summary.get("faithful_polling", False),
                          shuffle_ties=summary.get("shuffle_ties", False),
                          progress=_progress_bar("replay"), check=_checker(), from_store=image)
    got = result.summary["history_sha256"]
    if got != expected:
        print(f"replay of {args.dir}: history DIFFERS: expected {expected}, got {got}")
        return EXIT_VIOLATION
    print(f"replay of {args.dir}: identical history ({got})")
    error_line = simulator_error_line(result.summary)
    if error_line is not None:
        print(f"  {error_line}")
    return _verdict_exit(result.summary)


def _cmd_scenarios(args: argparse.Namespace) -> int:
    from .catalogue import builtin_names, load_builtin

    for name in builtin_names():
        scenario = load_builtin(name)
        first = scenario.description.split(". ")[0].rstrip(".")
        print(f"{name:36} {first}.")
    return EXIT_OK


def _cmd_bench(args: argparse.Namespace) -> int:
    from sim.bench import SPARSE_SCENARIO
    from sim.bench import main as bench_main

    from .catalogue import load_builtin
    from .progress import progress

    # bench_main closes the reporter
    return bench_main(args, load_builtin(SPARSE_SCENARIO), progress("bench", None, "step", ticker=True))


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import SweepError, example_rows, format_result, load_sweep_file, run_sweep

    try:
        spec = load_sweep_file(args.sweep)
    except SweepError as error:
        raise UsageError(str(error)) from None
    if args.executor == "spark":
        from .java_check import INSTALL_HINT, java_major_version

        major = java_major_version()
        if major is None or major < 17:
            raise UsageError(f"PySpark needs Java 17+ ({'no java on PATH' if major is None else f'java {major} found'}); "
                             f"install it with: {INSTALL_HINT}, or run without Spark: --executor map")
    elif args.master is not None:
        raise UsageError("--master is for --executor spark; the map executor runs in this process")
    if args.master is not None and not re.match(r"^(local(\[(\*|\d+)(,\d+)?\])?|spark://\S+|yarn|k8s://\S+)$", args.master):
        raise UsageError(f"--master {args.master}: expected local[N], local[*], spark://HOST:PORT, yarn or k8s://URL")
    out_dir = args.out or os.path.join("out", "sweeps", spec.name)
    try:
        result = run_sweep(spec, out_dir, executor=args.executor, master=args.master)
    except SweepError as error:
        raise UsageError(str(error)) from None
    except KeyboardInterrupt:
        raise UsageError(f"interrupted; the finished rows are in {out_dir}/runs: run the same command to resume") from None
    except _environment_errors(args.executor) as error:  # Spark could not start or lost its cluster
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        where = f"Spark on {args.master or 'local[*]'}" if args.executor == "spark" else "the map executor"
        raise UsageError(f"{where} failed ({type(error).__name__}: {first[:300]}); "
                         f"finished rows are kept in {out_dir}/runs, run again to resume") from None
    print(format_result(result))
    for row in example_rows(out_dir):
        what = row["error"] or ", ".join(row["violated"] or [])
        print(f"  {row['cell']} seed {row['seed']}: {what}")
        if row["first_violation"]:
            print(f"     {row['first_violation']}")
        print(f"     replay: {row['repro']}")
    print(f"  wrote {out_dir}/runs/ (one row per run), cells.parquet/.json, marginals.parquet/.json, sweep.json; "
          f"plots: rmqsim report {out_dir}")
    return EXIT_VIOLATION if (result.violated or result.errors) else EXIT_OK


def _environment_errors(executor: str) -> tuple[type[BaseException], ...]:
    """What means the executor's environment failed (not a run): one line, exit 2."""
    if executor != "spark":
        return (OSError,)
    from .sweep_spark import environment_errors

    return environment_errors()


def _cmd_report(args: argparse.Namespace) -> int:
    from reports.report import ReportError, write_report

    try:
        page = write_report(args.dir, args.out)
    except ReportError as error:
        raise UsageError(str(error)) from None
    print(f"wrote {page.path} ({page.kind} report: {page.plots} plots)")
    if page.violated:
        print(f"  the {page.kind} has invariant violations: {page.violated}")
        return EXIT_VIOLATION
    return EXIT_OK


def _cmd_trace(args: argparse.Namespace) -> int:
    from scenarios.trace import TraceInputError, run_trace

    try:
        return run_trace(args)
    except TraceInputError as error:
        raise UsageError(str(error)) from None


def _cmd_lessons(args: argparse.Namespace) -> int:
    from scenarios.lessons import LessonsInputError, run_lessons

    try:
        if args.out:
            _writable_dir(args.out, "--out")
        return run_lessons(args)
    except LessonsInputError as error:
        raise UsageError(str(error)) from None


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
    p.add_argument("--key", default=None, metavar="KEY",
                   help="find one message (UNIQ_KEY, KEYS or offsetMsgId): its copies and where it is now")
    p.set_defaults(func=_cmd_inspect)

    p = sub.add_parser("run", help="run a scenario (a file or a built-in name) and check its invariants")
    p.add_argument("scenario", metavar="SCENARIO")
    p.add_argument("--seed", type=int, default=None, help="the run's seed (default: the scenario's)")
    p.add_argument("--out", default=None, metavar="DIR", help="output directory (default out/runs/NAME-seedN)")
    p.add_argument("--era", choices=["5.3.3", "4.9.8"], default=None, help="RocketMQ behaviour to follow")
    p.add_argument("--mutant", action="append", metavar="NAME", help="put back a historical bug (repeatable)")
    p.add_argument("--disk", choices=["memory", "os"], default="memory")
    p.add_argument("--from-store", default=None, metavar="DIR",
                   help="start the broker on a copy of this store directory (never modified): its messages, offsets "
                        "and config files, recovered as RocketMQ would (abort file: abnormal recovery)")
    p.add_argument("--faithful-polling", action="store_true",
                   help="poll every 100 ms like RocketMQ instead of sleeping through idle time (same history)")
    p.add_argument("--shuffle-ties", action="store_true",
                   help="run same-millisecond steps of different services in a seeded random order (default: rank order)")
    p.add_argument("--shrink", action="store_true",
                   help="on a violation, shrink to a smaller scenario that fails the same invariant (DIR/shrunk.toml)")
    p.add_argument("--shrink-runs", type=int, default=60, metavar="N", help="run budget of --shrink (default 60)")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("trace", help="a message's journey through a run: hops, crashes, commits and flushes")
    from scenarios.trace import add_arguments as add_trace_arguments

    add_trace_arguments(p)
    p.set_defaults(func=_cmd_trace)

    p = sub.add_parser("lessons", help="short lessons: one scenario each, a historical bug and its fix side by side")
    from scenarios.lessons import add_arguments as add_lessons_arguments

    add_lessons_arguments(p)
    p.set_defaults(func=_cmd_lessons)

    p = sub.add_parser("replay", help="re-run DIR/summary.json's run and verify the identical history hash")
    p.add_argument("dir", metavar="DIR")
    p.set_defaults(func=_cmd_replay)

    p = sub.add_parser("sweep", help="run a parameter sweep (on PySpark, local[*] unless --master; or --executor map)")
    p.add_argument("sweep", metavar="SWEEP.toml")
    p.add_argument("--executor", choices=("spark", "map"), default="spark",
                   help="spark (default; needs Java 17+) or map: the built-in map in this process, no JVM; "
                        "both give the same rows")
    p.add_argument("--master", default=None, metavar="URL",
                   help="Spark master: local[N], spark://host:7077 or yarn (default local[*])")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output directory (default out/sweeps/NAME); re-running into it resumes")
    p.set_defaults(func=_cmd_sweep)

    p = sub.add_parser("report", help="plots and one self-contained HTML page for a run or a sweep directory")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--out", default=None, metavar="FILE.html", help="the page to write (default DIR/report.html)")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("mutants", help="mutation self-test: which invariant catches each historical bug")
    p.add_argument("--list", action="store_true", help="print each mutant and the bug it reproduces, then exit")
    p.add_argument("--max-seeds", type=int, default=3, metavar="N",
                   help="seeds 1..N per scenario before the next one (default 3)")
    p.add_argument("--mutant", action="append", metavar="NAME", help="only this mutant (repeatable)")
    p.add_argument("--scenario", action="append", metavar="NAME",
                   help="only these built-in scenarios (repeatable; default all, the mutant's preferred first)")
    p.add_argument("--explore", type=int, default=None, metavar="N",
                   help="instead of the built-ins: up to N generated swarm scenarios per mutant (ties shuffled)")
    p.add_argument("--json", action="store_true", help="with --explore: print one JSON document")
    p.add_argument("--fixed-ties", action="store_true",
                   help="with --explore: run same-millisecond work in the fixed rank order (to compare with shuffling)")
    p.add_argument("--no-steer", action="store_true",
                   help="with --explore: default switch chances (no steering toward rare probes)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="with --explore: where catches and shrunk repros go (default out/explore)")
    p.set_defaults(func=_cmd_mutants)

    p = sub.add_parser("gate", help="the CI correctness gate: built-in scenarios over seeds from the git commit")
    bound = p.add_mutually_exclusive_group()
    bound.add_argument("--runs", type=int, default=None, metavar="N",
                       help="exactly N runs, round-robin over the built-ins (default: one round)")
    bound.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                       help="start runs until SECONDS of wall time have passed")
    p.add_argument("--junit", default=None, metavar="FILE", help="write JUnit XML (one testcase per run)")
    p.add_argument("--explore", type=int, default=0, metavar="N",
                   help="after the catalogue, N generated swarm scenarios from the seed base (ties shuffled)")
    p.add_argument("--seed-base", type=int, default=None, metavar="N",
                   help="first seed (default: the first 8 hex digits of git HEAD; 1 outside git)")
    p.add_argument("--out", default=os.path.join("out", "gate"), metavar="DIR",
                   help="where a failing run and its shrunk scenario go (default out/gate)")
    p.add_argument("--shrink-runs", type=int, default=40, metavar="N", help="run budget for shrinking (default 40)")
    p.add_argument("--scenario", action="append", metavar="NAME",
                   help="only these built-in scenarios (repeatable; default all)")
    p.add_argument("--mutant", action="append", metavar="NAME",
                   help="put back a historical bug, to see the gate fail (repeatable)")
    p.set_defaults(func=_cmd_gate)

    p = sub.add_parser("check", help="exhaustive model check of the abstract model (states, traces, GraphML)")
    from .check_cli import add_arguments as add_check_arguments

    add_check_arguments(p)
    p.error = _one_line_error
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("scenarios", help="list the built-in scenarios")
    p.set_defaults(func=_cmd_scenarios)

    p = sub.add_parser("bench", help="benchmark the simulator on the standard scenario")
    p.add_argument("--messages", type=int, default=20_000)
    p.add_argument("--json", action="store_true", help="print only the JSON line")
    p.set_defaults(func=_cmd_bench)
    for name, command in sub.choices.items():
        if name != "check":  # check has its own one-line error
            _one_line_errors(command)
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
