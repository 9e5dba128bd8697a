"""Symmetry reduction: states that differ only by a renaming of interchangeable messages are one state.

Why it is sound: no transition and no property looks at a message's name, only at where its copies
are and at its record (done, dead, duplicated, and the send level while unsent). Two messages with
the same delay level and no history are therefore interchangeable, and so are two sent messages
whose histories are swapped everywhere at once.

The canonical form sorts the message records by the position of each message's first stored copy
(levels in order, then TopicTest, %RETRY%G and %DLQ%G, each in queue order) and renames the copies
to match; messages that appear nowhere follow sorted by their record: unsent ones by send level, and
(model/retire.py's compaction drops processed copies) sent ones whose copies were all dropped, whose
record is then all that is left of them. A renaming of the
messages permutes the records and the names in the queues together, so it leaves this form
unchanged: the form is a canonical representative of the state's orbit.
"""

from __future__ import annotations

from .spec import Copy, Level, Msg, Sched, State, Topic


def canonical(s: State) -> State:
    n = len(s.msgs)
    order: list[int] = []
    seen = [False] * n
    for lv in s.levels:
        for e in lv.entries:
            if not seen[e.msg]:
                seen[e.msg] = True
                order.append(e.msg)
    for tp in s.topics:
        for c in tp.entries:
            if not seen[c.msg]:
                seen[c.msg] = True
                order.append(c.msg)
    for m, _r in s.dlq:
        if not seen[m]:
            seen[m] = True
            order.append(m)
    if len(order) < n:
        unsent = [i for i in range(n) if not seen[i]]
        unsent.sort(key=lambda i: s.msgs[i])
        order.extend(unsent)
    if all(old == new for new, old in enumerate(order)):
        return s
    new_of = [0] * n
    for new, old in enumerate(order):
        new_of[old] = new
    levels = tuple(
        Level(tuple(Sched(new_of[e.msg], e.r, e.wait, e.status, e.dest) for e in lv.entries), lv.cursor, lv.table,
              lv.persisted, lv.running) if lv.entries else lv
        for lv in s.levels)
    topics = tuple(
        Topic(tuple(Copy(new_of[c.msg], c.r, c.acked, c.level) for c in tp.entries), tp.pull, tp.cmem, tp.cper)
        if tp.entries else tp
        for tp in s.topics)
    msgs: tuple[Msg, ...] = tuple(s.msgs[old] for old in order)
    dlq = tuple((new_of[m], r) for m, r in s.dlq)
    return State(s.up, s.crashes, s.faults, s.persists, msgs, levels, topics, s.pq, dlq)


def identity(s: State) -> State:
    return s


def renamings_can_meet(send_levels: tuple[int, ...]) -> bool:
    """Whether two reachable states can be renamings of each other (else canonical forms merge nothing).

    Why they cannot with pairwise distinct send levels: an unsent message's record holds its send level,
    and a sent one leaves a copy with reconsumeTimes 0 that no later step removes (queues are append-only
    logs, a crash keeps them): a unit of its send level's queue, or for level 0 a TopicTest copy that
    names level 0. Retries and dead letters carry reconsumeTimes >= 1. So a renaming that moves a message
    moves one of these marks to a message with another send level, a state that is never reached. The
    checker then skips the canonical form, which here costs time and saves no state.
    """
    return len(set(send_levels)) < len(send_levels)

