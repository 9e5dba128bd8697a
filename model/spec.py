"""The abstract protocol: delay levels, consumption, retries, the DLQ and offsets as a state machine.

Why a second, abstract description next to the real store: the store is far too big to explore
exhaustively, so this model keeps only what decides loss, duplicates and retry accounting, small
enough that every interleaving of sends, deliveries, consumption, persist points, put failures and
crashes can be enumerated for small bounds. It follows RocketMQ 5.3.3 (ROCKETMQ.md 3.6-3.8, 4.2-4.3,
5); each mutant puts back one historical bug under the simulator's name.

Abstractions (each a deliberate choice):
- time is discrete: one ``tick`` is one second and delay level ``l`` waits ``l`` ticks; a schedule
  entry keeps its *remaining* wait, so states do not grow with the clock, and ``tick`` is enabled only
  while some unit waits;
- one real topic with one queue (``TopicTest``), one consumer group ``G`` with its ``%RETRY%G``
  (one queue) and ``%DLQ%G``; the consumer pulls and consumes one message per ``consume`` action,
  and a failed message is sent back at once, in the same consume thread (nothing interleaves);
- the client's offset reaches the broker with every pull (the commit-offset flag) and, once a queue
  has nothing left to pull, by ``offset_commit`` (the periodic persistAll);
- a crash takes down the broker *and* its consumer session: memory (scheduler cursors and offset
  table, the broker's consumer offsets, the process queue) is lost; the commit log and consume queues
  (append-only logs here) and the persisted offset files survive; ``restart`` is its own action;
- put failures are one budget over sends, deliveries and send-backs (and, in era 4.9.8, errors while
  rebuilding a due message); ``persist`` points are one budget over both offset files;
- spec bookkeeping that no implementation holds (which deliveries a persist point covered, which
  messages were duplicated by a crash, which messages were consumed) lives in the state too, so that
  every property is a function of one state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import NamedTuple

# --- vocabulary shared with the simulator's history -------------------------------------------------
TOPIC = "TopicTest"
GROUP = "G"
RETRY_TOPIC = "%RETRY%" + GROUP
DLQ_TOPIC = "%DLQ%" + GROUP
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
DELAY_FILE = "delayOffset.json"
CONSUMER_FILE = "consumerOffset.json"
SITE_PUT = "commitlog.put"
SITE_SCHEDULE_DELIVER = "schedule.deliver_put"
SITE_SEND_BACK = "broker.send_back"
SITE_SCHEDULE_REBUILD = "schedule.rebuild"
ERA_5, ERA_4 = "5.3.3", "4.9.8"
ERAS = (ERA_5, ERA_4)
CONSUME_SUCCESS = "CONSUME_SUCCESS"
RECONSUME_LATER = "RECONSUME_LATER"

T_REAL, T_RETRY, DEST_DLQ = 0, 1, 2  # consumable topics by index; DEST_DLQ only as a schedule destination
TOPIC_NAMES = (TOPIC, RETRY_TOPIC, DLQ_TOPIC)

# Schedule-entry delivery status (spec bookkeeping for the bounded-redelivery property).
PENDING = 0  # never delivered
DELIVERED = 1  # delivered in this broker epoch, not yet covered by a persist point
SETTLED = 2  # delivered, and a persist point (or graceful shutdown) covered it: must not come again
RESETTLED = 3  # a settled entry delivered again: the violation state of bounded_redelivery
REWOUND = 4  # delivered in an earlier epoch, rewound by a crash: a legitimate duplicate is due

# Process-queue stages of a failed message.
AWAIT_SEND_BACK = 0
AWAIT_RESUBMIT = 1  # the send-back failed: the Java client re-consumes it locally (ROCKETMQ.md 4.2)

CRASH_KINDS = ("process", "graceful")

# Mutants modelled at this level: the same names as store/mutants.py (a test keeps them in step).
MUTANTS: dict[str, str] = {
    "skip_failed_delivery": "#9249: a failed delivery moves the level's cursor past the message",
    "offset_from_task_start": "#3966: the recorded delay offset is the task's start offset + 1",
    "no_persist_at_shutdown": "#3473: a graceful shutdown does not persist the delay offsets",
    "persist_before_load": "#6881: on restart the empty delay-offset table overwrites delayOffset.json",
    "drop_on_exception": "E1 (era 4.9.8 here): an exception while rebuilding a due message drops it",
    "dlq_keeps_delay": "#2724: the DLQ copy keeps DELAY and detours through its last delay level",
    "dlq_threshold_gt": "'>' instead of '>=' for max reconsume times",
    "retry_level_2_plus_r": "retry level 2 + reconsumeTimes instead of 3 + reconsumeTimes",
    "commit_on_failed_send_back": "a failed send-back is removed from the process queue as if acked",
    "commit_max_offset": "the client commits the largest instead of the smallest un-acked offset",
}
# Catalogue mutants that have no meaning at this level, and why.
NOT_MODELLED: dict[str, str] = {
    "no_correct_delay_offset": "needs consume-queue truncation, which the model does not have",
    "no_correct_deliver_timestamp": "needs wall-clock steps, which the model does not have",
    "fallback_dlq_ge": "the model has one send-back path (the broker's); the producer fallback is not modelled",
    "no_contains_message_check": "needs consumeTimeout and cleanExpireMsg, which the model does not have",
    "timer_no_queue_offset_clamp": "the timer wheel is not modelled",
    "timer_drop_after_first_failure": "the timer wheel is not modelled",
    "timer_read_time_early": "the timer wheel is not modelled",
    "correct_delay_offset_skips_missing_cq": "needs lost consume-queue directories, which the model does not have",
    "resend_exception_escapes": "asynchronous delivery is not modelled",
    "physic_ts_every_flush": "the checkpoint and abnormal recovery are not modelled",
    "correct_delay_offset_past_max": "needs a delay offset past its queue (a rollback), which the model does not have",
    "correct_delay_offset_to_min": "needs a delay offset past its queue (a rollback), which the model does not have",
    "error_ends_level_task": "a Java Error while rebuilding a message is not an action of the model",
    "ignore_client_max_reconsume": "the model has one max-retries bound, shared by client and broker",
    "next_begin_plus_one": "pulls are one message at a time in the model; nextBeginOffset is not modelled",
    "not_due_offset_plus_one": "the model's levels have no not-yet-due polling branch (a message is due or waits)",
    "next_offset_at_last_put": "the model's levels deliver one message per step: a poll never puts two units",
    "allocate_average_ceil": "the model has one consumer: no queue allocation",
    "delay_level_off_by_one": "the model's level l waits l ticks: there is no messageDelayLevel table to read",
    "retry_level_4_plus_r": "the model's properties judge how early a retry comes, not the level it waited at (the "
                            "history invariant retry_schedule does)",
    "overflow_badly_to_min": "pull offsets past the queue (OFFSET_OVERFLOW_BADLY) are not modelled",
    "overflow_one_plus_one": "pull offsets past the queue (OFFSET_OVERFLOW_ONE) are not modelled",
    "reconsume_times_not_bumped": "not yet modelled: the model counts attempts, not the stored reconsumeTimes",
    "timer_drop_after_3_retries": "the timer wheel is not modelled",
    "timer_read_current_slot": "the timer wheel is not modelled",
}


class ModelConfigError(ValueError):
    """A configuration the model cannot take (the CLI turns it into exit code 2)."""


@dataclass(frozen=True)
class ModelConfig:
    """The bounds of one exhaustive check; every field is part of the state space's size."""

    messages: int = 2
    levels: int = 2
    max_retries: int = 1
    crashes: int = 1
    put_failures: int | None = 1  # None: unbounded (failures never run out; liveness needs fairness)
    persist_points: int = 1  # persist actions (either offsets file) besides graceful shutdowns
    send_levels: tuple[int, ...] = ()  # per message; () = message i uses level (i mod levels) + 1
    crash_kinds: tuple[str, ...] = CRASH_KINDS
    mutants: frozenset[str] = field(default_factory=frozenset)
    era: str = ERA_5  # 4.9.8: rebuild errors are injected too (as faults), and the E3 rules apply

    def __post_init__(self) -> None:
        if not self.send_levels:
            object.__setattr__(self, "send_levels",
                               tuple(i % self.levels + 1 for i in range(self.messages)) if self.levels > 0 else ())
        object.__setattr__(self, "mutants", frozenset(self.mutants))
        object.__setattr__(self, "crash_kinds", tuple(self.crash_kinds))

    def validate(self) -> ModelConfig:
        def need(ok: bool, what: str) -> None:
            if not ok:
                raise ModelConfigError(what)

        need(1 <= self.messages <= 12, f"messages must be between 1 and 12, not {self.messages}")
        need(1 <= self.levels <= 18, f"levels must be between 1 and 18, not {self.levels}")
        need(0 <= self.max_retries <= 16, f"max retries must be between 0 and 16, not {self.max_retries}")
        need(self.crashes >= 0, f"crashes must be >= 0, not {self.crashes}")
        need(self.put_failures is None or self.put_failures >= 0,
             f"put failures must be >= 0 or unbounded, not {self.put_failures}")
        need(self.persist_points >= 0, f"persist points must be >= 0, not {self.persist_points}")
        need(len(self.send_levels) == self.messages,
             f"send levels name {len(self.send_levels)} levels for {self.messages} messages")
        for level in self.send_levels:
            need(0 <= level <= self.levels, f"send level {level} is outside 0..{self.levels}")
        for kind in self.crash_kinds:
            need(kind in CRASH_KINDS, f"unknown crash kind {kind!r}; known: {', '.join(CRASH_KINDS)}")
        need(self.era in ERAS, f"unknown era {self.era!r}; known: {', '.join(ERAS)}")
        # Mutants whose switch the store ignores in an era (and so does the model): refuse, not pass.
        for name, era in (("skip_failed_delivery", ERA_5), ("drop_on_exception", ERA_4)):
            need(name not in self.mutants or self.era == era,
                 f"mutant {name!r} only changes era {era} (in 5.3.3 a rebuild error already skips the message)"
                 if name == "drop_on_exception" else f"mutant {name!r} only changes era {era}")
        unknown = sorted(self.mutants - set(MUTANTS))
        if unknown:
            name = unknown[0]
            if name in NOT_MODELLED:
                raise ModelConfigError(f"mutant {name!r} is not modelled: {NOT_MODELLED[name]}")
            raise ModelConfigError(f"unknown mutant {name!r}; modelled: {', '.join(sorted(MUTANTS))}")
        return self

    def delay(self, level: int) -> int:
        """Ticks a delay level waits: level l = l seconds (store config "1s 2s ... Ls")."""
        return level

    def retry_level(self, reconsume_times: int) -> int:
        """The broker's rule: level 3 + reconsumeTimes, clamped to the last level (ROCKETMQ.md 4.3)."""
        base = 2 if "retry_level_2_plus_r" in self.mutants else 3
        return max(1, min(base + reconsume_times, self.levels))

    def goes_to_dlq(self, reconsume_times: int) -> bool:
        if "dlq_threshold_gt" in self.mutants:
            return reconsume_times > self.max_retries
        return reconsume_times >= self.max_retries

    def as_dict(self) -> dict:
        return {"messages": self.messages, "levels": self.levels, "max_retries": self.max_retries,
                "crashes": self.crashes, "put_failures": self.put_failures,
                "persist_points": self.persist_points, "send_levels": list(self.send_levels),
                "crash_kinds": list(self.crash_kinds), "mutants": sorted(self.mutants), "era": self.era}


