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
_FIELD_INDEX = {cls: {name: i for i, name in enumerate(cls._fields)} for cls in (State, Level, Topic, Sched, Copy, Msg)}
_new_tuple = tuple.__new__


def _with(s, **changes):
    """``s`` (a State, or one of its records) with some fields changed: the one way a transition builds its
    successor. Like ``_replace``, without its generic machinery (this is the checker's hot path)."""
    values = list(s)
    index = _FIELD_INDEX[type(s)]
    for name, value in changes.items():
        values[index[name]] = value
    return _new_tuple(type(s), values)


def _put(seq: tuple, i: int, value) -> tuple:
    return seq[:i] + (value,) + seq[i + 1:]


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


def _acked(tp: Topic, o: int) -> Topic:
    """The topic with its copy at offset o marked acked (consumed or sent back at least once)."""
    e = tp.entries[o]
    return tp if e.acked else _with(tp, entries=_put(tp.entries, o, _with(e, acked=True)))


def _append(tp: Topic, copy: Copy) -> Topic:
    return _with(tp, entries=tp.entries + (copy,))


def _schedule(s: State, level: int, entry: Sched) -> State:
    lv = s.levels[level - 1]
    return _with(s, levels=_put(s.levels, level - 1, _with(lv, entries=lv.entries + (entry,))))


def _fault_budget(s: State, cfg: ModelConfig) -> int | None:
    """The fault budget after one more put failure, or None when none is left."""
    if cfg.put_failures is None:
        return s.faults
    return s.faults - 1 if s.faults > 0 else None


def _rewind(s: State) -> State:
    """After a restart: delivered entries past a cursor and acked copies past a pull offset come again."""
    dup: set[int] = set()
    levels = []
    for lv in s.levels:
        entries = lv.entries
        if any(e.status != PENDING for e in entries[lv.cursor:]):
            changed = list(entries)
            for i in range(lv.cursor, len(entries)):
                e = entries[i]
                if e.status != PENDING:
                    dup.add(e.msg)
                    if e.status == DELIVERED:
                        changed[i] = _with(e, status=REWOUND)
            lv = _with(lv, entries=tuple(changed))
        levels.append(lv)
    for tp in s.topics:
        for c in tp.entries[tp.pull:]:
            if c.acked:
                dup.add(c.msg)
    msgs = s.msgs
    for i in sorted(dup):
        msgs = _mark(msgs, i, dup=True)
    return _with(s, msgs=msgs, levels=tuple(levels))


def _settle(levels: tuple[Level, ...]) -> tuple[Level, ...]:
    """A persist point covers every delivery of this epoch (the spec's view, whatever was written)."""
    out = []
    for lv in levels:
        if any(e.status == DELIVERED for e in lv.entries):
            lv = _with(lv, entries=tuple(_with(e, status=SETTLED) if e.status == DELIVERED else e
                                           for e in lv.entries))
        out.append(lv)
    return tuple(out)


def _persist_levels(levels: tuple[Level, ...]) -> tuple[Level, ...]:
    return tuple(_with(lv, persisted=lv.table) for lv in levels)


def _persist_topics(topics: tuple[Topic, ...]) -> tuple[Topic, ...]:
    return tuple(_with(tp, cper=tp.cmem) for tp in topics)


# The restarter: a crashed broker comes back (its only action while down).
def _restart(s: State, cfg: ModelConfig) -> tuple[Action, State]:
    levels = s.levels
    if "persist_before_load" in cfg.mutants:
        levels = tuple(_with(lv, cursor=0, table=0, persisted=0) for lv in levels)
    restarted = _with(s, up=True, levels=levels)
    if levels is not s.levels:
        restarted = _rewind(restarted)
    return Action("restart"), restarted


