"""The explicit-state model checker: breadth-first exploration, safety, terminal states, liveness.

How it scales: states are not kept. The visited set holds a 64-bit fingerprint per state and its id
(model/statestore.py, TLC's approach, with the collision probability reported); the BFS frontier is
packed in chunks; each state keeps its parent and the action that reached it, so a counterexample is
rebuilt by replaying actions from the initial state. Edges are a compressed adjacency (CSR) of
``array`` columns filled in BFS order; the liveness search runs an iterative Tarjan over them
(model/liveness.py). ``keep_states=True`` also keeps every state, for ``to_networkx``, GraphML and
pictures of small graphs.

Properties: every safety property of model/properties.py on every reached state (the first violation
found by BFS has a shortest path); every state without successors is checked for loss and deadlock;
after a complete exploration, a strongly connected component from which a fair run cannot escape
(strong fairness, see ``model.spec.fairness_key``) and in which a message is still pending is a
liveness violation, shown as a lasso.
"""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import time
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from . import por as _por
from . import retire as _retire
from .liveness import (
    cycle_through,
    fair_components,
    strongly_connected_components,  # noqa: F401 - part of this module's API
)
from .properties import check_safety, check_terminal, successor_safety
from .spec import (
    DEST_DLQ,
    SCHEDULE_TOPIC,
    TOPIC_NAMES,
    Action,
    ModelConfig,
    State,
    collapsible_ticks,
    describe,
    fairness_key,
    initial_state,
    is_pending,
    ranks_drop,
    successors,
)
from .statestore import Depths, FingerprintSet, Frontier, collision_probability, fingerprint
from .symmetry import canonical, identity, renamings_can_meet

STOP_COMPLETE = "complete"
STOP_VIOLATION = "violation"
STOP_STATES = "state limit"
STOP_MEMORY = "memory limit"
STOP_TIME = "time limit"


STATE_KEY = ("Ln[...] = level n's queue, mXrY = message X with reconsumeTimes Y, wN = N ticks to wait, "
             "* delivered, + delivered and covered by a persist point, ! delivered again after that, ~ rewound "
             "by a crash; cA/tB/pC = cursor/offsetTable/delayOffset.json; T[...] and R[...] = TopicTest and "
             "%RETRY%G, ✓ acked, pull/committed/persisted offsets; pq = process queue (s: send-back due, "
             "r: local resubmit)")


@dataclass
class Step:
    """One line of a trace: the action taken, what it stored, and the (concrete) state it led to."""

    number: int
    action: Action
    state: State
    stored: tuple[str, ...] = ()  # the history's ``store`` events of this action: "QUEUE@offset"

    def text(self) -> str:
        effect = f"  [store {', '.join(self.stored)}]" if self.stored else ""
        return f"{self.number:3d}. {self.action.text()}{effect}"

    def as_dict(self) -> dict:
        return {"step": self.number, **self.action.as_dict(), "store": list(self.stored),
                "state": describe(self.state)}


def stored_by(before: State, after: State) -> tuple[str, ...]:
    """Appends from ``before`` to ``after``, named as the store names its queues."""
    out = []
    for li, (a, b) in enumerate(zip(before.levels, after.levels, strict=True)):
        out.extend(f"{SCHEDULE_TOPIC}:{li}@{i}" for i in range(len(a.entries), len(b.entries)))
    for t, (a, b) in enumerate(zip(before.topics, after.topics, strict=True)):
        out.extend(f"{TOPIC_NAMES[t]}@{i}" for i in range(len(a.entries), len(b.entries)))
    out.extend(f"{TOPIC_NAMES[DEST_DLQ]}@{i}" for i in range(len(before.dlq), len(after.dlq)))
    return tuple(out)


@dataclass
class Violation:
    prop: str  # property name
    kind: str  # "safety", "terminal", "deadlock" or "liveness"
    explanation: str
    state_id: int
    path_ids: list[int]  # canonical state ids from the initial state to the violating state
    steps: list[Step] = field(default_factory=list)  # the same path, replayed with concrete names
    cycle_ids: list[int] = field(default_factory=list)  # liveness: the loop, from the lasso's knot back to it
    cycle_steps: list[Step] = field(default_factory=list)
    shortest: bool = True  # found by breadth-first search (a sweep finds a path, not always a shortest one)

    def format(self) -> str:
        lines = [f"VIOLATION of {self.prop} ({self.kind}): {self.explanation}"]
        if self.steps:
            lines.append(f"{'shortest path' if self.shortest else 'a path (sweep order: not always the shortest)'}"
                         f" from the initial state ({len(self.steps)} actions):")
        elif not self.cycle_steps:
            lines.append("the initial state itself violates it")
        lines.extend("  " + step.text() for step in self.steps)
        if self.cycle_steps:
            where = f"the state after step {len(self.steps)}" if self.steps else "the initial state"
            lines.append(f"{'then ' if self.steps else 'from the initial state, '}forever "
                         f"({len(self.cycle_steps)} action(s) that return to {where}):")
            lines.extend("  " + step.text() for step in self.cycle_steps)
        final = self.cycle_steps[-1].state if self.cycle_steps else (self.steps[-1].state if self.steps else None)
        if final is not None:
            lines.append(f"  state: {describe(final)}")
            lines.append(f"  ({STATE_KEY})")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {"property": self.prop, "kind": self.kind, "explanation": self.explanation,
                "trace": [s.as_dict() for s in self.steps], "cycle": [s.as_dict() for s in self.cycle_steps]}