# --- the state ------------------------------------------------------------------------------------------
class Sched(NamedTuple):
    """One unit of a level's queue in SCHEDULE_TOPIC_XXXX (durable)."""

    msg: int
    r: int  # reconsumeTimes of the stored copy
    wait: int  # ticks until due (0 = due)
    status: int  # PENDING / DELIVERED / SETTLED / RESETTLED / REWOUND
    dest: int  # T_REAL, T_RETRY or DEST_DLQ (REAL_TOPIC)


class Copy(NamedTuple):
    """One unit of a consumable queue (TopicTest or %RETRY%G, durable)."""

    msg: int
    r: int
    acked: bool  # consumed successfully or sent back at least once (spec bookkeeping)
    level: int  # the DELAY level this copy came through (0: sent without delay)


class Level(NamedTuple):
    entries: tuple[Sched, ...]
    cursor: int  # the level task's next offset (memory)
    table: int  # offsetTable[level] (memory; what a persist writes)
    persisted: int  # delayOffset.json
    running: bool  # a delivery task is mid-loop (only tracked for offset_from_task_start)


class Topic(NamedTuple):
    entries: tuple[Copy, ...]
    pull: int  # the consumer's next offset to pull (memory)
    cmem: int  # the broker's committed offset (memory)
    cper: int  # consumerOffset.json


