"""Partial-order reduction: expand a stubborn subset of a state's enabled actions, not all of them.

Why: where two actions commute, exploring both orders reaches the same state twice; a stubborn set
(Valmari; Peled's ample sets) picks enough actions that every end state and every violation stays
reachable. The checker calls ``reduce`` only on searches whose graph is proven acyclic (every edge
lowers ``spec.progress_rank``, checked on the full successor list before this reduction runs), so the
cycle proviso C3 holds vacuously; with the edge store (liveness on a cyclic graph) POR is off.

Action classes (one class = the actions of one actor on one queue, whatever unit they carry):
``("send", L)`` sends to level L (0: straight to TopicTest), ``("deliver", l)``, ``("tick",)``,
``("commit", t)`` (the client's offset_commit of topic t), ``("persist", file)``, ``("pfault", L)``
(a failed send of a level-L message), ``("dfault", l)`` (a failed delivery or rebuild at level l) and
``("consume",)`` (every consume, pull or resubmit, success or failure).

Independence, from the State layout (what each class reads and writes):
- send L>0: msgs[i], appends to levels[L].entries (a unit that waits L >= 1 ticks);
- send 0: msgs[i], appends to topics[T_REAL].entries;
- deliver l: levels[l] (entries[cursor].status, cursor, table), appends to topics[dest] or to dlq (and
  msgs[m].dead); reads entries[cursor].wait == 0;
- tick: every entry's wait (the step is the smallest positive wait);
- commit t: topics[t].cmem; enabled while pull == len(entries) and the client offset != cmem;
- persist delayOffset.json: every level's persisted and DELIVERED -> SETTLED; consumerOffset.json: every
  topic's cper := cmem; both spend the one persist budget;
- pfault / dfault: the one fault budget (and the level's running flag); a send / delivery disables the
  failure of the same unit;
- consume: a failure leaves a send-back due, which disables every other action until it ran, and the
  send-back appends a waiting unit: consume is dependent on everything (global);
- crash and restart rewrite every memory field: dependent on everything. POR applies only in the
  *quiet* region: the broker up, no crash left, no process-queue item and no consume enabled (so crash,
  restart and send-backs never appear in a stubborn set, and consume only as a disabled member whose
  enablers, the deliveries and send 0, join the set).
Dependent pairs that remain: send L with send L (queue order), with its put failure and with tick
(the new unit's wait); deliver with deliver of a level that may still put to the same queue, with its
failure, the delay-offset persist, commit of its destination (an append disables it) and send 0 to
TopicTest; commit t with send 0 (t = TopicTest) and the consumer-offset persist; the two persists with
each other, the faults with each other. Appends commute with the deliver at a queue's cursor and with
a pull, which read units already there. ``tests/model/test_por.py`` checks on whole graphs that every
action a stubborn set postpones commutes with every action it keeps.

Visibility: the search stops at the first violation, and a stubborn set omits actions only when each
of its actions never *un-violates* a property (a violated property stays violated after it): then a
violation reachable through postponed actions is reachable after the stubborn action too. Four
properties latch (reconsume_times_bounded, dlq_after_max_retries, retry_schedule, bounded_redelivery:
queues are append-only and RESETTLED is final). Three do not: delay_offset_covers_delivered (a crash
rewinds the cursor), consumer_offset_covers_acked (a due send-back hides the client's offset; consumes
ack copies; a crash rewinds) and no_pending_and_dead (a crash marks duplicates, consumes and deliveries
move copies). None of them is un-violated by the actions a stubborn set may hold here: tick changes
only waits, which no property reads; a send appends past every offset; a delivery sets the status of
the unit at the cursor (every offset is <= the cursor while the broker is up) and moves a dead
message's pending unit into a queue where it is still pending; a commit (pull == len, no process
queue) sets cmem to the pull offset, which is >= cmem already; a persist copies an offset that is
already <= the cursor / the broker's offset; a put failure or (5.3.3, no mutant moving the cursor) a
failed delivery spends only the budget. tests/model/test_por.py checks this on whole graphs, and that
every verdict (and the violated property's name) is the same with and without POR.

What it saves, and why not more: little (3 % of m1/c1, 12 % of m2/c0). Most states have a crash left
(crash disables everything) or a consume enabled (a failed consume forces its send-back, which appends a
waiting unit: dependent on tick, sends, faults and commits), and a delivery still waiting for its unit
pulls tick into every set. The interleavings the model has are, mostly, real dependencies.

Why it keeps terminal states and violations: the classic argument (D1 + a key action gives every end
state; a never-un-violating stubborn action keeps every violation), by induction on the progress rank.
Symmetry: the stubborn set is computed on the canonical state; sends of the same level are one class,
so the one send ``successors(symmetric=True)`` offers stands for its renamings.
"""

