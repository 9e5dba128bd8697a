"""The explicit-state model checker: breadth-first exploration, safety, terminal states, liveness.

Why its own graph store: a networkx DiGraph costs several hundred bytes per edge, which caps the
search far below what fits in memory. States are interned to integer ids; edges are kept in a
compressed adjacency (CSR) of ``array`` columns, filled in BFS order, so a million states cost tens
of megabytes beyond the states themselves. ``to_networkx`` gives the networkx view for analysis,
GraphML and pictures; the liveness search runs an iterative Tarjan over the arrays (a test checks it
against ``networkx.strongly_connected_components``).

Properties: every safety property of model/properties.py on every reached state (the first violation
found by BFS has a shortest path); every state without successors is checked for loss and deadlock;
after a complete exploration, a strongly connected component from which a fair run cannot escape
(strong fairness, see ``model.spec.fairness_key``) and in which a message is still pending is a
liveness violation, shown as a lasso.
"""

from __future__ import annotations

import os
import sys
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .properties import check_safety, check_terminal
from .spec import (
    DEST_DLQ,
    SCHEDULE_TOPIC,
    TOPIC_NAMES,
    Action,
    ModelConfig,
    State,
    describe,
    fairness_key,
    initial_state,
    is_pending,
    successors,
)
from .symmetry import canonical, identity

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

    def format(self) -> str:
        lines = [f"VIOLATION of {self.prop} ({self.kind}): {self.explanation}"]
        if self.steps:
            lines.append(f"shortest path from the initial state ({len(self.steps)} actions):")
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
    """Interned states and a CSR adjacency filled in BFS order (node i's edges are contiguous)."""

    def __init__(self) -> None:
        self.states: list[State] = []
        self.index: dict[State, int] = {}
        self.parent = array("i")
        self.parent_action = array("i")
        self.depth = array("i")
        self.edge_start = array("q")  # edge_start[i]..edge_start[i+1] are node i's edges (once expanded)
        self.edge_dst = array("i")
        self.edge_action = array("i")
        self.actions: list[Action] = []
        self.action_ids: dict[Action, int] = {}
        self.action_fair: list[tuple | None] = []
        self.pending = bytearray()
        self.terminal = bytearray()

    def __len__(self) -> int:
        return len(self.states)

    @property
    def expanded(self) -> int:
        return len(self.edge_start)

    def action_id(self, action: Action) -> int:
        aid = self.action_ids.get(action)
        if aid is None:
            aid = len(self.actions)
            self.action_ids[action] = aid
            self.actions.append(action)
            self.action_fair.append(fairness_key(action))
        return aid

    def edges(self, i: int) -> Iterable[tuple[int, int]]:
        """(target id, action id) of node i's edges."""
        lo = self.edge_start[i]
        hi = self.edge_start[i + 1] if i + 1 < len(self.edge_start) else len(self.edge_dst)
        return zip(self.edge_dst[lo:hi], self.edge_action[lo:hi], strict=True)

    def path_to(self, i: int) -> list[int]:
        path = [i]
        while self.parent[path[-1]] >= 0:
            path.append(self.parent[path[-1]])
        path.reverse()
        return path

    def to_networkx(self, highlight: Iterable[int] = (), violation: int | None = None):
        """The explored graph as a networkx DiGraph (node ids as in the checker; labels as attributes)."""
        import networkx as nx

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
    peak_rss_mb: float = 0.0
    nontrivial_sccs: int = 0
    fair_sccs: int = 0

    @property
    def states(self) -> int:
        return len(self.graph)

    @property
    def edges(self) -> int:
        return len(self.graph.edge_dst)

    @property
    def depth(self) -> int:
        return max(self.graph.depth) if len(self.graph.depth) else 0

    @property
    def complete(self) -> bool:
        return self.stop == STOP_COMPLETE

    @property
    def holds(self) -> bool:
        return self.violation is None and self.complete

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    def stats(self) -> dict:
        return {"states": self.states, "edges": self.edges, "depth": self.depth,
                "terminal_states": sum(self.graph.terminal), "seconds": round(self.seconds, 3),
                "cpu_seconds": round(self.cpu_seconds, 3),
                "states_per_second": round(self.states_per_second), "peak_rss_mb": round(self.peak_rss_mb, 1),
                "nontrivial_sccs": self.nontrivial_sccs, "fair_sccs": self.fair_sccs,
                "symmetry": self.symmetry, "fairness": self.fairness, "stop": self.stop}

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


def _progress(enabled: bool | None):
    if enabled is False:
        return None
    from tqdm import tqdm

    return tqdm(desc="model check", unit=" states", file=sys.stderr, leave=False,
                disable=None if enabled is None else False, mininterval=0.5)