# The producer: each unsent message can be sent (to its level, or straight to TopicTest), or fail.
def _producer(s: State, cfg: ModelConfig, symmetric: bool, out: list) -> None:
    offered: set[int] = set()
    faults = _fault_budget(s, cfg)
    for i, m in enumerate(s.msgs):
        level = m.level
        if level < 0:
            continue
        if symmetric:
            if level in offered:
                continue
            offered.add(level)
        sent = _with(s, msgs=_put(s.msgs, i, Msg(-1, False, False, False)))
        if level == 0:
            sent = _with(sent, topics=_put(s.topics, T_REAL, _append(s.topics[T_REAL], Copy(i, 0, False, 0))))
        else:
            sent = _schedule(sent, level, Sched(i, 0, cfg.delay(level), PENDING, T_REAL))
        out.append((Action("send", (("msg", i), ("level", level))), sent))
        if faults is not None:
            out.append((Action("fault", (("site", SITE_PUT), ("msg", i))), _with(s, faults=faults)))


def _deliver(s: State, li: int, cfg: ModelConfig) -> State:
    """The level task puts the unit at its cursor back to its destination and moves on."""
    lv = s.levels[li]
    c = lv.cursor
    e = lv.entries[c]
    entries = _put(lv.entries, c, _with(e, status=RESETTLED if e.status in (SETTLED, RESETTLED) else DELIVERED))
    nxt = s
    if e.dest == DEST_DLQ:
        nxt = _with(s, dlq=s.dlq + ((e.msg, e.r),), msgs=_mark(s.msgs, e.msg, dead=True))
    else:
        nxt = _with(s, topics=_put(s.topics, e.dest, _append(s.topics[e.dest], Copy(e.msg, e.r, False, li + 1))))
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
    return _with(nxt, levels=_put(s.levels, li, Level(entries, cursor, table, lv.persisted, running)))


# The scheduler: each level's task delivers the unit at its cursor once it is due, or its put fails.
def _scheduler(s: State, cfg: ModelConfig, out: list) -> None:
    faults = _fault_budget(s, cfg)
    for li, lv in enumerate(s.levels):
        c = lv.cursor
        if c >= len(lv.entries) or lv.entries[c].wait != 0:
            continue
        e = lv.entries[c]
        out.append((Action("deliver", (("level", li + 1), ("msg", e.msg), ("r", e.r), ("to", TOPIC_NAMES[e.dest]))),
                    _deliver(s, li, cfg)))
        if faults is None:
            continue
        # 5.3.3 retries a failed put at the same unit; #9249 rescheduled past it.
        skip = "skip_failed_delivery" in cfg.mutants
        failed = _with(lv, cursor=c + 1 if skip else c, running=False)
        out.append((Action("fault", (("site", SITE_SCHEDULE_DELIVER), ("level", li + 1), ("msg", e.msg))),
                    _with(s, levels=_put(s.levels, li, failed), faults=faults)))
        if cfg.era == ERA_4:
            # E3 retries a unit whose rebuild threw; the E1 Timer era dropped it.
            drop = "drop_on_exception" in cfg.mutants
            failed = _with(lv, cursor=c + 1 if drop else c, running=False)
            out.append((Action("fault", (("site", SITE_SCHEDULE_REBUILD), ("level", li + 1), ("msg", e.msg))),
                        _with(s, levels=_put(s.levels, li, failed), faults=faults)))


# The clock: one tick passes while any unit still waits (waits never decrease along a level's queue).
def _clock(s: State, cfg: ModelConfig, out: list, collapse: bool = False) -> None:
    if not any(lv.entries and lv.entries[-1].wait > 0 for lv in s.levels):
        return
    step = min(e.wait for lv in s.levels for e in lv.entries if e.wait > 0) if collapse else 1
    levels = tuple(
        _with(lv, entries=tuple(_with(e, wait=e.wait - step) if e.wait > 0 else e for e in lv.entries),
              table=_not_due_table(lv, cfg))
        if lv.entries and lv.entries[-1].wait > 0 else lv
        for lv in s.levels)
    out.append((Action("tick", (("ticks", step),)) if step > 1 else Action("tick"), _with(s, levels=levels)))


