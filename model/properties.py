"""The properties the checker proves on the model: safety on every state, checks of terminal states.

Names follow DESIGN.md's invariants where one exists (``no_loss``, ``dlq_after_max_retries``,
``retry_schedule``); the others state a rule of ROCKETMQ.md in the model's terms. Each check returns
a sentence that explains the violation, or None.
"""

from __future__ import annotations

from collections.abc import Callable

from .spec import (
    AWAIT_SEND_BACK,
    DEST_DLQ,
    PENDING,
    RESETTLED,
    T_RETRY,
    TOPIC_NAMES,
    ModelConfig,
    State,
    client_offset,
)


def delay_offset_covers_delivered(s: State, cfg: ModelConfig) -> str | None:
    """No delay-level offset (cursor, offsetTable, delayOffset.json) passes a never-delivered unit."""
    for li, lv in enumerate(s.levels):
        hi = max(lv.cursor, lv.table, lv.persisted)
        for i in range(min(hi, len(lv.entries))):
            e = lv.entries[i]
            if e.status == PENDING:
                which = [n for n, v in (("cursor", lv.cursor), ("offsetTable", lv.table),
                                        ("delayOffset.json", lv.persisted)) if v > i]
                return (f"level {li + 1}: {' and '.join(which)} passed unit {i} (m{e.msg}, reconsumeTimes {e.r}), "
                        f"which was never delivered to {TOPIC_NAMES[e.dest]}")
    return None


def consumer_offset_covers_acked(s: State, cfg: ModelConfig) -> str | None:
    """No consume offset (client, broker memory, consumerOffset.json) passes an un-acked message."""
    # The client updates its offset store after processConsumeResult, so not while a send-back is due.
    settled = s.up and not any(stage == AWAIT_SEND_BACK for _t, _o, stage in s.pq)
    for t, tp in enumerate(s.topics):
        client = client_offset(s, t, cfg) if settled else 0
        hi = max(client, tp.cmem, tp.cper)
        for i in range(min(hi, len(tp.entries))):
            c = tp.entries[i]
            if not c.acked:
                which = [n for n, v in (("the client's offset", client), ("the broker's offset", tp.cmem),
                                        ("consumerOffset.json", tp.cper)) if v > i]
                return (f"{TOPIC_NAMES[t]}: {' and '.join(which)} passed offset {i} (m{c.msg}), which was "
                        f"neither consumed successfully nor sent back")
    return None


def reconsume_times_bounded(s: State, cfg: ModelConfig) -> str | None:
    """A retry copy carries at most max reconsumeTimes; a dead letter at most max + 1."""
    top = cfg.max_retries
    for li, lv in enumerate(s.levels):
        for e in lv.entries:
            limit = top + 1 if e.dest == DEST_DLQ else top
            if e.r > limit:
                return (f"m{e.msg} was scheduled at level {li + 1} with reconsumeTimes {e.r} > {limit} "
                        f"(max reconsume times {top})")
    for t, tp in enumerate(s.topics):
        for c in tp.entries:
            if c.r > top:
                return f"m{c.msg} was stored in {TOPIC_NAMES[t]} with reconsumeTimes {c.r} > max {top}"
    for m, r in s.dlq:
        if r > top + 1:
            return f"m{m} was dead-lettered with reconsumeTimes {r} > max + 1 = {top + 1}"
    return None


def dlq_after_max_retries(s: State, cfg: ModelConfig) -> str | None:
    """A dead letter carries exactly max + 1 and reaches %DLQ% at once, never through a delay level."""
    want = cfg.max_retries + 1
    for m, r in s.dlq:
        if r != want:
            return f"m{m} reached %DLQ% with reconsumeTimes {r}, expected max + 1 = {want}"
    for li, lv in enumerate(s.levels):
        for e in lv.entries:
            if e.dest == DEST_DLQ:
                return (f"the dead letter of m{e.msg} was routed through delay level {li + 1} "
                        f"instead of reaching %DLQ% at once")
    return None


def retry_schedule(s: State, cfg: ModelConfig) -> str | None:
    """The k-th retry waits delay level 3 + (k - 1), clamped to the last level."""
    for li, lv in enumerate(s.levels):
        for e in lv.entries:
            if e.dest == T_RETRY:
                want = max(1, min(3 + e.r - 1, cfg.levels))
                if li + 1 != want:
                    return (f"retry {e.r} of m{e.msg} was scheduled at level {li + 1} "
                            f"({cfg.delay(li + 1)} s), expected level {want} ({cfg.delay(want)} s)")
    return None


def bounded_redelivery(s: State, cfg: ModelConfig) -> str | None:
    """A delivery covered by a persist point or a graceful shutdown never happens again."""
    for li, lv in enumerate(s.levels):
        for i, e in enumerate(lv.entries):
            if e.status == RESETTLED:
                return (f"level {li + 1} unit {i} (m{e.msg}) was delivered again although a persist point "
                        f"or a graceful shutdown had covered its delivery")
    return None


