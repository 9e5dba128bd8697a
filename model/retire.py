"""Dead-variable reductions once no crash can come: forget what only a crash would read.

Why: with two messages and one crash, nearly every state is past the crash (or can no longer crash),
and there the state still carries three kinds of memory that no later step and no property can read:
- the *persisted copies* of the offsets (``delayOffset.json`` per level, ``consumerOffset.json`` per
  topic) and the persist budget: only a crash (and a restart after it) reads a persisted offset;
- the *processed prefix* of every queue: the units a level's cursor has passed and the copies the
  consumer has pulled and acked (no process-queue item points at them): queues are append-only logs
  and only a crash rewinds a cursor or a pull offset back over them;
- (the status of a unit behind the cursor, DELIVERED / SETTLED / REWOUND, goes with its unit.)
They make states that will behave identically differ, and the state space multiplies by the number of
ways the past can have happened. ``retire`` maps such a state to one representative.

The two reductions (switchable, ``check(retire=..., compact=...)``, ``rmqsim check --no-retire`` /
``--no-compact``):
- **retire** (``retire_offsets``): when no crash can come (crash budget 0, or no crash kind, and the
  broker up), ``persisted := table`` per level when ``persisted <= table``, ``cper := cmem`` per topic
  when ``cper <= cmem``, the persist budget := 0 (no persist point is taken any more), and the units
  behind a cursor that were DELIVERED or REWOUND are SETTLED (only a persist point and a crash tell).
- **compact** (implies retire): also drop each level's longest prefix of units behind its cursor and
  each consumable queue's longest prefix of acked copies behind its pull offset and every process-queue
  item, keeping only units and copies every property already judges harmless (see ``_boring_unit``,
  ``_boring_copy``), and shift the offsets (cursor, offsetTable, delayOffset.json; pull, committed and
  persisted offsets, process-queue items) down by the prefix's length, clamped at 0.

Why it is sound (same violated property, same kind, same verdict; for the checker's acyclic searches only,
where liveness reduces to terminal states):
- P: every property has the same value on a state and on its representative. delayOffset.json and
  consumerOffset.json enter a property only through max(cursor, offsetTable, persisted) and
  max(client, committed, persisted), which the guards keep; a dropped unit or copy made no property
  false (it is boring), and every offset moves with the indices it is compared with (hi - k, clamped
  at 0 only where all offsets below k meet acked copies or delivered units).
- M1: every step of a representative is a step of every state it stands for, to an equivalent state
  (a persist point is the only action the representative lacks; a commit whose offset only moves below
  the dropped prefix is disabled there): so every path of the reduced graph is a path of the model
  (up to the equivalence), and a cycle of the reduced graph would lift to an infinite path of the model,
  whose every step lowers ``spec.progress_rank``: there is none, the reduced graph is acyclic too.
- M2: every step of a state is either a step of its representative to an equivalent state, or it
  changes only what the representative forgets (a persist point; a commit below the prefix), and so
  leads to an equivalent state: every reachable state of the model has its representative reachable.
- T: a representative without successors stands for states whose only steps stay in its class; they end
  in a terminal state of the same class, and ``check_terminal`` reads only what the class shares.
Nothing is forgotten while a crash can come: a crash rewinds the cursors to the persisted offsets and
marks rewound units and acked copies as duplicates. tests/model/test_retire.py checks P, M1, M2 and T on
the whole graphs of the small configurations and every model mutant, and that every verdict, violated
property and kind is the same with the reductions on and off, with no more states.

Why the representative is a state of the model: the checker expands it with ``spec.successors`` (and
checks that every such step lowers the progress rank), and replays a counterexample on concrete states
by matching representatives, so the trace shows the model's real offsets.
"""

from __future__ import annotations

from collections.abc import Callable

from .spec import (
    DELIVERED,
    DEST_DLQ,
    REWOUND,
    SETTLED,
    T_RETRY,
    Level,
    ModelConfig,
    Sched,
    State,
    Topic,
)