def _not_due_table(lv: Level, cfg: ModelConfig) -> int:
    """5.x's level task writes updateOffset(level, currOffset) when the unit at its cursor is not due yet: a
    tick's first poll does. In the clean model the table already equals the cursor there; the cursor moves
    without a delivery only under #9249 (``skip_failed_delivery``), and then this write is what the store does
    (the conformance test's counterexample: a failed put skipped, the next unit not yet due)."""
    if cfg.era == ERA_5 and lv.cursor < len(lv.entries) and lv.entries[lv.cursor].wait > 0:
        return lv.cursor
    return lv.table


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


def _consume(s: State, cfg: ModelConfig, t: int, o: int, k: int | None, out: list) -> None:
    """One consume attempt of the copy at (t, o): the next pull (k None) or a local resubmit of pq[k]."""
    tp = s.topics[t]
    e = tp.entries[o]
    args = (("topic", TOPIC_NAMES[t]), ("offset", o), ("msg", e.msg), ("r", e.r))
    if k is None:
        # The pull request carries the client's offset, which the broker commits (ROCKETMQ.md 5.1).
        tp, rest = _with(tp, pull=o + 1, cmem=client_offset(s, t, cfg)), s.pq
    else:
        rest = s.pq[:k] + s.pq[k + 1:]
    ok = _with(s, msgs=_mark(s.msgs, e.msg, done=True), topics=_put(s.topics, t, _acked(tp, o)), pq=rest)
    out.append((Action("consume", args + (("status", CONSUME_SUCCESS),)), ok))
    later = _with(s, topics=_put(s.topics, t, tp), pq=tuple(sorted(rest + ((t, o, AWAIT_SEND_BACK),))))
    out.append((Action("consume", args + (("status", RECONSUME_LATER),)), later))


# The consumer: pull-and-consume the next copy of each queue; re-consume after a failed send-back.
def _consumer(s: State, cfg: ModelConfig, out: list) -> None:
    for t in (T_REAL, T_RETRY):
        tp = s.topics[t]
        if tp.pull < len(tp.entries):
            _consume(s, cfg, t, tp.pull, None, out)
    for k, (t, o, _stage) in enumerate(s.pq):
        _consume(s, cfg, t, o, k, out)


def _send_back(s: State, cfg: ModelConfig, k: int) -> list[tuple[Action, State]]:
    """The broker's consumerSendMsgBack for the failed message pq[k] (to a retry level or the DLQ), or its
    put failure. It runs synchronously in the consume thread right after the listener returned, so it is
    the only action while due (ROCKETMQ.md 4.2)."""
    out = []
    t, o, _stage = s.pq[k]
    e = s.topics[t].entries[o]
    rest = s.pq[:k] + s.pq[k + 1:]
    where = (("topic", TOPIC_NAMES[t]), ("offset", o), ("msg", e.msg))
    base = _with(s, topics=_put(s.topics, t, _acked(s.topics[t], o)), pq=rest)
    if cfg.goes_to_dlq(e.r):
        if "dlq_keeps_delay" in cfg.mutants and e.level > 0:
            nxt = _schedule(base, e.level, Sched(e.msg, e.r + 1, cfg.delay(e.level), PENDING, DEST_DLQ))
        else:
            nxt = _with(base, msgs=_mark(base.msgs, e.msg, dead=True), dlq=base.dlq + ((e.msg, e.r + 1),))
        out.append((Action("dlq", where + (("r", e.r + 1),)), nxt))
    else:
        level = cfg.retry_level(e.r)
        nxt = _schedule(base, level, Sched(e.msg, e.r + 1, cfg.delay(level), PENDING, T_RETRY))
        out.append((Action("send_back", where + (("r", e.r), ("level", level))), nxt))
    faults = _fault_budget(s, cfg)
    if faults is not None:
        if "commit_on_failed_send_back" in cfg.mutants:
            pq = rest  # dropped from the process queue as if acked
        else:
            pq = tuple(sorted(rest + ((t, o, AWAIT_RESUBMIT),)))
        out.append((Action("fault", (("site", SITE_SEND_BACK),) + where), _with(s, faults=faults, pq=pq)))
    return out