class Msg(NamedTuple):
    level: int  # the send level while unsent; -1 once sent (then the message has no static attribute)
    done: bool  # consumed with CONSUME_SUCCESS at least once
    dead: bool  # has a copy in %DLQ%G
    dup: bool  # a crash rewound one of its processed copies (duplicates are allowed from then on)


class State(NamedTuple):
    up: bool
    crashes: int  # left
    faults: int  # left (ignored when unbounded)
    persists: int  # left
    msgs: tuple[Msg, ...]
    levels: tuple[Level, ...]
    topics: tuple[Topic, Topic]
    pq: tuple[tuple[int, int, int], ...]  # the consumer's failed messages: (topic, offset, stage), sorted
    dlq: tuple[tuple[int, int], ...]  # %DLQ%G: (msg, reconsumeTimes)


class Action(NamedTuple):
    """A transition label: the history's verb and its arguments (``msg`` values are message indices)."""

    verb: str
    args: tuple[tuple[str, object], ...] = ()

    def arg(self, name: str, default: object = None) -> object:
        for key, value in self.args:
            if key == name:
                return value
        return default

    def text(self, names: tuple[str, ...] | None = None) -> str:
        parts = [self.verb]
        for key, value in self.args:
            if key == "msg":
                value = names[value] if names is not None else f"m{value}"
            parts.append(f"{key}={value}")
        return " ".join(parts)

    def as_dict(self, names: tuple[str, ...] | None = None) -> dict:
        out: dict = {"verb": self.verb}
        for key, value in self.args:
            out[key] = (names[value] if names is not None else f"m{value}") if key == "msg" else value
        return out


def initial_state(cfg: ModelConfig) -> State:
    empty_level = Level((), 0, 0, 0, False)
    empty_topic = Topic((), 0, 0, 0)
    return State(
        up=True,
        crashes=cfg.crashes,
        faults=cfg.put_failures or 0,
        persists=cfg.persist_points,
        msgs=tuple(Msg(level, False, False, False) for level in cfg.send_levels),
        levels=(empty_level,) * cfg.levels,
        topics=(empty_topic, empty_topic),
        pq=(),
        dlq=(),
    )


# --- the transition relation ----------------------------------------------------------------------------
# One small function per actor (producer, scheduler, clock, consumer, client, persister, crasher, restarter);
# ``successors`` asks each in a fixed order (the order decides which shortest trace BFS shows first).
# Speed (this is the checker's hot path): successors are built positionally, ``_new_tuple(State, (...))``
# from the unpacked fields, about three times cheaper than ``_replace``; each distinct action label is built
# once (``functools.cache``) and shared. ``_with`` serves the rare paths (restart, mutants).
_FIELD_INDEX = {cls: {name: i for i, name in enumerate(cls._fields)} for cls in (State, Level, Topic, Sched, Copy, Msg)}
_new_tuple = tuple.__new__
_SENT = Msg(-1, False, False, False)
_PERSIST_DELAY = Action("persist", (("file", DELAY_FILE),))
_PERSIST_CONSUMER = Action("persist", (("file", CONSUMER_FILE),))
_RESTART = Action("restart")
_TICK = Action("tick")


def _with(s, **changes):
    """``s`` (a State, or one of its records) with some fields changed, for the paths that are not hot."""
    values = list(s)
    index = _FIELD_INDEX[type(s)]
    for name, value in changes.items():
        values[index[name]] = value
    return _new_tuple(type(s), values)


def _put(seq: tuple, i: int, value) -> tuple:
    return seq[:i] + (value,) + seq[i + 1:]


def _state(s: State, msgs: tuple, levels: tuple, topics: tuple, pq: tuple, dlq: tuple) -> State:
    """``s`` with its queues and message records replaced (budgets and ``up`` kept)."""
    return _new_tuple(State, (s[0], s[1], s[2], s[3], msgs, levels, topics, pq, dlq))


def client_offset(s: State, t: int, cfg: ModelConfig) -> int:
    """What the client's offset store holds: the smallest un-acked offset, else the last pulled + 1."""
    if "commit_max_offset" not in cfg.mutants:
        for topic, offset, _stage in s.pq:
            if topic == t:
                return offset  # pq is sorted: the first entry of t is its smallest offset
    return s.topics[t].pull


def _mark(msgs: tuple[Msg, ...], i: int, **flags: bool) -> tuple[Msg, ...]:
    """The message records with flags set on message i (unchanged when already set)."""
    m = msgs[i]
    if all(getattr(m, name) == value for name, value in flags.items()):
        return msgs
    return _put(msgs, i, _with(m, **flags))


def _flag(msgs: tuple[Msg, ...], i: int, field: int) -> tuple[Msg, ...]:
    """``_mark(msgs, i, <field>=True)`` for one flag by its index (1 done, 2 dead, 3 dup), the fast way."""
    m = msgs[i]
    if m[field]:
        return msgs
    values = list(m)
    values[field] = True
    return msgs[:i] + (_new_tuple(Msg, values),) + msgs[i + 1:]


def _acked(tp: Topic, o: int) -> Topic:
    """The topic with its copy at offset o marked acked (consumed or sent back at least once)."""
    entries = tp[0]
    e = entries[o]
    if e[2]:
        return tp
    acked = _new_tuple(Copy, (e[0], e[1], True, e[3]))
    return _new_tuple(Topic, (entries[:o] + (acked,) + entries[o + 1:], tp[1], tp[2], tp[3]))


def _append(tp: Topic, copy: Copy) -> Topic:
    return _new_tuple(Topic, (tp[0] + (copy,), tp[1], tp[2], tp[3]))