def check(
    cfg: ModelConfig,
    *,
    symmetry: bool = True,
    fairness: bool = True,
    max_states: int | None = None,
    memory_mb: float | None = None,
    max_seconds: float | None = None,
    progress: bool | None = False,
    invariants: Callable[[State, ModelConfig], tuple[str, str] | None] = check_safety,
    explore_after_violation: int = 0,
) -> CheckResult:
    """Explore every state reachable from the initial one; stop at the first violation or a limit.

    ``progress``: False (default) no bar, None a tqdm bar on stderr when it is a terminal, True always.
    ``explore_after_violation``: keep exploring (ignoring further violations) until the graph has this
    many states, so that a picture shows the counterexample in its surroundings.
    """
    cfg.validate()
    canon = canonical if symmetry else identity
    g = StateGraph()
    result = CheckResult(cfg, symmetry, fairness, g)
    start = time.perf_counter()  # wall-clock ok: statistics and the time limit only
    cpu_start = time.process_time()  # wall-clock ok: statistics only
    bar = _progress(progress)

    def add(state: State, parent: int, aid: int) -> int:
        sid = len(g.states)
        g.index[state] = sid
        g.states.append(state)
        g.parent.append(parent)
        g.parent_action.append(aid)
        g.depth.append(g.depth[parent] + 1 if parent >= 0 else 0)
        g.pending.append(1 if is_pending(state) else 0)
        g.terminal.append(0)
        return sid

    def fail(prop: str, kind: str, why: str, sid: int) -> bool:
        """Record the first violation; True when the search should stop now."""
        if result.violation is None:
            result.violation = Violation(prop, kind, why, sid, g.path_to(sid))
            result.stop = STOP_VIOLATION
        return len(g.states) >= explore_after_violation

    s0 = canon(initial_state(cfg))
    add(s0, -1, -1)
    bad = invariants(s0, cfg)
    stop = bad is not None and fail(bad[0], "safety", bad[1], 0)
    i = 0
    check_every = 2048
    next_check = check_every
    while not stop and i < len(g.states):
        state = g.states[i]
        g.edge_start.append(len(g.edge_dst))
        succ = successors(state, cfg, symmetry)
        if not succ:
            g.terminal[i] = 1
            bad = check_terminal(state, cfg)
            if bad is not None and fail(bad[0], "deadlock" if bad[0] == "deadlock" else "terminal", bad[1], i):
                break
        seen: set = set()
        for action, nxt in succ:
            c = canon(nxt)
            j = g.index.get(c)
            aid = g.action_id(action)
            if j is None:
                j = add(c, i, aid)
                bad = invariants(c, cfg)
                if bad is not None and fail(bad[0], "safety", bad[1], j):
                    g.edge_dst.append(j)
                    g.edge_action.append(aid)
                    stop = True
                    break
            key = (j, g.action_fair[aid])
            if key in seen:
                continue
            seen.add(key)
            g.edge_dst.append(j)
            g.edge_action.append(aid)
        i += 1
        if result.violation is not None and len(g.states) >= explore_after_violation:
            break
        if len(g.states) >= next_check:
            next_check = len(g.states) + check_every
            if bar is not None:
                bar.n = len(g.states)
                bar.set_postfix(depth=g.depth[i - 1], frontier=len(g.states) - i, refresh=False)
                bar.refresh()
            limit = None
            mem = rss_mb()
            result.peak_rss_mb = max(result.peak_rss_mb, mem)
            if max_states is not None and len(g.states) >= max_states:
                limit = STOP_STATES
            elif memory_mb is not None and mem >= memory_mb:
                limit = STOP_MEMORY
            elif max_seconds is not None and time.perf_counter() - start >= max_seconds:  # wall-clock ok
                limit = STOP_TIME
            if limit is not None:
                if result.violation is None:
                    result.stop = limit
                break
    if bar is not None:
        bar.close()
    if result.violation is None and result.complete:
        _check_liveness(result)
    if result.violation is not None:
        _replay(result.violation, g, cfg, canon)
    result.seconds = time.perf_counter() - start  # wall-clock ok
    result.cpu_seconds = time.process_time() - cpu_start  # wall-clock ok
    result.peak_rss_mb = max(result.peak_rss_mb, rss_mb())
    return result