def no_pending_and_dead(s: State, cfg: ModelConfig) -> str | None:
    """A dead-lettered message has no retry still under way (unless a crash duplicated it)."""
    for i, m in enumerate(s.msgs):
        if not m.dead or m.dup:
            continue
        for li, lv in enumerate(s.levels):
            for e in lv.entries[lv.cursor:]:
                if e.msg == i and e.status == PENDING and e.dest != DEST_DLQ:
                    return f"m{i} is in %DLQ% and still waits at delay level {li + 1}"
        for t, tp in enumerate(s.topics):
            for c in tp.entries[tp.pull:]:
                if c.msg == i and not c.acked:
                    return f"m{i} is in %DLQ% and still waits to be consumed from {TOPIC_NAMES[t]}"
        for t, o, _stage in s.pq:
            if s.topics[t].entries[o].msg == i:
                return f"m{i} is in %DLQ% and still in the consumer's process queue"
    return None


SAFETY: tuple[tuple[str, Callable[[State, ModelConfig], str | None]], ...] = (
    ("delay_offset_covers_delivered", delay_offset_covers_delivered),
    ("consumer_offset_covers_acked", consumer_offset_covers_acked),
    ("reconsume_times_bounded", reconsume_times_bounded),
    ("dlq_after_max_retries", dlq_after_max_retries),
    ("retry_schedule", retry_schedule),
    ("bounded_redelivery", bounded_redelivery),
    ("no_pending_and_dead", no_pending_and_dead),
)


def _plainly_safe(s: State, cfg: ModelConfig) -> bool:
    """One pass that is True only if every property above holds (the checker's hot path).

    It tests the same conditions as the functions above, fused; when it says False the functions
    run one by one to name the property and explain it (a test keeps the two in agreement).
    """
    top = cfg.max_retries
    last = cfg.levels
    for li, lv in enumerate(s.levels):
        hi = lv.cursor if lv.cursor > lv.table else lv.table
        if lv.persisted > hi:
            hi = lv.persisted
        for i, e in enumerate(lv.entries):
            status = e.status
            if status == RESETTLED or (status == PENDING and i < hi):
                return False
            dest = e.dest
            if dest == DEST_DLQ:
                return False
            if e.r > top:
                return False
            if dest == T_RETRY:
                want = 2 + e.r
                if want > last:
                    want = last
                if li + 1 != want:
                    return False
    settled = s.up and not any(stage == AWAIT_SEND_BACK for _t, _o, stage in s.pq)
    for t, tp in enumerate(s.topics):
        hi = tp.cmem if tp.cmem > tp.cper else tp.cper
        if settled:
            client = client_offset(s, t, cfg)
            if client > hi:
                hi = client
        for i, c in enumerate(tp.entries):
            if c.r > top or (i < hi and not c.acked):
                return False
    for _m, r in s.dlq:
        if r != top + 1:
            return False
    if any(m.dead and not m.dup for m in s.msgs):
        return no_pending_and_dead(s, cfg) is None
    return True


def _levels_safe(levels: tuple, p_levels: tuple, cfg: ModelConfig) -> bool:
    """The levels' part of ``_plainly_safe``, skipping the levels that are ``p_levels``' (safe) objects."""
    top, last = cfg.max_retries, cfg.levels
    for li, lv in enumerate(levels):
        if lv is p_levels[li]:
            continue
        entries, cursor, table, persisted, _running = lv
        hi = cursor if cursor > table else table
        if persisted > hi:
            hi = persisted
        for i, e in enumerate(entries):
            status = e[3]
            if status == RESETTLED or (status == PENDING and i < hi):
                return False
            dest = e[4]
            if dest == DEST_DLQ:
                return False
            if e[1] > top:
                return False
            if dest == T_RETRY:
                want = 2 + e[1]
                if want > last:
                    want = last
                if li + 1 != want:
                    return False
    return True


def _topics_safe(s: State, parent: State, cfg: ModelConfig) -> bool:
    """The topics' part of ``_plainly_safe`` (it reads the topics, ``up`` and the process queue), skipping the
    topics that are the (safe) parent's objects when ``up`` and the process queue are the parent's too."""
    topics, pq, up = s[6], s[7], s[0]
    p_topics = parent[6]
    top = cfg.max_retries
    same_context = pq is parent[7] and up == parent[0]  # what a topic's checks read besides the topic
    settled = up
    if up:
        for item in pq:
            if item[2] == AWAIT_SEND_BACK:
                settled = False
                break
    for t, tp in enumerate(topics):
        if same_context and tp is p_topics[t]:
            continue
        hi = tp[2] if tp[2] > tp[3] else tp[3]
        if settled:
            client = client_offset(s, t, cfg)
            if client > hi:
                hi = client
        for i, c in enumerate(tp[0]):
            if c[1] > top or (i < hi and not c[2]):
                return False
    return True