# The client: its periodic persistAll commits the offset; modelled once the queue has nothing left to
# pull (while it has, every pull carries the offset anyway).
def _client(s: State, cfg: ModelConfig, out: list) -> None:
    for t in (T_REAL, T_RETRY):
        co = client_offset(s, t, cfg)
        tp = s.topics[t]
        if co != tp.cmem and tp.pull == len(tp.entries):
            out.append((Action("offset_commit", (("topic", TOPIC_NAMES[t]), ("offset", co))),
                        _with(s, topics=_put(s.topics, t, _with(tp, cmem=co)))))


# The persister: a persist point writes delayOffset.json or consumerOffset.json (a bounded budget).
def _persister(s: State, cfg: ModelConfig, out: list) -> None:
    if s.persists <= 0:
        return
    if any(lv.table != lv.persisted or any(e.status == DELIVERED for e in lv.entries) for lv in s.levels):
        out.append((Action("persist", (("file", DELAY_FILE),)),
                    _with(s, persists=s.persists - 1, levels=_settle(_persist_levels(s.levels)))))
    if any(tp.cper != tp.cmem for tp in s.topics):
        out.append((Action("persist", (("file", CONSUMER_FILE),)),
                    _with(s, persists=s.persists - 1, topics=_persist_topics(s.topics))))


# The crasher: the broker (and its consumer session) goes down; restart is a separate action.
def _crasher(s: State, cfg: ModelConfig, out: list) -> None:
    if s.crashes <= 0:
        return
    for kind in cfg.crash_kinds:
        levels, topics = s.levels, s.topics
        if kind == "graceful":
            if "no_persist_at_shutdown" not in cfg.mutants:
                levels = _persist_levels(levels)
            levels = _settle(levels)
            topics = _persist_topics(topics)
        levels = tuple(Level(lv.entries, lv.persisted, lv.persisted, lv.persisted, False) for lv in levels)
        topics = tuple(_with(tp, pull=tp.cper, cmem=tp.cper) for tp in topics)
        down = _with(s, up=False, crashes=s.crashes - 1, levels=levels, topics=topics, pq=())
        out.append((Action("crash", (("kind", kind),)), _rewind(down)))


def successors(s: State, cfg: ModelConfig, symmetric: bool = False,
               collapse_ticks: bool = False) -> list[tuple[Action, State]]:
    """Every enabled action and its successor state (the model is deterministic per action).

    ``symmetric``: offer the send of only one unsent message per level (the others are renamings of
    it, merged anyway by the symmetry reduction; this only saves computing them).
    ``collapse_ticks``: the clock jumps to the next instant at which a unit becomes due (a ``tick`` with
    ``ticks`` > 1), see ``collapsible_ticks``.
    """
    if not s.up:
        return [_restart(s, cfg)]
    for k, item in enumerate(s.pq):
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
    work = 0
    for m in s.msgs:
        if m.level < 0:
            work += 8
    for lv in s.levels:
        work += 8 * len(lv.entries) + 4 * lv.cursor
        for e in lv.entries:
            work -= e.wait
    for tp in s.topics:
        work += 8 * len(tp.entries) + 4 * (tp.pull + tp.cmem)
    work += 8 * len(s.dlq)
    for _t, _o, stage in s.pq:
        work -= 2 if stage == AWAIT_RESUBMIT else 1
    return (s.crashes, s.faults, s.persists, 0 if s.up else 1, -work)


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
    return any(not (m.done or m.dead) for m in s.msgs)


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