from __future__ import annotations

from .spec import (
    CONSUMER_FILE,
    DELAY_FILE,
    DEST_DLQ,
    SITE_PUT,
    SITE_SCHEDULE_DELIVER,
    SITE_SCHEDULE_REBUILD,
    T_REAL,
    T_RETRY,
    TOPIC,
    ModelConfig,
    State,
)

CONSUME = ("consume",)
TICK = ("tick",)
PERSIST_DELAY = ("persist", DELAY_FILE)
PERSIST_CONSUMER = ("persist", CONSUMER_FILE)


def applicable(cfg: ModelConfig) -> bool:
    """Whether POR may run for these bounds at all.

    Not with unbounded put failures (the graph has cycles; the checker keeps edges anyway), and not with
    ``offset_from_task_start``: that mutant's delivery reads whether the *next* unit is due, which ties
    every delivery to ticks and sends (its independence would need another table)."""
    return cfg.put_failures is not None and "offset_from_task_start" not in cfg.mutants


def _quiet(s: State, cfg: ModelConfig) -> bool:
    """The region POR works in: the broker up with no crash left, no process-queue item, no consume enabled.

    Persist points and put failures may be left (they are classes of their own); with the two mutants
    whose failed delivery moves the cursor (it may un-hide a dead message's pending unit), not faults."""
    if not s.up or s.crashes > 0 or s.pq:
        return False
    if s.faults > 0 and ("skip_failed_delivery" in cfg.mutants or "drop_on_exception" in cfg.mutants):
        return False
    for tp in s.topics:
        if tp.pull < len(tp.entries):
            return False  # a consume is enabled
    return True


def _class(s: State, action) -> tuple | None:
    verb = action.verb
    if verb == "tick":
        return TICK
    if verb == "deliver":
        return ("deliver", action.arg("level"))
    if verb == "send":
        return ("send", action.arg("level"))
    if verb == "offset_commit":
        return ("commit", T_REAL if action.arg("topic") == TOPIC else T_RETRY)
    if verb == "persist":
        return ("persist", action.arg("file"))
    if verb == "fault":
        site = action.arg("site")
        if site == SITE_PUT:
            return ("pfault", s.msgs[action.arg("msg")].level)
        if site in (SITE_SCHEDULE_DELIVER, SITE_SCHEDULE_REBUILD):
            return ("dfault", action.arg("level"))
    return None


def _may_put_to(s: State, li: int, dest: int) -> bool:
    """Whether level li+1 may still deliver a unit to ``dest`` without a consume (a send-back needs one):
    a unit at or past its cursor with that destination, or an unsent message of that level (TopicTest)."""
    lv = s.levels[li]
    for e in lv.entries[lv.cursor:]:
        if e.dest == dest:
            return True
    return dest == T_REAL and any(m.level == li + 1 for m in s.msgs)


def _faults(s: State) -> list[tuple]:
    """Every fault class (they share one budget, so each depends on all the others)."""
    if s.faults <= 0:
        return []
    n = len(s.levels)
    return [("pfault", level) for level in range(n + 1)] + [("dfault", level) for level in range(1, n + 1)]


def _persists(s: State) -> list[tuple]:
    return [PERSIST_DELAY, PERSIST_CONSUMER] if s.persists > 0 else []