class StateGraph:
    """Per-state columns (parent, action in, depth, flags) and a CSR adjacency filled in BFS order."""

    def __init__(self, keep_states: bool = False) -> None:
        self.keep_states = keep_states
        self.states: list[State] = []  # only with keep_states
        self.parent = array("i")
        self.parent_action = array("H")  # action ids: a few hundred distinct actions at most
        self.depth = Depths()  # by id, from the first id of each BFS depth (statestore.Depths)
        self.edge_start = array("I")  # edge_start[i]..edge_start[i+1] are node i's edges (once expanded)
        self.edge_dst = array("i")
        self.edge_action = array("H")
        self.actions: list[Action] = []
        self.action_ids: dict[Action, int] = {}
        self.action_fair: list[tuple | None] = []
        self.action_fair_id: list[int] = []  # the fairness class as a small int (the checker's edge key)
        self._fair_ids: dict[tuple | None, int] = {}
        self.pending = bytearray()
        self.terminal = bytearray()
        self.terminal_count: int | None = None  # a sweep counts its terminal states instead (model/sweep.py)
        self.generated = 0  # successor states computed, duplicates included (for the collision estimate)
        self.edge_count = 0  # edges between distinct states (merged per target and fairness class)
        self.acyclic = False  # every edge lowered spec.progress_rank: no cycle, and no edges were kept
        self.collapse_ticks = False  # the clock jumped to the next due instant (spec.collapsible_ticks)
        self.por = False  # partial-order reduction: only a stubborn subset of successors expanded (model/por.py)
        self.por_pruned = 0  # successors that partial-order reduction left out
        self.retire = False  # persisted offsets forgotten once no crash can come (model/retire.py)
        self.compact = False  # and the processed prefixes of the queues dropped (model/retire.py)

    def __len__(self) -> int:
        return len(self.parent)

    @property
    def terminal_states(self) -> int:
        return sum(self.terminal) if self.terminal_count is None else self.terminal_count

    @property
    def expanded(self) -> int:
        return len(self.edge_start)

    def action_id(self, action: Action) -> int:
        aid = self.action_ids.get(action)
        if aid is None:
            aid = len(self.actions)
            if aid >= 0xFFFF:
                raise OverflowError("more than 65534 distinct actions: the edge store keeps 16-bit action ids")
            self.action_ids[action] = aid
            self.actions.append(action)
            fair = fairness_key(action)
            self.action_fair.append(fair)
            self.action_fair_id.append(self._fair_ids.setdefault(fair, len(self._fair_ids)))
        return aid

    def _span(self, i: int) -> tuple[int, int]:
        lo = self.edge_start[i] if i < len(self.edge_start) else len(self.edge_dst)
        hi = self.edge_start[i + 1] if i + 1 < len(self.edge_start) else len(self.edge_dst)
        return lo, hi

    def edges(self, i: int) -> Iterable[tuple[int, int]]:
        """(target id, action id) of node i's edges."""
        lo, hi = self._span(i)
        return zip(self.edge_dst[lo:hi], self.edge_action[lo:hi], strict=True)

    def targets(self, i: int):
        lo, hi = self._span(i)
        return self.edge_dst[lo:hi]

    def path_to(self, i: int) -> list[int]:
        path = [i]
        while self.parent[path[-1]] >= 0:
            path.append(self.parent[path[-1]])
        path.reverse()
        return path

    def nbytes(self) -> int:
        cols = (self.parent, self.parent_action, self.edge_start, self.edge_dst, self.edge_action)
        return (sum(len(c) * c.itemsize for c in cols) + self.depth.nbytes + len(self.pending)
                + len(self.terminal))

    def to_networkx(self, highlight: Iterable[int] = (), violation: int | None = None):
        """The explored graph as a networkx DiGraph (node ids as in the checker; labels as attributes).
        Needs the states: explore with ``keep_states=True``."""
        import networkx as nx

        if len(self.states) != len(self):
            raise ValueError("the graph was explored without keep_states: no states to label")
        marked = set(highlight)
        g = nx.DiGraph()
        for i, s in enumerate(self.states):
            g.add_node(i, label=describe(s), depth=int(self.depth[i]), terminal=bool(self.terminal[i]),
                       pending=bool(self.pending[i]), on_path=i in marked, violation=i == violation,
                       initial=i == 0, expanded=i < self.expanded)
        for i in range(self.expanded):
            for j, aid in self.edges(i):
                if g.has_edge(i, j):
                    continue
                g.add_edge(i, j, action=self.actions[aid].text(), verb=self.actions[aid].verb)
        return g


