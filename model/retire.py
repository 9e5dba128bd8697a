"""Dead-variable reductions: forget what no later step and no property can read.

Why: with two messages and one crash, nearly every state is past the crash (or can no longer crash),
and the state still carries memory that nothing reads any more:
- the *persisted copies* of the offsets (``delayOffset.json`` per level, ``consumerOffset.json`` per
  topic), the persist budget, and whether a unit behind a cursor was DELIVERED, SETTLED or REWOUND:
  only a crash (and the restart after it) reads them, once no crash can come;
- the *processed prefix* of every queue: queues are append-only logs, and a unit or a copy that every
  offset a crash can rewind to has passed is never read again.
They make states that behave identically differ, and the state space multiplies by the number of ways
the past can have happened. ``retire`` maps a state to one representative of the states that differ
only in what is forgotten.

The two reductions (switchable: ``check(retire=..., compact=...)``, ``rmqsim check --no-retire`` /
``--no-compact``; the checker applies them only on searches whose graph is proven acyclic):
- **retire**: once no crash can come (crash budget 0, or no crash kind, and the broker up),
  ``persisted := table`` per level where ``persisted <= table``, ``cper := cmem`` per topic where
  ``cper <= cmem``, the persist budget := 0 (a persist point would change only what is forgotten), and the
  units behind a cursor that were DELIVERED or REWOUND become SETTLED.
- **compact** (implies retire): also drop each level's longest prefix of *boring* units behind every offset
  that can become its cursor again (the cursor, and while a crash can come offsetTable and
  delayOffset.json too; none under ``persist_before_load``, whose restart reads the level from 0), and
  each consumable queue's longest prefix of acked copies behind the pull offset and every process-queue
  item (and while a crash can come the committed and persisted offsets too); shift every offset of the
  queue and the process-queue items down by the prefix's length, clamped at 0. A boring unit or copy is
  one that makes no property false (``_boring_unit``; a copy: acked, reconsumeTimes within the bound).

Why it is sound (same verdict, same violated property and kind):
- P: every property has the same value on a state and on its representative. delayOffset.json and
  consumerOffset.json enter a property only through max(cursor, offsetTable, persisted) and
  max(client, committed, persisted), which the guards keep; a dropped unit or copy made no property false,
  and the offsets move with the indices they are compared with (clamped at 0 only where every index below
  the prefix holds a delivered unit or an acked copy).
- M1: every step of a representative is a step of every state it stands for, to an equivalent state (the
  only steps the representative lacks are a persist point and a commit whose offset moves only below the
  dropped prefix). So every path of the reduced graph is a path of the model up to the equivalence, and a
  cycle of the reduced graph would lift to an infinite path of the model, whose every step lowers
  ``spec.progress_rank``: there is none, the reduced graph is acyclic too (the checker still checks the
  rank on every step it expands).
- M2: every step of a state is a step of its representative to an equivalent state, or changes only what
  the representative forgets and so stays in the class: every reachable state has its representative
  reachable, and with it every violation.
- T: a representative without successors stands for states whose steps all stay in its class; they end in a
  terminal state of that class, and ``check_terminal`` judges every state of a class alike.
tests/model/test_retire.py checks P, M1, M2 and T on the whole graphs of the small configurations, every
model mutant and the default bounds, that forgetting the persisted offsets while a crash can come is caught,
and that every verdict, violated property and kind is the same with the reductions on and off, with no more
states.

The representative is a state of the model: the checker expands it with ``spec.successors``, and replays a
counterexample on concrete states by matching representatives, so a trace shows the model's real offsets.
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


def _level_prefix(lv: Level, level: int, cfg: ModelConfig, calm: bool) -> int:
    """How many units at the head of the level no step reads again: behind the cursor once no crash can come,
    else behind every offset a crash can rewind the cursor to (offsetTable, delayOffset.json), and none under
    ``persist_before_load`` (its restart reads the level from 0)."""
    entries, cursor = lv[0], lv[1]
    if calm:
        limit = cursor
    elif "persist_before_load" in cfg.mutants:
        return 0
    else:
        limit = min(cursor, lv[2], lv[3])
    k = 0
    while k < limit and _boring_unit(entries[k], level, cfg):
        k += 1
    return k


def _topic_prefix(tp: Topic, t: int, pq: tuple, cfg: ModelConfig, calm: bool) -> int:
    """How many acked copies at the head of the queue no step reads again: behind the pull offset and every
    process-queue item, and while a crash can come also behind the offsets it rewinds the pull offset to."""
    limit = tp[1] if calm else min(tp[1], tp[2], tp[3])
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


def _retire_levels(levels: tuple, cfg: ModelConfig, calm: bool, compact: bool) -> tuple:
    """The levels' part of the representative (``levels`` itself when nothing changes)."""
    new_levels = []
    changed = False
    for li, lv in enumerate(levels):
        entries, cursor, table, persisted, running = lv
        k = _level_prefix(lv, li + 1, cfg, calm) if compact else 0
        if k:
            entries = entries[k:]
            cursor -= k
            table = table - k if table > k else 0
            persisted = persisted - k if persisted > k else 0
        settle = False
        if calm:
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
    return tuple(new_levels) if changed else levels