def _scheduled(levels: tuple[Level, ...], level: int, entry: Sched) -> tuple[Level, ...]:
    """The levels with ``entry`` appended to delay level ``level`` (1-based)."""
    lv = levels[level - 1]
    lv = _new_tuple(Level, (lv[0] + (entry,), lv[1], lv[2], lv[3], lv[4]))
    return levels[:level - 1] + (lv,) + levels[level:]


def _schedule(s: State, level: int, entry: Sched) -> State:
    return _state(s, s.msgs, _scheduled(s.levels, level, entry), s.topics, s.pq, s.dlq)


def _fault_budget(s: State, cfg: ModelConfig) -> int | None:
    """The fault budget after one more put failure, or None when none is left."""
    if cfg.put_failures is None:
        return s.faults
    return s.faults - 1 if s.faults > 0 else None


def _with_faults(s: State, faults: int) -> State:
    up, crashes, _faults, persists, msgs, levels, topics, pq, dlq = s
    return _new_tuple(State, (up, crashes, faults, persists, msgs, levels, topics, pq, dlq))


def _rewind(s: State) -> State:
    """After a restart: delivered entries past a cursor and acked copies past a pull offset come again."""
    dup: list[int] = []
    levels = []
    for lv in s.levels:
        entries, cursor = lv[0], lv[1]
        changed = None
        for i in range(cursor, len(entries)):
            e = entries[i]
            status = e[3]
            if status != PENDING:
                dup.append(e[0])
                if changed is None:
                    changed = list(entries)
                if status == DELIVERED:
                    changed[i] = _new_tuple(Sched, (e[0], e[1], e[2], REWOUND, e[4]))
        if changed is not None:
            lv = _new_tuple(Level, (tuple(changed), cursor, lv[2], lv[3], lv[4]))
        levels.append(lv)
    for tp in s.topics:
        entries = tp[0]
        for o in range(tp[1], len(entries)):
            c = entries[o]
            if c[2]:
                dup.append(c[0])
    if not dup:
        return s  # nothing was delivered or acked past a cursor: nothing comes again
    msgs = s.msgs
    for i in dup:
        msgs = _flag(msgs, i, 3)
    return _state(s, msgs, tuple(levels), s.topics, s.pq, s.dlq)


def _settle(levels: tuple[Level, ...]) -> tuple[Level, ...]:
    """A persist point covers every delivery of this epoch (the spec's view, whatever was written)."""
    out = []
    for lv in levels:
        for e in lv[0]:
            if e[3] == DELIVERED:
                entries = tuple([_new_tuple(Sched, (e[0], e[1], e[2], SETTLED, e[4])) if e[3] == DELIVERED else e
                                 for e in lv[0]])
                lv = _new_tuple(Level, (entries, lv[1], lv[2], lv[3], lv[4]))
                break
        out.append(lv)
    return tuple(out)


def _persist_levels(levels: tuple[Level, ...]) -> tuple[Level, ...]:
    return tuple(_new_tuple(Level, (lv[0], lv[1], lv[2], lv[2], lv[4])) for lv in levels)


def _persist_topics(topics: tuple[Topic, ...]) -> tuple[Topic, ...]:
    return tuple(_new_tuple(Topic, (tp[0], tp[1], tp[2], tp[2])) for tp in topics)


# The restarter: a crashed broker comes back (its only action while down).
def _restart(s: State, cfg: ModelConfig) -> tuple[Action, State]:
    levels = s.levels
    if "persist_before_load" in cfg.mutants:
        levels = tuple(_with(lv, cursor=0, table=0, persisted=0) for lv in levels)
    restarted = _with(s, up=True, levels=levels)
    if levels is not s.levels:
        restarted = _rewind(restarted)
    return _RESTART, restarted


@cache
def _send_actions(i: int, level: int) -> tuple[Action, Action]:
    return (Action("send", (("msg", i), ("level", level))), Action("fault", (("site", SITE_PUT), ("msg", i))))


# The producer: each unsent message can be sent (to its level, or straight to TopicTest), or fail.
def _producer(s: State, cfg: ModelConfig, symmetric: bool, out: list) -> None:
    msgs = s[4]
    for m in msgs:
        if m[0] >= 0:
            break
    else:
        return  # every message is sent
    offered: set[int] = set()
    faults = _fault_budget(s, cfg)
    for i, m in enumerate(msgs):
        level = m[0]
        if level < 0:
            continue
        if symmetric:
            if level in offered:
                continue
            offered.add(level)
        sent_msgs = msgs[:i] + (_SENT,) + msgs[i + 1:]
        topics, levels = s.topics, s.levels
        if level == 0:
            topics = (_append(topics[T_REAL], _new_tuple(Copy, (i, 0, False, 0))), topics[T_RETRY])
        else:
            levels = _scheduled(levels, level, _new_tuple(Sched, (i, 0, cfg.delay(level), PENDING, T_REAL)))
        send, fault = _send_actions(i, level)
        out.append((send, _state(s, sent_msgs, levels, topics, s.pq, s.dlq)))
        if faults is not None:
            out.append((fault, _with_faults(s, faults)))


def _deliver(s: State, li: int, cfg: ModelConfig) -> State:
    """The level task puts the unit at its cursor back to its destination and moves on."""
    up, crashes, faults, persists, msgs, levels, topics, pq, dlq = s
    lv = levels[li]
    c = lv[1]
    entries = lv[0]
    e = entries[c]
    msg, r, dest = e[0], e[1], e[4]
    status = RESETTLED if e[3] in (SETTLED, RESETTLED) else DELIVERED
    entries = entries[:c] + (_new_tuple(Sched, (msg, r, e[2], status, dest)),) + entries[c + 1:]
    if dest == DEST_DLQ:
        dlq = dlq + ((msg, r),)
        msgs = _flag(msgs, msg, 2)
    else:
        tp = topics[dest]
        tp = _new_tuple(Topic, (tp[0] + (_new_tuple(Copy, (msg, r, False, li + 1)),), tp[1], tp[2], tp[3]))
        topics = (tp, topics[1]) if dest == T_REAL else (topics[0], tp)
    cursor = c + 1
    table, running = cursor, False
    if "offset_from_task_start" in cfg.mutants:
        # #3966: every put in one task records taskStart + 1; the E5 not-due branch corrects it.
        table = lv.table if lv.running else cursor
        if cursor < len(entries):
            if entries[cursor].wait == 0:
                running = True
            elif cfg.era == ERA_5:
                table = cursor
    level = _new_tuple(Level, (entries, cursor, table, lv[3], running))
    return _new_tuple(State, (up, crashes, faults, persists, msgs, levels[:li] + (level,) + levels[li + 1:], topics,
                              pq, dlq))