def _dependents(s: State, x: tuple) -> list[tuple]:
    """Classes that may not commute with the enabled class ``x`` along a path of other classes (or that
    ``x`` may disable)."""
    kind = x[0]
    n = len(s.levels)
    if kind == "tick":
        return [("send", level) for level in range(1, n + 1)] + [CONSUME]
    if kind == "send":  # the send disables its put failure
        out = [CONSUME, ("pfault", x[1])]
        if x[1] > 0:
            return out + [TICK]
        return out + [("commit", T_REAL)] + [("deliver", li + 1) for li in range(n) if _may_put_to(s, li, T_REAL)]
    if kind == "deliver":
        li = x[1] - 1
        lv = s.levels[li]
        dest = lv.entries[lv.cursor].dest
        out = [CONSUME, ("dfault", x[1]), PERSIST_DELAY]
        out += [("deliver", lj + 1) for lj in range(n) if lj != li and _may_put_to(s, lj, dest)]
        if dest != DEST_DLQ:
            out.append(("commit", dest))
        if dest == T_REAL:
            out.append(("send", 0))
        return out
    if kind == "commit":
        out = [CONSUME, PERSIST_CONSUMER] + [("deliver", li + 1) for li in range(n) if _may_put_to(s, li, x[1])]
        if x[1] == T_REAL:
            out.append(("send", 0))
        return out
    if kind == "pfault":
        return _faults(s) + [("send", x[1]), CONSUME]
    if kind == "dfault":
        return _faults(s) + [("deliver", x[1]), CONSUME]
    if kind == "persist":
        out = [CONSUME] + _persists(s)
        if x == PERSIST_DELAY:
            return out + [("deliver", li + 1) for li in range(n)]
        return out + [("commit", T_REAL), ("commit", T_RETRY)]
    return []  # consume: never enabled in a quiet state


def _enablers(s: State, x: tuple) -> list[tuple]:
    """A necessary enabling set of the disabled class ``x``: every path that enables it takes one of them."""
    kind = x[0]
    n = len(s.levels)
    if kind == "consume":  # a copy must reach TopicTest or %RETRY%G first
        return [("deliver", li + 1) for li in range(n)] + [("send", 0)]
    if kind == "deliver":
        lv = s.levels[x[1] - 1]
        if lv.cursor < len(lv.entries):
            return [TICK]  # the unit at the cursor waits; nothing else moves a cursor in a quiet state
        return [("send", x[1]), CONSUME]  # a new unit: a send or a send-back (after a consume)
    if kind == "tick":  # nothing waits: a new waiting unit comes from a send or a send-back
        return [("send", level) for level in range(1, n + 1)] + [CONSUME]
    if kind == "commit":  # pull == len and the offset is committed: only a consume moves them
        return [CONSUME]
    if kind == "dfault":  # no budget: never again; else as its delivery
        return _enablers(s, ("deliver", x[1])) if s.faults > 0 else []
    if kind == "persist":
        if s.persists <= 0:
            return []
        if x == PERSIST_DELAY:  # offsetTable == delayOffset.json, nothing delivered since: a delivery
            return [("deliver", li + 1) for li in range(n)]
        return [("commit", T_REAL), ("commit", T_RETRY), CONSUME]  # cmem moves by a commit or a pull
    return []  # send, put failure: an unsent message never appears again, and the budget never grows


def _closure(s: State, found: set, todo: list, enabled: set) -> set:
    """Close ``found`` under the rules: an enabled class brings its dependents, a disabled one its enablers."""
    while todo:
        x = todo.pop()
        more = _dependents(s, x) if x in enabled else _enablers(s, x)
        for y in more:
            if y not in found:
                found.add(y)
                todo.append(y)
    return found


def reduce(s: State, cfg: ModelConfig, succ: list) -> list:
    """The successors of ``s`` through a smallest stubborn set, or ``succ`` itself when none is smaller.

    Every enabled class in a quiet state has consume among its dependents, so every stubborn set holds
    the closure of (disabled) consume: when that closure has an enabled class it is the smallest set;
    else each enabled class is tried as the seed on top of it."""
    if len(succ) < 2 or not _quiet(s, cfg):
        return succ
    classes = []
    for action, _nxt in succ:
        c = _class(s, action)
        if c is None:
            return succ  # an action this module has no table for: expand fully
        classes.append(c)
    enabled = set(classes)
    if len(enabled) < 2:
        return succ
    base = _closure(s, {CONSUME}, [CONSUME], enabled)
    best = base & enabled
    if not best:
        best = enabled
        for seed in sorted(enabled):
            chosen = _closure(s, base | {seed}, [seed], enabled) & enabled
            if len(chosen) < len(best):
                best = chosen
    if len(best) == len(enabled):
        return succ
    return [pair for pair, c in zip(succ, classes, strict=True) if c in best]