# --- liveness ---------------------------------------------------------------------------------------------
def strongly_connected_components(n: int, nodes: Iterable[int], succ: Callable[[int], Iterable[int]]) -> list[list[int]]:
    """Iterative Tarjan over the nodes given (edges leaving that set are ignored)."""
    allowed = bytearray(n)
    for v in nodes:
        allowed[v] = 1
    index = [-1] * n
    low = [0] * n
    on_stack = bytearray(n)
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in range(n):
        if not allowed[root] or index[root] >= 0:
            continue
        work = [(root, iter(succ(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = 1
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if not allowed[w]:
                    continue
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = 1
                    work.append((w, iter(succ(w))))
                    advanced = True
                    break
                if on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            if advanced:
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = 0
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def fair_components(g: StateGraph, nodes: Iterable[int], fairness: bool) -> tuple[list[list[int]], int]:
    """The components a fair infinite run can stay in forever, and how many non-trivial ones there were.

    Strong fairness per class: a component is fair when every class enabled somewhere in it is also
    taken inside it. Otherwise the states enabling an untaken class are removed (a fair run cannot
    visit them infinitely often) and the rest is split again (Streett-style refinement).
    """
    n = len(g.states)

    def targets(v: int) -> list[int]:
        return [j for j, _ in g.edges(v)]

    def nontrivial(comp: list[int]) -> bool:
        if len(comp) > 1:
            return True
        v = comp[0]
        return any(j == v for j, _ in g.edges(v))

    first = [c for c in strongly_connected_components(n, nodes, targets) if nontrivial(c)]
    count = len(first)
    work = list(first)
    fair: list[list[int]] = []
    while work:
        comp = work.pop()
        if not fairness:
            fair.append(comp)
            continue
        inside = set(comp)
        enabled: set = set()
        taken: set = set()
        for v in comp:
            for j, aid in g.edges(v):
                key = g.action_fair[aid]
                if key is None:
                    continue
                enabled.add(key)
                if j in inside:
                    taken.add(key)
        bad = enabled - taken
        if not bad:
            fair.append(comp)
            continue
        keep = [v for v in comp if not any(g.action_fair[aid] in bad for _, aid in g.edges(v))]
        if keep:
            work.extend(c for c in strongly_connected_components(n, keep, targets) if nontrivial(c))
    return fair, count


def _check_liveness(result: CheckResult) -> None:
    g = result.graph
    pending = [v for v in range(len(g.states)) if g.pending[v]]
    fair, count = fair_components(g, pending, result.fairness)
    result.nontrivial_sccs = count
    result.fair_sccs = len(fair)
    if not fair:
        return
    comp = min(fair, key=lambda c: (min(g.depth[v] for v in c), min(c)))
    knot = min(comp, key=lambda v: (g.depth[v], v))
    cycle = _cycle_through(g, knot, set(comp))
    stuck = [f"m{i}" for i, m in enumerate(g.states[knot].msgs) if not (m.done or m.dead)]
    why = (f"a {'fair ' if result.fairness else ''}cycle of {len(comp)} state(s) never consumes or "
           f"dead-letters {', '.join(stuck)}")
    result.violation = Violation("liveness", "liveness", why, knot, g.path_to(knot), cycle_ids=cycle)
    result.stop = STOP_VIOLATION


def _cycle_through(g: StateGraph, start: int, inside: set[int]) -> list[int]:
    """The shortest path start -> ... -> start inside a component (ids after start, ending with start)."""
    prev: dict[int, int] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for j, _ in g.edges(v):
            if j not in inside:
                continue
            if j == start:
                path = [start]
                while v != start:
                    path.append(v)
                    v = prev[v]
                path.reverse()
                return path
            if j not in prev:
                prev[j] = v
                queue.append(j)
    return [start]


# --- traces -----------------------------------------------------------------------------------------------
def _replay(v: Violation, g: StateGraph, cfg: ModelConfig, canon: Callable[[State], State]) -> None:
    """Re-run the canonical path on concrete states, so message names stay the same along the trace."""
    concrete = initial_state(cfg)

    def walk(ids: list[int], number: int) -> list[Step]:
        nonlocal concrete
        steps = []
        for sid in ids:
            want = g.states[sid]
            for action, nxt in successors(concrete, cfg):
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


def format_stats(result: CheckResult) -> str:
    st = result.stats()
    cfg = result.config
    head = (f"model check: {cfg.messages} message(s), {cfg.levels} level(s), max retries {cfg.max_retries}, "
            f"crashes {cfg.crashes}, put failures {'unbounded' if cfg.put_failures is None else cfg.put_failures}, "
            f"persist points {cfg.persist_points}, era {cfg.era}"
            + (f", mutants {','.join(sorted(cfg.mutants))}" if cfg.mutants else ""))
    body = (f"  {st['states']} states, {st['edges']} edges, depth {st['depth']}, {st['terminal_states']} terminal, "
            f"{st['nontrivial_sccs']} cyclic component(s) ({st['fair_sccs']} fair); "
            f"{st['seconds']:.2f} s, {st['states_per_second']} states/s, peak {st['peak_rss_mb']:.0f} MiB; "
            f"symmetry {'on' if result.symmetry else 'off'}")
    return head + "\n" + body