@cache
def _deliver_actions(level: int, msg: int, r: int, dest: int) -> tuple[Action, Action, Action]:
    """The delivery of a unit, its put failure and (era 4.9.8) its rebuild error."""
    return (Action("deliver", (("level", level), ("msg", msg), ("r", r), ("to", TOPIC_NAMES[dest]))),
            Action("fault", (("site", SITE_SCHEDULE_DELIVER), ("level", level), ("msg", msg))),
            Action("fault", (("site", SITE_SCHEDULE_REBUILD), ("level", level), ("msg", msg))))


# The scheduler: each level's task delivers the unit at its cursor once it is due, or its put fails.
def _scheduler(s: State, cfg: ModelConfig, out: list) -> None:
    faults = -1  # not yet computed
    for li, lv in enumerate(s[5]):
        entries, c = lv[0], lv[1]
        if c >= len(entries) or entries[c][2] != 0:
            continue
        e = entries[c]
        deliver, fault, rebuild = _deliver_actions(li + 1, e[0], e[1], e[4])
        out.append((deliver, _deliver(s, li, cfg)))
        if faults == -1:
            faults = _fault_budget(s, cfg)
        if faults is None:
            continue
        # 5.3.3 retries a failed put at the same unit; #9249 rescheduled past it.
        skip = "skip_failed_delivery" in cfg.mutants
        failed = _new_tuple(Level, (entries, c + 1 if skip else c, lv[2], lv[3], False))
        levels = s[5]
        out.append((fault, _new_tuple(State, (s[0], s[1], faults, s[3], s[4], levels[:li] + (failed,) + levels[li + 1:],
                                              s[6], s[7], s[8]))))
        if cfg.era == ERA_4:
            # E3 retries a unit whose rebuild threw; the E1 Timer era dropped it.
            drop = "drop_on_exception" in cfg.mutants
            failed = _new_tuple(Level, (entries, c + 1 if drop else c, lv[2], lv[3], False))
            out.append((rebuild, _with_faults(_state(s, s.msgs, _put(s.levels, li, failed), s.topics, s.pq,
                                                     s.dlq), faults)))


@cache
def _tick_action(step: int) -> Action:
    return Action("tick", (("ticks", step),)) if step > 1 else _TICK


def _passed(lv: Level, step: int, table: int) -> Level:
    """The level after ``step`` ticks: every waiting unit waits ``step`` less; ``table`` its offset table then."""
    entries = tuple([_new_tuple(Sched, (e[0], e[1], e[2] - step, e[3], e[4])) if e[2] > 0 else e for e in lv[0]])
    return _new_tuple(Level, (entries, lv[1], table, lv[3], lv[4]))


# The clock: one tick passes while any unit still waits (waits never decrease along a level's queue).
def _clock(s: State, cfg: ModelConfig, out: list, collapse: bool = False) -> None:
    levels = s[5]
    for lv in levels:
        entries = lv[0]
        if entries and entries[-1][2] > 0:
            break
    else:
        return
    step = 1
    if collapse:
        step = 0
        for lv in levels:
            for e in lv[0]:
                wait = e[2]
                if wait > 0 and (step == 0 or wait < step):
                    step = wait
    passed = []
    for lv in levels:
        entries = lv[0]
        passed.append(_passed(lv, step, _not_due_table(lv, cfg)) if entries and entries[-1][2] > 0 else lv)
    out.append((_tick_action(step), _new_tuple(State, (s[0], s[1], s[2], s[3], s[4], tuple(passed), s[6], s[7], s[8]))))


def _not_due_table(lv: Level, cfg: ModelConfig) -> int:
    """5.x's level task writes updateOffset(level, currOffset) when the unit at its cursor is not due yet: a
    tick's first poll does. In the clean model the table already equals the cursor there; the cursor moves
    without a delivery only under #9249 (``skip_failed_delivery``), and then this write is what the store does
    (the conformance test's counterexample: a failed put skipped, the next unit not yet due)."""
    entries, cursor = lv[0], lv[1]
    if cfg.era == ERA_5 and cursor < len(entries) and entries[cursor][2] > 0:
        return cursor
    return lv[2]


def collapsible_ticks(cfg: ModelConfig) -> bool:
    """Whether time may jump straight to the next instant at which some unit becomes due.

    Why it is sound (for safety and terminal states; the checker uses it only on graphs proven acyclic):
    no property and no transition but the scheduler's due test reads a wait. Take any run and move every
    action that happens at an instant where nothing became due back to the last instant where something
    did: a unit scheduled earlier becomes due no later, so every delivery stays enabled, the order of
    actions is kept, and the run ends in the same state up to waits. Every collapsed run is a run of
    ticks one at a time, so nothing is added. Not with ``offset_from_task_start``: that mutant's delivery
    also reads whether the *next* unit is already due, which moving actions in time would change.
    """
    return "offset_from_task_start" not in cfg.mutants


@cache
def _consume_actions(t: int, o: int, msg: int, r: int) -> tuple[Action, Action]:
    args = (("topic", TOPIC_NAMES[t]), ("offset", o), ("msg", msg), ("r", r))
    return (Action("consume", args + (("status", CONSUME_SUCCESS),)),
            Action("consume", args + (("status", RECONSUME_LATER),)))