_new_tuple = tuple.__new__
_DONE_STATUS = (DELIVERED, SETTLED, REWOUND)
_UNSETTLED = (DELIVERED, REWOUND)


def no_crash_can_come(s: State, cfg: ModelConfig) -> bool:
    return s[0] and (s[1] <= 0 or not cfg.crash_kinds)


def _boring_unit(e: tuple, level: int, cfg: ModelConfig) -> bool:
    """A unit behind the cursor that makes no property false: delivered (not PENDING, not RESETTLED), not a
    dead letter routed through a level, within the reconsume bound, a retry at its retry level."""
    if e[3] not in _DONE_STATUS or e[4] == DEST_DLQ or e[1] > cfg.max_retries:
        return False
    if e[4] == T_RETRY:
        want = 2 + e[1]
        if want > cfg.levels:
            want = cfg.levels
        return level == want
    return True


def _level_prefix(lv: Level, level: int, cfg: ModelConfig) -> int:
    entries, cursor = lv[0], lv[1]
    k = 0
    while k < cursor and _boring_unit(entries[k], level, cfg):
        k += 1
    return k


def _topic_prefix(tp: Topic, t: int, pq: tuple, cfg: ModelConfig) -> int:
    limit = tp[1]
    for topic, offset, _stage in pq:
        if topic == t and offset < limit:
            limit = offset
    entries, top = tp[0], cfg.max_retries
    k = 0
    while k < limit:
        c = entries[k]
        if not c[2] or c[1] > top:
            break
        k += 1
    return k


def _settled_behind(entries: tuple, cursor: int) -> tuple:
    """The units behind the cursor marked SETTLED where they were DELIVERED or REWOUND: the difference is read
    only by a persist point (which settles DELIVERED ones) and a crash (which rewinds from the cursor on)."""
    return tuple(_new_tuple(Sched, (e[0], e[1], e[2], SETTLED, e[4])) if i < cursor and e[3] in _UNSETTLED else e
                 for i, e in enumerate(entries))


def retire(s: State, cfg: ModelConfig, compact: bool) -> State:
    """The representative of ``s`` (``s`` itself while a crash can come, or when nothing is forgotten)."""
    if not no_crash_can_come(s, cfg):
        return s
    up, crashes, faults, persists, msgs, levels, topics, pq, dlq = s
    changed = persists != 0
    new_levels = []
    for li, lv in enumerate(levels):
        entries, cursor, table, persisted, running = lv
        k = _level_prefix(lv, li + 1, cfg) if compact else 0
        if k:
            entries = entries[k:]
            cursor -= k
            table = table - k if table > k else 0
            persisted = persisted - k if persisted > k else 0
        settle = False
        for i in range(cursor):
            if entries[i][3] in _UNSETTLED:
                settle = True
                entries = _settled_behind(entries, cursor)
                break
        if persisted <= table:
            persisted = table
        if k or settle or persisted != lv[3]:
            changed = True
            lv = _new_tuple(Level, (entries, cursor, table, persisted, running))
        new_levels.append(lv)
    new_topics = []
    for t, tp in enumerate(topics):
        entries, pull, cmem, cper = tp
        k = _topic_prefix(tp, t, pq, cfg) if compact else 0
        if k:
            entries = entries[k:]
            pull -= k
            cmem = cmem - k if cmem > k else 0
            cper = cper - k if cper > k else 0
            pq = tuple((topic, offset - k if topic == t else offset, stage) for topic, offset, stage in pq)
        if cper <= cmem:
            cper = cmem
        if k or cper != tp[3]:
            changed = True
            tp = _new_tuple(Topic, (entries, pull, cmem, cper))
        new_topics.append(tp)
    if not changed:
        return s
    return _new_tuple(State, (up, crashes, faults, 0, msgs, tuple(new_levels), tuple(new_topics), pq, dlq))


def reducer(cfg: ModelConfig, retire_offsets: bool, compact: bool) -> Callable[[State], State] | None:
    """The representative function for these switches, or None when both are off."""
    if not (retire_offsets or compact):
        return None

    def representative(s: State) -> State:
        return retire(s, cfg, compact)

    return representative