def safe_successor(parent: State, s: State, cfg: ModelConfig) -> bool:
    """``_plainly_safe(s, cfg)`` for a successor ``s`` of a ``parent`` that violates no safety property.

    Why: a successor shares most of its parts with its parent (the very same objects), and each part of the
    fused check reads only some parts: a level's checks read that level, a topic's read the topic, ``up`` and
    the process queue, the dead letters' read ``dlq``. The parts that are the parent's objects passed when the
    parent was checked, so only the others are checked again; ``no_pending_and_dead`` reads everything and runs
    whenever a message is dead and not duplicated, as in ``_plainly_safe``.
    """
    return successor_safety(cfg, memo_size=0)(parent, s)


def successor_safety(cfg: ModelConfig, memo_size: int = 1 << 16) -> Callable[[State, State], bool]:
    """``safe_successor`` for one search, with the verdicts of the levels' and the topics' parts remembered.

    Why: model/retire.py's representatives are built from a few thousand distinct part objects (its memos hand
    out the same objects again), so a part's verdict is looked up by the object's identity. An entry keeps its
    objects alive, so their ids cannot be reused while it stands; at ``memo_size`` entries the memo starts over
    (without retire's memos the parts are fresh objects and nothing would be found again).
    """
    level_memo: dict[int, tuple[tuple, bool]] = {}
    topic_memo: dict[tuple[int, int, bool], tuple[tuple, tuple, bool]] = {}
    top = cfg.max_retries

    def safe(parent: State, s: State) -> bool:
        levels = s[5]
        if levels is not parent[5]:
            known = level_memo.get(id(levels))
            if known is not None and known[0] is levels:
                if not known[1]:
                    return False
            else:
                ok = _levels_safe(levels, parent[5], cfg)
                if memo_size:
                    if len(level_memo) >= memo_size:
                        level_memo.clear()
                    level_memo[id(levels)] = (levels, ok)
                if not ok:
                    return False
        topics, pq, up = s[6], s[7], s[0]
        if topics is not parent[6] or pq is not parent[7] or up != parent[0]:
            key = (id(topics), id(pq), up)
            known = topic_memo.get(key)
            if known is not None and known[0] is topics and known[1] is pq:
                if not known[2]:
                    return False
            else:
                ok = _topics_safe(s, parent, cfg)
                if memo_size:
                    if len(topic_memo) >= memo_size:
                        topic_memo.clear()
                    topic_memo[key] = (topics, pq, ok)
                if not ok:
                    return False
        dlq = s[8]
        if dlq is not parent[8]:
            for _m, r in dlq:
                if r != top + 1:
                    return False
        for m in s[4]:
            if m[2] and not m[3]:
                return no_pending_and_dead(s, cfg) is None
        return True

    return safe


def check_safety(s: State, cfg: ModelConfig) -> tuple[str, str] | None:
    """(property, explanation) of the first safety property ``s`` violates."""
    if _plainly_safe(s, cfg):
        return None
    for name, check in SAFETY:
        why = check(s, cfg)
        if why is not None:
            return name, why
    return None


def _has_live_copy(s: State, i: int) -> bool:
    for lv in s.levels:
        if any(e.msg == i for e in lv.entries[lv.cursor:]):
            return True
    for tp in s.topics:
        if any(c.msg == i for c in tp.entries[tp.pull:]):
            return True
    return any(s.topics[t].entries[o].msg == i for t, o, _ in s.pq)


def check_terminal(s: State, cfg: ModelConfig) -> tuple[str, str] | None:
    """A state without successors: every message consumed or dead-lettered, nothing stuck."""
    for i, m in enumerate(s.msgs):
        if m.done or m.dead:
            continue
        if m.level >= 0:
            return "deadlock", f"m{i} was never sent, and nothing can happen any more"
        if _has_live_copy(s, i):
            return "deadlock", f"m{i} still has a copy under way, and nothing can happen any more"
        return "no_loss", (f"m{i} was sent but is neither consumed successfully nor in %DLQ%, "
                           f"and no copy of it is left to deliver or consume")
    stuck = [f"{TOPIC_NAMES[t]}@{o}" for t, o, stage in s.pq if stage == AWAIT_SEND_BACK]
    if stuck:
        return "deadlock", f"the process queue still holds {', '.join(stuck)}, and nothing can happen any more"
    return None


PROPERTY_NAMES = tuple(name for name, _ in SAFETY) + ("no_loss", "deadlock", "liveness")