def _consume(s: State, cfg: ModelConfig, t: int, o: int, k: int | None, out: list) -> None:
    """One consume attempt of the copy at (t, o): the next pull (k None) or a local resubmit of pq[k]."""
    up, crashes, faults, persists, msgs, levels, topics, pq, dlq = s
    tp = topics[t]
    e = tp[0][o]
    success, later = _consume_actions(t, o, e[0], e[1])
    if k is None:
        # The pull request carries the client's offset, which the broker commits (ROCKETMQ.md 5.1).
        tp, rest = _new_tuple(Topic, (tp[0], o + 1, client_offset(s, t, cfg), tp[3])), pq
    else:
        rest = pq[:k] + pq[k + 1:]
    acked = _acked(tp, o)
    out.append((success, _new_tuple(State, (up, crashes, faults, persists, _flag(msgs, e[0], 1), levels,
                                            (acked, topics[1]) if t == 0 else (topics[0], acked), rest, dlq))))
    failed = tuple(sorted(rest + ((t, o, AWAIT_SEND_BACK),))) if rest else ((t, o, AWAIT_SEND_BACK),)
    out.append((later, _new_tuple(State, (up, crashes, faults, persists, msgs, levels,
                                          (tp, topics[1]) if t == 0 else (topics[0], tp), failed, dlq))))


# The consumer: pull-and-consume the next copy of each queue; re-consume after a failed send-back.
def _consumer(s: State, cfg: ModelConfig, out: list) -> None:
    topics = s[6]
    for t in (T_REAL, T_RETRY):
        tp = topics[t]
        if tp[1] < len(tp[0]):
            _consume(s, cfg, t, tp[1], None, out)
    for k, (t, o, _stage) in enumerate(s[7]):
        _consume(s, cfg, t, o, k, out)


@cache
def _send_back_actions(t: int, o: int, msg: int, r: int, level: int) -> tuple[Action, Action]:
    """The send-back to delay ``level`` (0: to the DLQ) of the copy at (t, o), and its put failure."""
    where = (("topic", TOPIC_NAMES[t]), ("offset", o), ("msg", msg))
    back = Action("dlq", where + (("r", r + 1),)) if level == 0 else Action("send_back", where + (("r", r), ("level", level)))
    return back, Action("fault", (("site", SITE_SEND_BACK),) + where)


def _send_back(s: State, cfg: ModelConfig, k: int) -> list[tuple[Action, State]]:
    """The broker's consumerSendMsgBack for the failed message pq[k] (to a retry level or the DLQ), or its
    put failure. It runs synchronously in the consume thread right after the listener returned, so it is
    the only action while due (ROCKETMQ.md 4.2)."""
    up, crashes, faults, persists, msgs, levels, topics, pq, dlq = s
    t, o, _stage = pq[k]
    tp = topics[t]
    e = tp[0][o]
    msg, r = e[0], e[1]
    rest = pq[:k] + pq[k + 1:]
    tp = _acked(tp, o)
    acked = (tp, topics[1]) if t == T_REAL else (topics[0], tp)
    if cfg.goes_to_dlq(r):
        back, fault = _send_back_actions(t, o, msg, r, 0)
        if "dlq_keeps_delay" in cfg.mutants and e[3] > 0:
            after = _scheduled(levels, e[3], _new_tuple(Sched, (msg, r + 1, cfg.delay(e[3]), PENDING, DEST_DLQ)))
            nxt = _new_tuple(State, (up, crashes, faults, persists, msgs, after, acked, rest, dlq))
        else:
            nxt = _new_tuple(State, (up, crashes, faults, persists, _flag(msgs, msg, 2), levels, acked, rest,
                                     dlq + ((msg, r + 1),)))
    else:
        level = cfg.retry_level(r)
        back, fault = _send_back_actions(t, o, msg, r, level)
        after = _scheduled(levels, level, _new_tuple(Sched, (msg, r + 1, cfg.delay(level), PENDING, T_RETRY)))
        nxt = _new_tuple(State, (up, crashes, faults, persists, msgs, after, acked, rest, dlq))
    out = [(back, nxt)]
    left = _fault_budget(s, cfg)
    if left is not None:
        if "commit_on_failed_send_back" in cfg.mutants:
            failed = rest  # dropped from the process queue as if acked
        else:
            failed = tuple(sorted(rest + ((t, o, AWAIT_RESUBMIT),))) if rest else ((t, o, AWAIT_RESUBMIT),)
        out.append((fault, _new_tuple(State, (up, crashes, left, persists, msgs, levels, topics, failed, dlq))))
    return out


@cache
def _commit_action(t: int, offset: int) -> Action:
    return Action("offset_commit", (("topic", TOPIC_NAMES[t]), ("offset", offset)))


# The client: its periodic persistAll commits the offset; modelled once the queue has nothing left to
# pull (while it has, every pull carries the offset anyway).
def _client(s: State, cfg: ModelConfig, out: list) -> None:
    topics = s.topics
    for t in (T_REAL, T_RETRY):
        tp = topics[t]
        if tp[1] != len(tp[0]):
            continue
        co = client_offset(s, t, cfg)
        if co != tp[2]:
            committed = _new_tuple(Topic, (tp[0], tp[1], co, tp[3]))
            out.append((_commit_action(t, co), _state(s, s.msgs, s.levels, _put(topics, t, committed), s.pq, s.dlq)))


def _delay_offsets_to_persist(levels: tuple[Level, ...]) -> bool:
    for entries, _cursor, table, persisted, _running in levels:
        if table != persisted:
            return True
        for e in entries:
            if e[3] == DELIVERED:
                return True
    return False


# The persister: a persist point writes delayOffset.json or consumerOffset.json (a bounded budget).
def _persister(s: State, cfg: ModelConfig, out: list) -> None:
    up, crashes, faults, persists, msgs, levels, topics, pq, dlq = s
    if persists <= 0:
        return
    if _delay_offsets_to_persist(levels):
        settled = _settle(_persist_levels(levels))
        out.append((_PERSIST_DELAY, _new_tuple(State, (up, crashes, faults, persists - 1, msgs, settled, topics, pq,
                                                        dlq))))
    if topics[0][3] != topics[0][2] or topics[1][3] != topics[1][2]:
        out.append((_PERSIST_CONSUMER, _new_tuple(State, (up, crashes, faults, persists - 1, msgs, levels,
                                                           _persist_topics(topics), pq, dlq))))


_CRASH = {kind: Action("crash", (("kind", kind),)) for kind in CRASH_KINDS}