def _retire_topics(topics: tuple, pq: tuple, cfg: ModelConfig, calm: bool, compact: bool) -> tuple[tuple, tuple]:
    """The topics' and the process queue's part of the representative (the same objects when nothing changes)."""
    new_topics = []
    changed = False
    for t, tp in enumerate(topics):
        entries, pull, cmem, cper = tp
        k = _topic_prefix(tp, t, pq, cfg, calm) if compact else 0
        if k:
            entries = entries[k:]
            pull -= k
            cmem = cmem - k if cmem > k else 0
            cper = cper - k if cper > k else 0
            pq = tuple((topic, offset - k if topic == t else offset, stage) for topic, offset, stage in pq)
        if calm and cper <= cmem:
            cper = cmem
        if k or cper != tp[3]:
            changed = True
            tp = _new_tuple(Topic, (entries, pull, cmem, cper))
        new_topics.append(tp)
    return (tuple(new_topics), pq) if changed else (topics, pq)


def retire(s: State, cfg: ModelConfig, compact: bool) -> State:
    """The representative of ``s`` (``s`` itself when nothing is forgotten)."""
    return reducer(cfg, True, compact)(s)


# Entries each of the representative's two memos holds at most: past it, the memo starts again empty. Without a
# bound they grew about 64 bytes a state reached on m3/c1 (61 MiB after 1 M states; some 150 MiB a level at depth
# 23 in every --workers process). A pure memo: the bound changes no state, only how often a part is recomputed.
# Measured (serial): m3/c1 at 1.5 M states held 28 868 + 128 618 entries unbounded, 211 MiB peak RSS; bounded,
# 176 MiB, with 185 000 more parts recomputed, lost in the CPU time's noise (108.8 s against 116.0 s); m2/c1
# complete peaks at 6 502 + 37 776 entries, below the bound. properties.successor_safety bounds its memos the same
# way, at the same size.
MEMO_BOUND = 1 << 16


def reducer(cfg: ModelConfig, retire_offsets: bool, compact: bool) -> Callable[[State], State] | None:
    """The representative function for these switches, or None when both are off.

    Speed: it runs on every successor the checker generates, and a search meets few distinct levels and
    (topics, process queue) pairs (thousands where it meets millions of states, and those of one BFS level
    mostly again in the next), so both parts are memoised, keyed by the parts themselves (the dictionaries
    keep them alive, so equal keys are equal parts), each memo emptied when it passes ``MEMO_BOUND`` entries
    (read here, so that a test can lower it). ``representative.memos``: the two dictionaries, for the tests.
    """
    if not (retire_offsets or compact):
        return None
    bound = MEMO_BOUND
    levels_memo: dict = {}
    topics_memo: dict = {}
    # In front of the levels' memo, its last answer by identity: the successors of one state come one after the
    # other and mostly share its levels (60 % on m2/c1), found then without hashing the nested parts (8 % less time
    # in here on m2/c1's successors). Not for the topics: 15 % share them and the process queue, and there it cost
    # more than it saved (measured).
    last_levels: list = [None, None, None]  # [levels, calm, its part]

    def representative(s: State) -> State:
        up, crashes, faults, persists, msgs, levels, topics, pq, dlq = s
        calm = no_crash_can_come(s, cfg)
        if not (calm or compact):
            return s
        if levels is last_levels[0] and calm is last_levels[1]:
            new_levels = last_levels[2]
        else:
            key = (calm, levels)
            new_levels = levels_memo.get(key)
            if new_levels is None:
                if len(levels_memo) >= bound:
                    levels_memo.clear()
                new_levels = levels_memo[key] = _retire_levels(levels, cfg, calm, compact)
            last_levels[:] = levels, calm, new_levels
        key = (calm, topics, pq)
        parts = topics_memo.get(key)
        if parts is None:
            if len(topics_memo) >= bound:
                topics_memo.clear()
            parts = topics_memo[key] = _retire_topics(topics, pq, cfg, calm, compact)
        new_topics, new_pq = parts
        kept = 0 if calm else persists
        if new_levels is levels and new_topics is topics and new_pq is pq and kept == persists:
            return s
        return _new_tuple(State, (up, crashes, faults, kept, msgs, new_levels, new_topics, new_pq, dlq))

    representative.memos = (levels_memo, topics_memo)  # type: ignore[attr-defined]
    return representative