@dataclass
class CheckResult:
    config: ModelConfig
    symmetry: bool
    fairness: bool
    graph: StateGraph
    stop: str = STOP_COMPLETE
    violation: Violation | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    liveness_seconds: float = 0.0
    peak_rss_mb: float = 0.0
    nontrivial_sccs: int = 0
    fair_sccs: int = 0
    store_mb: float = 0.0  # fingerprint table + graph columns + packed frontier, at its largest
    workers: int = 1  # processes that expanded states (model/parallel.py); 1: this one
    worker_peak_rss_mb: float = 0.0  # the largest worker's peak resident memory (workers > 1)
    worker_cpu_seconds: float = 0.0  # of all workers together, included in cpu_seconds (workers > 1)
    sweep_layers: int = 0  # layers a sweep-line search opened (model/sweep.py); 0: breadth-first
    sweep_peak_states: int = 0  # the most fingerprints it held at once (the layer being expanded's)
    worker_expanded: int = 0  # states the workers expanded (workers > 1): past a stop, only the parts they began
    sittings: int = 1  # runs of a search resumed from checkpoints (model/checkpoint.py); its times are their sums
    checkpoint: str | None = None  # the directory to resume an unfinished checkpointed search from
    canon: Callable[[State], State] = field(default=identity, repr=False)  # the canonical form the graph holds
    renaming: Callable[[State], State] = field(default=identity, repr=False)  # its symmetry part (canonical or not)

    @property
    def states(self) -> int:
        return len(self.graph)

    @property
    def edges(self) -> int:
        return self.graph.edge_count

    @property
    def depth(self) -> int:
        return self.graph.depth.max()

    @property
    def complete(self) -> bool:
        return self.stop == STOP_COMPLETE

    @property
    def holds(self) -> bool:
        return self.violation is None and self.complete

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    @property
    def collision_probability(self) -> float:
        return collision_probability(self.states, self.graph.generated, self.sweep_peak_states or None)

    def stats(self) -> dict:
        return {"states": self.states, "edges": self.edges, "depth": self.depth,
                "terminal_states": self.graph.terminal_states, "generated": self.graph.generated,
                "seconds": round(self.seconds, 3), "cpu_seconds": round(self.cpu_seconds, 3),
                "liveness_seconds": round(self.liveness_seconds, 3),
                "states_per_second": round(self.states_per_second), "peak_rss_mb": round(self.peak_rss_mb, 1),
                "store_mb": round(self.store_mb, 1),
                "fingerprint_collision_probability": float(f"{self.collision_probability:.3g}"),
                "nontrivial_sccs": self.nontrivial_sccs, "fair_sccs": self.fair_sccs,
                "symmetry": self.symmetry, "fairness": self.fairness, "acyclic": self.graph.acyclic,
                "por": self.graph.por, "por_pruned": self.graph.por_pruned,
                "retire": self.graph.retire, "compact": self.graph.compact,
                "sweep_layers": self.sweep_layers, "sweep_peak_states": self.sweep_peak_states,
                "workers": self.workers, "worker_peak_rss_mb": round(self.worker_peak_rss_mb, 1),
                "worker_cpu_seconds": round(self.worker_cpu_seconds, 3),
                "sittings": self.sittings, "stop": self.stop}

    def verdict(self) -> str:
        if self.violation is not None:
            return "violation"
        return "ok" if self.complete else "incomplete"