# The crasher: the broker (and its consumer session) goes down; restart is a separate action.
def _crasher(s: State, cfg: ModelConfig, out: list) -> None:
    up, crashes, faults, persists, msgs, levels, topics, pq, dlq = s
    if crashes <= 0:
        return
    for kind in cfg.crash_kinds:
        if kind == "graceful":
            # offsetTable is persisted (not with #3473), so are the deliveries it covers and the consumer offsets
            kept = 3 if "no_persist_at_shutdown" in cfg.mutants else 2
            down_levels = tuple(_new_tuple(Level, (lv[0], lv[kept], lv[kept], lv[kept], False)) for lv in _settle(levels))
            down_topics = tuple(_new_tuple(Topic, (tp[0], tp[2], tp[2], tp[2])) for tp in topics)
        else:
            down_levels = tuple(_new_tuple(Level, (lv[0], lv[3], lv[3], lv[3], False)) for lv in levels)
            down_topics = tuple(_new_tuple(Topic, (tp[0], tp[3], tp[3], tp[3])) for tp in topics)
        down = _new_tuple(State, (False, crashes - 1, faults, persists, msgs, down_levels, down_topics, (), dlq))
        out.append((_CRASH[kind], _rewind(down)))


def successors(s: State, cfg: ModelConfig, symmetric: bool = False,
               collapse_ticks: bool = False) -> list[tuple[Action, State]]:
    """Every enabled action and its successor state (the model is deterministic per action).

    ``symmetric``: offer the send of only one unsent message per level (the others are renamings of
    it, merged anyway by the symmetry reduction; this only saves computing them).
    ``collapse_ticks``: the clock jumps to the next instant at which a unit becomes due (a ``tick`` with
    ``ticks`` > 1), see ``collapsible_ticks``.
    """
    if not s[0]:
        return [_restart(s, cfg)]
    pq = s[7]
    if pq:
        for k, item in enumerate(pq):
            if item[2] == AWAIT_SEND_BACK:
                return _send_back(s, cfg, k)
    out: list[tuple[Action, State]] = []
    _producer(s, cfg, symmetric, out)
    _scheduler(s, cfg, out)
    _clock(s, cfg, out, collapse_ticks)
    _consumer(s, cfg, out)
    _client(s, cfg, out)
    _persister(s, cfg, out)
    _crasher(s, cfg, out)
    return out


# --- progress rank (acyclicity) ---------------------------------------------------------------------------
def progress_rank(s: State) -> tuple[int, int, int, int, int]:
    """A rank that every transition of a model with bounded budgets lowers (lexicographically).

    Why: if every edge lowers it, the state graph has no cycle, so no run is infinite and liveness
    reduces to the terminal-state checks; the checker then need not keep the edges at all. The checker
    compares the ranks of both ends of every edge it generates and falls back to keeping edges (and the
    SCC search) the first time one does not drop, so a mistake here costs memory, never a verdict.

    Budgets come first (a crash, a put failure or a persist point spends one), then being down (a restart
    ends it), then work done: appended units, cursors, pull and committed offsets, ticks passed, and the
    process queue's items nearer to their end (a resubmit outranks a due send-back).
    """
    return (s.crashes, s.faults, s.persists, 0 if s.up else 1, -_work(s))


def _work(s: State) -> int:
    """The rank's last term, negated: work done (see ``progress_rank``), summed over the parts below."""
    return (_msgs_work(s.msgs) + sum(_level_work(lv) for lv in s.levels) + sum(_topic_work(tp) for tp in s.topics)
            + 8 * len(s.dlq) + _pq_work(s.pq))


def _msgs_work(msgs: tuple[Msg, ...]) -> int:
    work = 0
    for m in msgs:
        if m[0] < 0:
            work += 8
    return work


def _level_work(lv: Level) -> int:
    entries = lv[0]
    work = 8 * len(entries) + 4 * lv[1]
    for e in entries:
        work -= e[2]
    return work


def _topic_work(tp: Topic) -> int:
    return 8 * len(tp[0]) + 4 * (tp[1] + tp[2])


def _pq_work(pq: tuple) -> int:
    work = 0
    for _t, _o, stage in pq:
        work -= 2 if stage == AWAIT_RESUBMIT else 1
    return work


def rank_drops(before: State, after: State) -> bool:
    """``progress_rank(after) < progress_rank(before)``, the checker's question for every edge it generates.

    Why not compute both: the budgets decide the edges that spend one, and for the others a successor shares
    most of its parts with ``before`` (the very same objects), so only the work in the parts that are not the
    same objects is counted: the same comparison, without the terms that cancel.
    """
    a_up, a_crashes, a_faults, a_persists, a_msgs, a_levels, a_topics, a_pq, a_dlq = after
    b_up, b_crashes, b_faults, b_persists, b_msgs, b_levels, b_topics, b_pq, b_dlq = before
    if a_crashes != b_crashes:
        return a_crashes < b_crashes
    if a_faults != b_faults:
        return a_faults < b_faults
    if a_persists != b_persists:
        return a_persists < b_persists
    if a_up != b_up:
        return bool(a_up)  # down ranks above up: a restart lowers the rank, a crash spent a budget above
    gained = 8 * (len(a_dlq) - len(b_dlq))  # work(after) - work(before)
    if a_msgs is not b_msgs:
        gained += _msgs_work(a_msgs) - _msgs_work(b_msgs)
    if a_levels is not b_levels:
        for a, b in zip(a_levels, b_levels, strict=True):
            if a is not b:
                gained += _level_work(a) - _level_work(b)
    if a_topics is not b_topics:
        for a, b in zip(a_topics, b_topics, strict=True):
            if a is not b:
                gained += 8 * (len(a[0]) - len(b[0])) + 4 * (a[1] + a[2] - b[1] - b[2])
    if a_pq is not b_pq:
        gained += _pq_work(a_pq) - _pq_work(b_pq)
    return gained > 0