def rss_mb() -> float:
    """Resident memory of this process now (Linux /proc), else the peak (getrusage)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def limit_reached(states: int, mem_mb: float, start: float, max_states: int | None, memory_mb: float | None,
                  max_seconds: float | None) -> str | None:
    """The limit a search with ``states`` states, ``mem_mb`` resident and started at ``start`` has reached, if any."""
    if max_states is not None and states >= max_states:
        return STOP_STATES
    if memory_mb is not None and mem_mb >= memory_mb:
        return STOP_MEMORY
    if max_seconds is not None and time.perf_counter() - start >= max_seconds:  # wall-clock ok
        return STOP_TIME
    return None


def check(
    cfg: ModelConfig,
    *,
    symmetry: bool = True,
    fairness: bool = True,
    max_states: int | None = None,
    memory_mb: float | None = None,
    max_seconds: float | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    invariants: Callable[[State, ModelConfig], tuple[str, str] | None] = check_safety,
    explore_after_violation: int = 0,
    keep_states: bool = False,
    keep_states_until: int | None = None,
    store_edges: bool | None = None,
    collapse_ticks: bool = True,
    por: bool = False,
    retire: bool = True,
    compact: bool = True,
    workers: int = 1,
    sweep: bool = False,
    checkpoint: str | None = None,
    checkpoint_every_s: float = 60.0,
    on_resume: Callable[[str], None] | None = None,
) -> CheckResult:
    """Explore every state reachable from the initial one; stop at the first violation or a limit.

    ``progress``: called now and then with (states, depth, frontier size); the CLI draws a bar with it.
    ``explore_after_violation``: keep exploring (ignoring further violations) until the graph has this
    many states, so that a picture shows the counterexample in its surroundings.
    ``keep_states``: keep every state (for pictures and GraphML); ``keep_states_until``: drop them again
    once the graph grows past this many states (the search goes on without them).
    ``store_edges``: keep the edge store (for the SCC search, GraphML and pictures). None (the default):
    keep it only with ``keep_states`` or unbounded put failures; otherwise every generated edge must lower
    ``spec.progress_rank``, which proves the graph acyclic, so liveness needs no edges. The first edge
    that does not lower it restarts the search with the edge store.
    ``collapse_ticks``: on such an acyclic search, let time jump to the next due instant (see
    ``spec.collapsible_ticks``); a trace then shows ``tick ticks=N``.
    ``por``: on such an acyclic search, expand a stubborn subset of each state's successors (model/por.py).
    ``retire``: on such an acyclic search, forget the persisted offsets once no crash can come; ``compact``:
    also drop the queues' processed prefixes then (model/retire.py; ``compact`` implies ``retire``).
    ``workers``: above 1, expand each BFS level in that many forked processes (model/parallel.py), same result;
    only for a search without edges, states or ``explore_after_violation`` (else ``ValueError``). If the graph
    turns out not to be acyclic, the search restarts serially with the edge store, as it does with one.
    ``sweep``: explore in sweep-line order (model/sweep.py): fingerprints of the progress layer being expanded
    only, the rest and the parent pointers on disk; same states, edges and verdicts, a counterexample not always
    shortest. Same refusals as ``workers``; with ``workers`` > 1, on that many peer processes, each owning a part
    of the fingerprints (model/sweep_workers.py). An edge that raises the sweep key restarts it as a breadth-first
    search (serial).
    ``checkpoint``: a sweep's directory: its files are kept there, a layer's end records a checkpoint once
    ``checkpoint_every_s`` passed since the last, and a search that finds one there (of the same configuration and
    options) resumes from it (model/checkpoint.py); gone once the search has a verdict. ``on_resume`` hears where
    (``Checkpoint.describe``), once the checkpoint is accepted and before the search goes on.
    """
    cfg.validate()
    options = dict(symmetry=symmetry, fairness=fairness, max_states=max_states, memory_mb=memory_mb,
                   max_seconds=max_seconds, progress=progress, invariants=invariants,
                   explore_after_violation=explore_after_violation, keep_states=keep_states,
                   keep_states_until=keep_states_until, collapse_ticks=collapse_ticks, por=por,
                   retire=retire, compact=compact)
    if store_edges is None:
        store_edges = keep_states or cfg.put_failures is None
    if checkpoint is not None and not sweep:
        raise ValueError("a checkpoint is kept by the sweep only: add sweep=True (--sweep)")
    if workers > 1 or sweep:
        _parallel_refused(cfg, store_edges, keep_states, explore_after_violation, "sweep" if sweep else "workers > 1")
    # States are tuples of ints and bools: the search makes no reference cycles, and the cyclic collector's
    # passes over the frontier's live states cost about a tenth of the time. Off during the search only.
    collecting = gc.isenabled()
    gc.disable()
    try:
        if not store_edges:
            try:
                if workers > 1 and not sweep:
                    from .parallel import explore

                    parallel = {k: v for k, v in options.items() if k not in
                                ("explore_after_violation", "keep_states", "keep_states_until")}
                    return explore(cfg, workers=workers, **parallel)
                if sweep:
                    from .sweep import SweepKeyRose

                    try:
                        return _explore_sweep(cfg, workers=workers, checkpoint=checkpoint,
                                              checkpoint_every_s=checkpoint_every_s, on_resume=on_resume, **options)
                    except SweepKeyRose:
                        pass
                return _explore(cfg, store_edges=False, **options)
            except _RankDidNotDrop:
                pass
        return _explore(cfg, store_edges=True, **options)
    finally:
        if collecting:
            gc.enable()


def _parallel_refused(cfg: ModelConfig, store_edges: bool, keep_states: bool, explore_after_violation: int,
                      what: str = "workers > 1") -> None:
    """Why ``workers`` > 1 (or a sweep, ``what``) cannot run this search (ValueError), if it cannot."""
    if keep_states or store_edges:
        why = ("unbounded put failures need the edge store and the SCC search" if cfg.put_failures is None
               else "it keeps states or edges (--graph, store_edges)")
        instead = "use 1 worker" if what == "workers > 1" else "use breadth-first search"
        raise ValueError(f"{what} runs only searches whose graph is proven acyclic, without edges: {why}; {instead}")
    if explore_after_violation:
        instead = "1 worker" if what == "workers > 1" else "breadth-first search"
        raise ValueError(f"{what} stops at the first violation: explore_after_violation needs {instead}")


def _then(first: Callable[[State], State], second: Callable[[State], State]) -> Callable[[State], State]:
    """``second`` after ``first`` (the symmetry form after retire's representative: renaming last)."""
    if second is identity:
        return first

    def both(s: State) -> State:
        return second(first(s))

    return both


class _RankDidNotDrop(Exception):
    """An edge that does not lower spec.progress_rank: the graph may have cycles, so edges are needed."""


def expand(state: State, cfg: ModelConfig, symmetric: bool, collapse: bool, reduce: bool) -> tuple[list, int]:
    """A state's successors on a search without edges (breadth-first, sweep, peers), and how many were computed:
    every edge must lower spec.progress_rank (else ``_RankDidNotDrop``: the search starts again with the edge
    store), then ``reduce`` keeps partial-order reduction's stubborn subset of them."""
    succ = successors(state, cfg, symmetric, collapse)
    if not ranks_drop(state, succ):
        raise _RankDidNotDrop
    full = len(succ)
    if reduce:
        succ = _por.reduce(state, cfg, succ)
    return succ, full


def _acyclic_search(cfg: ModelConfig, symmetry: bool, fairness: bool, collapse_ticks: bool, por: bool, retire: bool,
                    compact: bool) -> tuple[StateGraph, CheckResult, Callable[[State], State], bool, bool]:
    """The graph, result, canonical form, tick collapsing and POR switch of a search without edges, whose every
    edge must lower the progress rank (model/parallel.py's and model/sweep.py's searches)."""
    canon = renaming = canonical if symmetry and renamings_can_meet(cfg.send_levels) else identity
    g = StateGraph(False)
    g.acyclic = True
    g.collapse_ticks = collapse = collapse_ticks and collapsible_ticks(cfg)
    g.por = reduce = por and _por.applicable(cfg)
    representative = _retire.reducer(cfg, retire, compact)
    if representative is not None:
        g.retire, g.compact = True, compact
        canon = _then(representative, canon)
    return g, CheckResult(cfg, symmetry, fairness, g, canon=canon, renaming=renaming), canon, collapse, reduce


def _explore_sweep(cfg: ModelConfig, *, symmetry: bool, fairness: bool, max_states: int | None,
                   memory_mb: float | None, max_seconds: float | None, progress: Callable[[int, int, int], None] | None,
                   invariants: Callable[[State, ModelConfig], tuple[str, str] | None], collapse_ticks: bool, por: bool,
                   retire: bool, compact: bool, workers: int = 1, checkpoint: str | None = None,
                   checkpoint_every_s: float = 60.0, on_resume: Callable[[str], None] | None = None,
                   **_bfs_only) -> CheckResult:
    """The sweep-line search (model/sweep.py, or model/sweep_workers.py with ``workers`` > 1) with this module's
    graph, result and end of search, in a temporary directory or a checkpoint's."""
    from .checkpoint import Checkpoint, model_source_digest
    from .sweep import SweepKeyRose, sweep
    from .sweep_workers import sweep_on_peers

    g, result, canon, collapse, reduce = _acyclic_search(cfg, symmetry, fairness, collapse_ticks, por, retire, compact)
    start = time.perf_counter()  # wall-clock ok: statistics and the time limit only
    cpu_start = time.process_time()  # wall-clock ok: statistics only
    kept = None
    if checkpoint is not None:
        identity = {"config": cfg.as_dict(), "workers": workers, "symmetry": symmetry,
                    "collapse_ticks": collapse, "por": reduce, "retire": g.retire, "compact": g.compact,
                    "invariants": f"{invariants.__module__}.{invariants.__qualname__}",
                    "model_source": model_source_digest()}
        kept = Checkpoint(checkpoint, identity, checkpoint_every_s)
        where = kept.describe()
        if where is not None and on_resume is not None:
            on_resume(where)
    directory = tempfile.mkdtemp(prefix="rmqsim-sweep-") if kept is None else kept.directory

    def fail(prop: str, kind: str, why: str, sid: int) -> bool:
        if result.violation is None:
            result.violation = Violation(prop, kind, why, sid, g.path_to(sid), shortest=False)
            result.stop = STOP_VIOLATION
        return True

    search = dict(symmetric=symmetry, collapse=collapse, reduce=reduce, invariants=invariants, max_states=max_states,
                  memory_mb=memory_mb, max_seconds=max_seconds, progress=progress, start=start, fail=fail,
                  directory=directory, checkpoint=kept)
    peers_cpu = 0.0
    try:
        if workers > 1:  # the peers' columns become the graph's
            peers_cpu = sweep_on_peers(cfg, g, result, canon, workers=workers, **search)
        else:
            sweep(cfg, g, result, canon, **search)
    except (SweepKeyRose, _RankDidNotDrop):
        if kept is not None:
            kept.discard()  # the search starts again breadth-first
        raise
    finally:
        if kept is None:  # open columns stay readable (Linux)
            shutil.rmtree(directory, ignore_errors=True)
        else:
            kept.close()
    _finish(result, None, canon, symmetry, invariants, start, cpu_start, peers_cpu)
    result.worker_cpu_seconds = peers_cpu
    if kept is not None:
        earlier = kept.earlier
        result.seconds += earlier["seconds"]
        result.cpu_seconds += earlier["cpu_seconds"]
        result.sittings += earlier["sittings"]
        if result.complete or result.violation is not None:
            kept.discard()
        else:
            result.checkpoint = kept.directory
    return result


def _explore(cfg: ModelConfig, *, symmetry: bool, fairness: bool, max_states: int | None, memory_mb: float | None,
             max_seconds: float | None, progress: Callable[[int, int, int], None] | None,
             invariants: Callable[[State, ModelConfig], tuple[str, str] | None], explore_after_violation: int,
             keep_states: bool, keep_states_until: int | None, store_edges: bool,
             collapse_ticks: bool, por: bool, retire: bool, compact: bool) -> CheckResult:
    canon = renaming = canonical if symmetry and renamings_can_meet(cfg.send_levels) else identity
    g = StateGraph(keep_states)
    g.acyclic = not store_edges
    # Tick collapsing keeps safety and terminal states, not fair cycles: only on a graph proven acyclic.
    g.collapse_ticks = collapse = not store_edges and collapse_ticks and collapsible_ticks(cfg)
    # Partial-order reduction relies on the acyclic graph for its cycle proviso (model/por.py).
    g.por = reduce = not store_edges and por and _por.applicable(cfg)
    # Forgetting what only a crash reads keeps safety and terminal states: only on a graph proven acyclic.
    representative = _retire.reducer(cfg, retire, compact) if not store_edges else None
    if representative is not None:
        g.retire, g.compact = True, compact
        canon = _then(representative, canon)
    pruned = 0
    result = CheckResult(cfg, symmetry, fairness, g, canon=canon, renaming=renaming)
    start = time.perf_counter()  # wall-clock ok: statistics and the time limit only
    cpu_start = time.process_time()  # wall-clock ok: statistics only
    seen = FingerprintSet()
    frontier = Frontier()
    parent, parent_action, depth = g.parent, g.parent_action, g.depth
    pending, terminal, states = g.pending, g.terminal, g.states
    edge_dst, edge_action, edge_start = g.edge_dst, g.edge_action, g.edge_start
    action_fair_id = g.action_fair_id
    no_canon = canon is identity
    # Speed (the loop below runs once per generated successor, millions of times): the action's id is found by
    # the action object's identity (spec builds each label once; the entry keeps the object alive, so its id
    # cannot be reused), the fingerprint table's first probe is inlined, and the safety check of a successor
    # reuses what its parent's check found about the parts they share (properties.safe_successor).
    aid_of: dict[int, tuple[Action, int]] = {}
    fps, slots, capacity, grow_at = seen.fps, seen.slots, seen.capacity, seen.limit
    incremental_safety = invariants is check_safety
    safe_successor = successor_safety(cfg)
    depth_append, push = depth.append, frontier.push

    def add(state: State, from_id: int, aid: int, at_depth: int) -> int:
        sid = len(parent)
        parent.append(from_id)
        parent_action.append(aid if aid >= 0 else 0xFFFF)
        depth_append(at_depth)
        pending.append(1 if is_pending(state) else 0)
        terminal.append(0)
        if g.keep_states:
            keep(state, sid)
        push(state)
        return sid

    def keep(state: State, sid: int) -> None:
        if keep_states_until is not None and sid >= keep_states_until:
            g.keep_states = False  # too many to keep: go on without them
            states.clear()
        else:
            states.append(state)

    def fail(prop: str, kind: str, why: str, sid: int) -> bool:
        """Record the first violation; True when the search should stop now."""
        if result.violation is None:
            result.violation = Violation(prop, kind, why, sid, g.path_to(sid))
            result.stop = STOP_VIOLATION
        return len(parent) >= explore_after_violation

    s0 = canon(initial_state(cfg))
    seen.get_or_add(fingerprint(s0), 0)
    add(s0, -1, -1, 0)
    bad = invariants(s0, cfg)
    stop = bad is not None and fail(bad[0], "safety", bad[1], 0)
    i = 0
    level_end = 0  # the first id past the depth of the states being expanded (next_depth - 1)
    next_depth = 1
    check_every = 2048
    next_check = check_every
    generated = 0
    edge_count = 0
    pop = frontier.pop
    while not stop:
        state = pop()
        if state is None:
            break
        if store_edges:
            edge_start.append(len(edge_dst))
        if store_edges:
            succ = successors(state, cfg, symmetry, collapse)
            full = len(succ)
        else:
            succ, full = expand(state, cfg, symmetry, collapse, reduce)
        generated += full
        pruned += full - len(succ)
        if not succ:
            terminal[i] = 1
            bad = check_terminal(state, cfg)
            if bad is not None and fail(bad[0], "deadlock" if bad[0] == "deadlock" else "terminal", bad[1], i):
                break
        keys: set = set()
        if i >= level_end:  # the first state of a deeper level (Depths' bisection only then)
            next_depth = depth[i] + 1
            starts = depth.starts
            # Ids below len(parent) with no later start are all at this depth; look again when i gets there.
            level_end = starts[next_depth] if next_depth < len(starts) else len(parent)
        # Before the first violation every state reached was checked safe, the parent too (safe_successor's premise).
        safe_parent = incremental_safety and result.violation is None
        state_msgs, state_pending = state[4], pending[i]
        for action, nxt in succ:
            c = nxt if no_canon else canon(nxt)
            known = aid_of.get(id(action))
            if known is not None and known[0] is action:
                aid = known[1]
            else:
                aid = g.action_id(action)
                aid_of[id(action)] = (action, aid)
            fp = hash(c) or 1  # statestore.fingerprint, inlined
            slot = fp % capacity  # FingerprintSet.get_or_add's probe, inlined
            while True:
                v = slots[slot]
                if v == 0:
                    j = -1
                    break
                if fps[v - 1] == fp:
                    j = v - 1
                    break
                slot += 1
                if slot == capacity:
                    slot = 0
            if j < 0:
                j = len(parent)
                fps.append(fp)  # FingerprintSet.insert, inlined (ids are dense, the slot was empty)
                slots[slot] = j + 1
                if j >= grow_at:  # the table grows: let it free the old slots before it fills the new ones
                    slots = None
                    seen.grow()
                    slots, capacity, grow_at = seen.slots, seen.capacity, seen.limit
                parent.append(i)
                parent_action.append(aid)
                depth_append(next_depth)
                pending.append(state_pending if c[4] is state_msgs else 1 if is_pending(c) else 0)
                terminal.append(0)
                if g.keep_states:
                    keep(c, j)
                push(c)
                if safe_parent:
                    bad = None if safe_successor(state, c) else check_safety(c, cfg)
                else:
                    bad = invariants(c, cfg)
                if bad is not None and fail(bad[0], "safety", bad[1], j):
                    edge_count += 1
                    if store_edges:
                        edge_dst.append(j)
                        edge_action.append(aid)
                    stop = True
                    break
            key = j << 16 | action_fair_id[aid]  # (target, fairness class): fewer than 65535 actions
            if key in keys:
                continue
            keys.add(key)
            edge_count += 1
            if store_edges:
                edge_dst.append(j)
                edge_action.append(aid)
        i += 1
        if result.violation is not None and len(parent) >= explore_after_violation:
            break
        if len(parent) >= next_check:
            next_check = len(parent) + check_every
            if progress is not None:
                progress(len(parent), depth[i - 1], len(parent) - i)
            mem = rss_mb()
            result.peak_rss_mb = max(result.peak_rss_mb, mem)
            result.store_mb = max(result.store_mb, (seen.nbytes + g.nbytes() + frontier.nbytes) / 2**20)
            limit = limit_reached(len(parent), mem, start, max_states, memory_mb, max_seconds)
            if limit is not None:
                if result.violation is None:
                    result.stop = limit
                break
    g.generated = generated
    g.edge_count = edge_count
    g.por_pruned = pruned
    return _finish(result, seen, canon, symmetry, invariants, start, cpu_start)


def _finish(result: CheckResult, seen: FingerprintSet | None, canon, symmetry: bool, invariants, start: float,
            cpu_start: float, worker_cpu: float = 0.0) -> CheckResult:
    """The end of a search, serial or with workers (model/parallel.py): liveness on a complete graph, the
    counterexample replayed on concrete states, and the time and memory it all took."""
    if seen is not None:
        seen.release()  # the liveness search needs only the graph columns
    if result.violation is None and result.complete:
        t0 = time.perf_counter()  # wall-clock ok: statistics only
        _check_liveness(result)
        result.liveness_seconds = time.perf_counter() - t0  # wall-clock ok
    if result.violation is not None:
        _replay(result.violation, result.graph, result.config, canon, symmetry)
        _explain_concretely(result.violation, result.config, invariants)
    result.seconds = time.perf_counter() - start  # wall-clock ok
    result.cpu_seconds = time.process_time() - cpu_start + worker_cpu  # wall-clock ok
    result.peak_rss_mb = max(result.peak_rss_mb, rss_mb())
    return result


# --- liveness ---------------------------------------------------------------------------------------------
def _check_liveness(result: CheckResult) -> None:
    g = result.graph
    if g.acyclic:  # every edge lowered the progress rank: no cycle, so no infinite run to judge
        return
    fair, count = fair_components(g, g.pending, result.fairness)
    result.nontrivial_sccs = count
    result.fair_sccs = len(fair)
    if not fair:
        return
    comp = min(fair, key=lambda c: (min(g.depth[v] for v in c), min(c)))
    knot = min(comp, key=lambda v: (g.depth[v], v))
    cycle = cycle_through(g, knot, set(comp))
    knot_state = canonical_states(g, result.config, [knot], result.canon, result.symmetry)[0]
    stuck = [f"m{i}" for i, m in enumerate(knot_state.msgs) if not (m.done or m.dead)]
    why = (f"a {'fair ' if result.fairness else ''}cycle of {len(comp)} state(s) never consumes or "
           f"dead-letters {', '.join(stuck)}")
    result.violation = Violation("liveness", "liveness", why, knot, g.path_to(knot), cycle_ids=cycle)
    result.stop = STOP_VIOLATION


# --- traces -----------------------------------------------------------------------------------------------
def _apply(state: State, action: Action, cfg: ModelConfig, symmetric: bool, collapse: bool) -> State:
    for a, nxt in successors(state, cfg, symmetric, collapse):
        if a == action:
            return nxt
    raise AssertionError(f"action {action.text()} is not enabled in {describe(state)}")


def canonical_states(g: StateGraph, cfg: ModelConfig, ids: list[int], canon: Callable[[State], State],
                     symmetric: bool) -> list[State]:
    """The (canonical) states of the given ids, rebuilt by replaying the BFS tree's actions from the root
    (states are not kept; the model is deterministic per action)."""
    if len(g.states) == len(g):
        return [g.states[i] for i in ids]
    cache: dict[int, State] = {0: canon(initial_state(cfg))}
    out = []
    for i in ids:
        chain = []
        v = i
        while v not in cache:
            chain.append(v)
            v = g.parent[v]
        state = cache[v]
        for v in reversed(chain):
            state = canon(_apply(state, g.actions[g.parent_action[v]], cfg, symmetric, g.collapse_ticks))
            cache[v] = state
        out.append(cache[i])
    return out


def _replay(v: Violation, g: StateGraph, cfg: ModelConfig, canon: Callable[[State], State], symmetric: bool) -> None:
    """Re-run the canonical path on concrete states, so message names stay the same along the trace."""
    concrete = initial_state(cfg)
    wanted = canonical_states(g, cfg, v.path_ids + v.cycle_ids, canon, symmetric)
    by_id = dict(zip(v.path_ids + v.cycle_ids, wanted, strict=True))

    def walk(ids: list[int], number: int) -> list[Step]:
        nonlocal concrete
        steps = []
        for sid in ids:
            want = by_id[sid]
            for action, nxt in successors(concrete, cfg, False, g.collapse_ticks):
                if canon(nxt) == want:
                    number += 1
                    steps.append(Step(number, action, nxt, stored_by(concrete, nxt)))
                    concrete = nxt
                    break
            else:  # cannot happen for a path of the graph; keep the trace honest if it does
                raise AssertionError(f"replay lost the path at state {sid}")
        return steps

    v.steps = walk(v.path_ids[1:], 0)
    if v.cycle_ids:
        v.cycle_steps = walk(v.cycle_ids, len(v.steps))


def _explain_concretely(v: Violation, cfg: ModelConfig,
                        invariants: Callable[[State, ModelConfig], tuple[str, str] | None]) -> None:
    """The explanation said again of the trace's last concrete state: the search judged the canonical one,
    whose message names (symmetry) and offsets (model/retire.py's compaction) need not be the trace's."""
    if v.cycle_steps or not v.steps:
        return
    final = v.steps[-1].state
    again = invariants(final, cfg) if v.kind == "safety" else check_terminal(final, cfg)
    if again is not None and again[0] == v.prop:
        v.explanation = again[1]


def format_stats(result: CheckResult) -> str:
    st = result.stats()
    cfg = result.config
    head = (f"model check: {cfg.messages} message(s), {cfg.levels} level(s), max retries {cfg.max_retries}, "
            f"crashes {cfg.crashes}, put failures {'unbounded' if cfg.put_failures is None else cfg.put_failures}, "
            f"persist points {cfg.persist_points}, era {cfg.era}"
            + (f", mutants {','.join(sorted(cfg.mutants))}" if cfg.mutants else ""))
    body = (f"  {st['states']} states, {st['edges']} edges, depth {st['depth']}, {st['terminal_states']} terminal, "
            f"{st['nontrivial_sccs']} cyclic component(s) ({st['fair_sccs']} fair); "
            f"{st['seconds']:.2f} s{f' in {result.sittings} sittings' if result.sittings > 1 else ''}, "
            f"{st['states_per_second']} states/s "
            f"({round(result.states / result.cpu_seconds) if result.cpu_seconds > 0 else 0} per CPU second), "
            f"peak {st['peak_rss_mb']:.0f} MiB; symmetry {'on' if result.symmetry else 'off'}"
            f"{', ticks collapsed' if result.graph.collapse_ticks else ''}"
            f"{', acyclic (no edges kept)' if result.graph.acyclic else ''}"
            f"{', partial-order reduction on' if result.graph.por else ''}"
            f"{f', {result.workers} workers (peak {result.worker_peak_rss_mb:.0f} MiB each)' if result.workers > 1 else ''}"
            f"{_sweep_words(result)}"
            f"{', queues compacted' if result.graph.compact else ', persisted offsets retired' if result.graph.retire else ''}")
    return head + "\n" + body


def _sweep_words(result: CheckResult) -> str:
    if not result.sweep_layers:
        return ""
    return (f", sweep-line ({result.sweep_layers} layers, at most {result.sweep_peak_states} fingerprints held at once; "
            f"depth = longest first path)")