def ranks_drop(before: State, succ: list[tuple[Action, State]]) -> bool:
    """``rank_drops(before, after)`` for every successor ``after`` in ``succ``: the checker's question, once a state.

    Why one call for all: the work in ``before``'s parts is counted once, not once an edge, and the edges that
    spend no budget (most) take a path with the same terms written out; the others ask ``rank_drops``.
    """
    b_up, b_crashes, b_faults, b_persists, b_msgs, b_levels, b_topics, b_pq, b_dlq = before
    b_dlq_len = len(b_dlq)
    b_msgs_work = b_pq_work = None
    b_level_work: list | None = None
    for _action, after in succ:
        if after[1] != b_crashes or after[2] != b_faults or after[3] != b_persists or after[0] != b_up:
            if rank_drops(before, after):
                continue
            return False
        a_dlq = after[8]
        gained = 0 if a_dlq is b_dlq else 8 * (len(a_dlq) - b_dlq_len)  # work(after) - work(before)
        a_msgs = after[4]
        if a_msgs is not b_msgs:
            if b_msgs_work is None:
                b_msgs_work = _msgs_work(b_msgs)
            gained += _msgs_work(a_msgs) - b_msgs_work
        a_levels = after[5]
        if a_levels is not b_levels:
            k = 0
            for a in a_levels:
                b = b_levels[k]
                if a is not b:
                    entries = a[0]
                    if entries is b[0]:  # only the cursor can have moved
                        gained += 4 * (a[1] - b[1])
                    else:
                        work = 8 * len(entries) + 4 * a[1]  # _level_work(a), inlined
                        for e in entries:
                            work -= e[2]
                        if b_level_work is None:
                            b_level_work = [None] * len(b_levels)
                        b_work = b_level_work[k]  # before's level k, counted once a state and only when needed
                        if b_work is None:
                            b_work = b_level_work[k] = _level_work(b)
                        gained += work - b_work
                k += 1
        a_topics = after[6]
        if a_topics is not b_topics:
            a, b = a_topics[0], b_topics[0]
            if a is not b:
                gained += 8 * (len(a[0]) - len(b[0])) + 4 * (a[1] + a[2] - b[1] - b[2])
            a, b = a_topics[1], b_topics[1]
            if a is not b:
                gained += 8 * (len(a[0]) - len(b[0])) + 4 * (a[1] + a[2] - b[1] - b[2])
        a_pq = after[7]
        if a_pq is not b_pq:
            if b_pq_work is None:
                b_pq_work = _pq_work(b_pq)
            work = 0  # _pq_work(a_pq), inlined
            for item in a_pq:
                work -= 2 if item[2] == AWAIT_RESUBMIT else 1
            gained += work - b_pq_work
        if gained <= 0:
            return False
    return True


# --- fairness ----------------------------------------------------------------------------------------------
_FAIR_ARGS = {
    "send": ("level",), "deliver": ("level",), "tick": (), "consume": ("topic", "offset"),
    "send_back": ("topic", "offset"), "dlq": ("topic", "offset"), "offset_commit": ("topic",),
    "persist": ("file",), "restart": (),
}


def fairness_key(action: Action) -> tuple | None:
    """The strong-fairness class of an action, or None for the environment's choices.

    Fairness assumed: every system action that is enabled infinitely often is taken infinitely often
    (strong fairness per class: send of a level, delivery per level, tick, consumption with success per
    queue position, send-back per position, commit per queue, persist per file, restart). Exempt are the
    environment's choices: put failures (``fault``), crashes and a consume attempt that fails. Classes
    name positions, never messages, so they survive the symmetry reduction.
    """
    verb = action.verb
    names = _FAIR_ARGS.get(verb)
    if names is None:
        return None
    if verb == "consume" and action.arg("status") != CONSUME_SUCCESS:
        return None
    return (verb,) + tuple(action.arg(name) for name in names)


# --- projections --------------------------------------------------------------------------------------------
def is_pending(s: State) -> bool:
    """Some message is neither consumed successfully nor dead-lettered (yet)."""
    for m in s[4]:
        if not (m[1] or m[2]):  # done, dead
            return True
    return False


class Observation(NamedTuple):
    """What an implementation can show of a state: the conformance test compares these."""

    up: bool
    levels: tuple  # per level: (entries ((msg, r, wait, dest topic), ...), cursor, table, persisted)
    topics: tuple  # per consumable topic: (name, ((msg, r), ...), committed offset, persisted offset)
    dlq: tuple  # ((msg, r), ...)


def observe(s: State, names: tuple[str, ...] | None = None) -> Observation:
    def name(i: int) -> str:
        return names[i] if names is not None else f"m{i}"

    levels = tuple(
        (tuple((name(e.msg), e.r, e.wait, TOPIC_NAMES[e.dest]) for e in lv.entries), lv.cursor, lv.table,
         lv.persisted)
        for lv in s.levels)
    topics = tuple((TOPIC_NAMES[t], tuple((name(c.msg), c.r) for c in tp.entries), tp.cmem, tp.cper)
                   for t, tp in enumerate(s.topics))
    return Observation(s.up, levels, topics, tuple((name(m), r) for m, r in s.dlq))


def describe(s: State) -> str:
    """A compact one-line picture of a state (graph labels, debugging)."""
    marks = {PENDING: "", DELIVERED: "*", SETTLED: "+", RESETTLED: "!", REWOUND: "~"}
    parts = ["up" if s.up else "DOWN"]
    for li, lv in enumerate(s.levels):
        units = " ".join(f"m{e.msg}r{e.r}{'w' + str(e.wait) if e.wait else ''}{marks[e.status]}"
                         for e in lv.entries)
        parts.append(f"L{li + 1}[{units}] c{lv.cursor}/t{lv.table}/p{lv.persisted}")
    for t, tp in enumerate(s.topics):
        if tp.entries or tp.cper:
            units = " ".join(f"m{c.msg}r{c.r}{'✓' if c.acked else ''}" for c in tp.entries)
            parts.append(f"{'T' if t == T_REAL else 'R'}[{units}] pull{tp.pull}/c{tp.cmem}/p{tp.cper}")
    if s.pq:
        parts.append("pq" + ",".join(f"{'TR'[t]}{o}{'sr'[st]}" for t, o, st in s.pq))
    if s.dlq:
        parts.append("dlq[" + " ".join(f"m{m}r{r}" for m, r in s.dlq) + "]")
    unsent = sum(1 for m in s.msgs if m.level >= 0)
    if unsent:
        parts.append(f"unsent{unsent}")
    return " ".join(parts)
