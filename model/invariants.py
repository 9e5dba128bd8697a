"""The invariants of DESIGN.md, as pure functions over a run's history (no store, no simulator).

Each checker returns ``{"holds", "checked", "violations": [{"msg_id", "explanation", "events"}], "vacuous"}``;
a violation names the message, quotes its events and says in one sentence what went wrong. ``vacuous`` says
that the invariant checked nothing although the history shows it should have (``VACUITY`` below, one rule
per invariant): a verdict that cannot fail is not a pass. ``RunContext`` carries the few facts a history does
not: delay levels, phase times; the groups come from the history's ``consumer_start`` events
(``RunContext.from_history``), the tags from its ``send`` events.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from .stats import (
    POLL_SLACK_MS,
    PULL_RETRY_MS,
    RESUME_AFTER_BROKER_RESTART_MS,
    delivery_lateness,
    due_mono_of_preloaded,
    due_mono_of_store,
    duplicate_consumes,
    is_pending_preloaded,
    is_schedule_store,
    pending_messages,
)
from .topics import DLQ_PREFIX, RETRY_PREFIX, SCHEDULE_TOPIC, TIMER_TOPIC

LEVEL_POLL_MS = 100  # ScheduleMessageService.DELAY_FOR_A_WHILE
TIMER_GAVE_UP = re.compile(r"Message processing failed after (\d+) retries\. Msg: (\S+)")
TIMER_CHAIN_LOOP = re.compile(r"timer log chain of slot (-?\d+) loops at (-?\d+): dequeue stuck")
LEVEL_UNIT_ERROR = re.compile(r"ScheduleMessageService, messageTimeup execute error, level (\d+) offset=(\d+)")
DELAY_OFFSET_CORRECTED = re.compile(r"schedule CQ offset invalid, level (\d+): correct delay offset from (\d+) to (\d+)")
PULL_OFFSET_ILLEGAL = re.compile(r"the pull request offset illegal, MessageQueue\(topic='([^']+)', broker_name='[^']*', "
                                 r"queue_id=(\d+)\) (-?\d+) -> (-?\d+)")
DAMAGE_SITES = frozenset({"power_failure", "store_rollback", "cq_truncation"})  # faults that lose stored data
REPUT_UNREADABLE = re.compile(r"reput: unreadable record at (\d+):")
LOGIC_ORDER_WRONG = re.compile(r"\[BUG\]logic queue order maybe wrong, expect (\d+) current (\d+) "
                               r"topic (\S+) queue (\d+)")
SECTOR_BYTES = 512  # a power failure tears a file on a sector boundary (store/disk.py's model)
CQ_UNIT_BYTES = 20  # ConsumeQueue.CQ_STORE_UNIT_SIZE: the logic offsets of that line are unit * 20

CONSUME_SUCCESS = "CONSUME_SUCCESS"
FAULT_EVIDENCE = ("crash", "restart", "fault", "store_rollback", "cq_truncate", "cq_unindexed", "timer_torn_unit",
                  "unstored")  # event kinds without which no copy can be lost to a fault
MAX_QUOTED_EVENTS = 8
MAX_VIOLATIONS = 50
SEND_BACK_TO_DLQ_MS = 1000  # a dead letter is stored in the same step as its send-back; allow scheduling slack
SETTLE_AFTER_FAULT_MS = 15_000  # lateness is judged only for messages due this long after the last fault
PULL_BATCH_UNITS = 32  # DefaultMQPushConsumer.pullBatchSize: consume-queue units one pull reads at most


@dataclass(frozen=True)
class GroupInfo:
    group: str
    topic: str
    model: str  # CLUSTERING or BROADCASTING
    client_ids: tuple[str, ...]
    max_reconsume_times: int  # -1 already resolved to 16
    tags: frozenset[str] | None = None  # None: "*"


def subscription_tags(expression: str) -> frozenset[str] | None:
    """RocketMQ's tag expression (``"TagA || TagB"``) as a set; None for every tag (``"*"`` or empty)."""
    if expression.strip() in ("", "*"):
        return None
    return frozenset(t.strip() for t in expression.split("||") if t.strip())


def groups_from_history(events: list[dict]) -> tuple[GroupInfo, ...]:
    """One ``GroupInfo`` per (group, topic) from the ``consumer_start`` events, in order of first start; the
    client ids of every instance that ever started. The last start's subscription and settings win."""
    starts: dict[tuple[str, str], list[dict]] = {}
    for e in events:
        if e["kind"] == "consumer_start":
            starts.setdefault((e["group"], e["topic"]), []).append(e)
    groups = []
    for (group, topic), evs in starts.items():
        last = evs[-1]
        client_ids = tuple(dict.fromkeys(e["client_id"] for e in evs))
        groups.append(GroupInfo(group=group, topic=topic, model=last["model"], client_ids=client_ids,
                                max_reconsume_times=last["max_reconsume_times"],
                                tags=subscription_tags(last["subscription"])))
    return tuple(groups)


@dataclass(frozen=True)
class RunContext:
    groups: tuple[GroupInfo, ...]
    delay_level_ms: dict[int, int]
    drain_start_ms: int
    end_ms: int
    timer_precision_ms: int = 1000
    duplicate_window_ms: int = 22_000  # persist windows: delay offsets + broker offsets + client offsets + slack
    extra: dict = field(default_factory=dict)
    era: str = "5.3.3"  # the broker's and clients' RocketMQ version: the producer fallback's DLQ rule differs
    cq_units_per_file: int = 300_000  # a level's poll reads to the end of one consume-queue file
    timer_retry_until_success: bool = False  # timerEnableRetryUntilSuccess: without it 5.3.3 gives a put up (#8979)
    schedule_async_deliver: bool = False  # enableScheduleAsyncDeliver: due level units are put asynchronously
    timer_roll_window_slots: int = 0  # 5.x timerRollWindowSlots as the timer store takes it; 0: unknown (no roll)

    @classmethod
    def from_history(cls, events: list[dict], **facts) -> RunContext:
        """The context of a run whose groups, subscriptions and clients are read from its own history."""
        return cls(groups=groups_from_history(events), **facts)

    @property
    def max_delay_level(self) -> int:
        return max(self.delay_level_ms) if self.delay_level_ms else 0

    def level_delay_ms(self, level: int) -> int:
        return self.delay_level_ms[min(max(level, 1), self.max_delay_level)]


def _verdict(checked: int, violations: list[dict], vacuous: bool = False) -> dict:
    return {"holds": not violations, "checked": checked, "violations": violations[:MAX_VIOLATIONS],
            "violation_count": len(violations), "vacuous": vacuous}


def _quote(events: list[dict]) -> list[dict]:
    if len(events) <= MAX_QUOTED_EVENTS:
        return events
    return events[: MAX_QUOTED_EVENTS // 2] + events[-MAX_QUOTED_EVENTS // 2 :]


class _Index:
    """The history sorted by message and by kind, built once for all checkers."""

    reput_from_queues = False  # 4.x start() reputs from the queues' max physical offset; check_events sets it

    def __init__(self, events: list[dict]) -> None:
        self.events = events
        self.by_msg: dict[str, list[dict]] = defaultdict(list)
        self.by_kind: dict[str, list[dict]] = defaultdict(list)
        self.stores_by_msg: dict[str, list[dict]] = defaultdict(list)  # the excuses walk a message's stores
        for e in events:
            self.by_kind[e["kind"]].append(e)
            msg_id = e.get("msg_id")
            if msg_id is not None:
                self.by_msg[msg_id].append(e)
                if e["kind"] == "store":
                    self.stores_by_msg[msg_id].append(e)
        self.sent_ok = [e for e in self.by_kind["send"] if e["status"] == "SEND_OK"]
        # run --from-store: msg_id -> the copies the store held at the start (``preloaded``), not sent in the run
        sent_ids = {e["msg_id"] for e in self.sent_ok}
        self.preloaded: dict[str, list[dict]] = {}
        for e in self.by_kind["preloaded"]:
            if e["msg_id"] not in sent_ids:
                self.preloaded.setdefault(e["msg_id"], []).append(e)
        self._pending: dict[str, int] | None = None
        self.drain_t = next((e["t_ms"] for e in self.by_kind["drain"]), None)
        self.clock_steps = [e for e in self.by_kind["fault"] if e.get("site") == "clock"]
        self.broker_crashes = [e for e in self.by_kind["crash"] if e["target"] == "broker"]
        self.restarts = [e for e in self.by_kind["restart"] if e["target"] == "broker" and e.get("ok")]
        self.power_crashes = [c for c in self.broker_crashes if c.get("crash_kind") == "power"]
        self.torn_timer_slots = self._torn_timer_slots()
        # msg_id -> seqs of the fault events that destroyed or unindexed one of its copies
        self.cut_by_fault: dict[str, list[int]] = defaultdict(list)
        for e in self.by_kind["cq_truncate"]:
            for m in e.get("cut_msg_ids", ()):
                if m:
                    self.cut_by_fault[m].append(e["seq"])
        for e in self.by_kind["store_rollback"]:
            for m in e["lost_msg_ids"]:
                self.cut_by_fault[m].append(e["seq"])
        for e in self.by_kind["unstored"]:  # PUT_OK for a record larger than a commit-log file: nothing stored
            if e["msg_id"]:
                self.cut_by_fault[e["msg_id"]].append(e["seq"])
        self.stale_units = self._stale_units_after_power_failure()
        # Nothing struck (no crash, restart, fault of any kind, lost or unstored copy): nothing was lost to a fault,
        # and the excuses need not be asked (a fault-free dense run asks lost_to_a_fault for every copy)
        self.faultless = not any(self.by_kind[kind] for kind in FAULT_EVIDENCE)
        # #8979: without timerEnableRetryUntilSuccess (the default) 5.3.2-5.3.3 drop a due timer message whose put
        # failed three times, with this ERROR line; check_events turns the excuse on only for such a broker
        self.timer_gives_up = False
        self.async_table_runs_ahead = False  # 5.x asynchronous delivery: a poll may move the table past a failed head
        # 4.9.8's executeOnTimeup retries a unit whose messageTimeup throws (nextOffset names it); 5.x moves past
        # it. check_events turns this on for a 4.x broker.
        self.level_retries_a_broken_unit = False
        # 5.x timerRollWindowSlots and the timer's precision (check_events sets them; 0 slots: rolls not judged)
        self.timer_roll_window_slots, self.timer_precision_ms = 0, 1000
        self.timer_gave_up: dict[str, int] = {}
        # (level, queue offset, seq, t_ms, fault site) of each unit whose messageTimeup threw (the service's ERROR)
        self.level_unit_errors = [(int(m.group(1)), int(m.group(2)), e["seq"], e["t_ms"], e.get("fault_site"))
                                  for e in self.by_kind["log"] if e["logger"] == "ScheduleMessageService"
                                  for m in [LEVEL_UNIT_ERROR.match(e["message"])] if m is not None]
        # (level, corrected to, seq) of each level offset correctDelayOffset lowered to its queue's max offset
        self.delay_offsets_lowered = [(int(m.group(1)), int(m.group(3)), e["seq"])
                                      for e in self.by_kind["log"] if e["logger"] == "ScheduleMessageService"
                                      for m in [DELAY_OFFSET_CORRECTED.match(e["message"])]
                                      if m is not None and int(m.group(3)) < int(m.group(2))]
        # (level, stale offset, corrected to, seq): the same lowerings with the offset the file still holds
        self.delay_offsets_lowered_from = [(int(m.group(1)), int(m.group(2)), int(m.group(3)), e["seq"])
                                           for e in self.by_kind["log"] if e["logger"] == "ScheduleMessageService"
                                           for m in [DELAY_OFFSET_CORRECTED.match(e["message"])]
                                           if m is not None and int(m.group(3)) < int(m.group(2))]
        for e in self.by_kind["log"]:
            m = TIMER_GAVE_UP.match(e["message"]) if e["logger"] == "TimerMessageStore" else None
            if m is not None and int(m.group(1)) >= 3:
                self.timer_gave_up[m.group(2)] = e["seq"]
        for e in self.stale_units:
            if e["msg_id"]:
                self.cut_by_fault[e["msg_id"]].append(e["seq"])
        # Where a group's offset may stand past a queue's end: a power failure (#8239) or a store rollback
        # (today's consumerOffset.json over a copied store) cut queues back, (seq of the crash, seq of the restart).
        cuts = self.power_crashes + [c for c in self.broker_crashes if c.get("site") == "store_rollback"]
        self.queue_cuts = sorted((c["seq"], next((r["seq"] for r in self.restarts if r["seq"] > c["seq"]), None))
                                 for c in cuts)
        self.timer_offset_skips = self._timer_offset_skips(cuts)

    def _stale_units_after_power_failure(self) -> list[dict]:
        """Copies a recovery could not index: after a power failure (or a CQ truncation) a consume queue may hold
        stale units that point where new copies now lie (CQ recovery checks units only against the commit log's end), and a new
        copy at such a queue offset is skipped as "built repeatedly" (#495, ROCKETMQ.md 2.6)."""
        cuts = [c["seq"] for c in self.power_crashes] + [e["seq"] for e in self.by_kind["cq_truncate"]]
        if not cuts:
            return []
        # a consume-queue truncation leaves stale bytes past the new tail too (explore seed 1655531208)
        return [e for e in self.by_kind["cq_unindexed"] if e["seq"] > min(cuts)]

    def _timer_offset_skips(self, cuts: list[dict]) -> list[tuple[int, int | None, int]]:
        """(restart seq, seq of the next cut or None, queue-offset bound) for each store rollback that left no
        copy in the timer topic's consume queue while config/timercheck kept today's lastTimerQueueOffset.
        TimerMessageStore.recover (5.3.3) takes currQueueOffset from the checkpoint and clamps it to the queue's
        [min, max] (#7480) only when ``getConsumeQueue(TIMER_TOPIC, 0) != null``; with the queue gone there is no
        clamp, and enqueue reads the recreated queue from that stale offset on. The bound is one past the highest
        timer-topic queue offset stored before the rollback (the checkpoint holds at most that)."""
        skips = []
        lost: set[str] = set()
        rollbacks = self.by_kind["store_rollback"]
        ordered = sorted(cuts, key=lambda c: c["seq"])
        for i, crash in enumerate(ordered):
            if crash.get("site") != "store_rollback":
                continue
            rollback = next((r for r in rollbacks if r["seq"] > crash["seq"]), None)
            if rollback is None:
                continue
            lost.update(rollback["lost_msg_ids"])
            before = [e for e in self.by_kind["store"]
                      if e["topic"] == TIMER_TOPIC and e["seq"] < crash["seq"]]
            if not before or any(e["msg_id"] not in lost for e in before):
                continue  # a timer copy survived: the queue exists and the #7480 clamp applies
            restart = next((r["seq"] for r in self.restarts if r["seq"] > crash["seq"]), None)
            if restart is None:
                continue
            until = ordered[i + 1]["seq"] if i + 1 < len(ordered) else None
            skips.append((restart, until, max(e["queue_offset"] for e in before) + 1))
        return skips

    def skipped_by_a_lowered_delay_offset(self, msg_id: str, after_seq: int = -1) -> bool:
        """A power failure cut a level's queue behind the offset delayOffset.json holds: each restart's
        correctDelayOffset lowers that stale offset to the queue's max offset, and until a persist rewrites the
        file every restart reloads it. A copy stored into the queue below that max offset since then, and not
        delivered before the next restart, is skipped by the level (explore seed 1200000050: 100 -> 50, copies
        stored at 50-60, then after a second power failure 100 -> 61)."""
        if not self.delay_offsets_lowered:
            return False
        delivers = [d for d in self.by_msg.get(msg_id, ()) if d["kind"] == "deliver"]
        for e in self._stores(msg_id, after_seq):
            if e["topic"] != SCHEDULE_TOPIC:
                continue
            level, unit = e["queue_id"] + 1, e["queue_offset"]
            for lowered_level, to, seq in self.delay_offsets_lowered:
                if lowered_level == level and seq > e["seq"] and to > unit and not any(
                        e["seq"] < d["seq"] < seq and d["level"] == level and d.get("schedule_queue_offset") == unit
                        for d in delivers):
                    return True
        return False

    def skipped_by_a_reloaded_delay_offset(self, msg_id: str, after_seq: int = -1) -> bool:
        """correctDelayOffset lowered a level's stale offset (delayOffset.json's F, past the queue's max offset T
        after a cut) only in memory; the first persist runs 10 s after the start (both eras). A crash before it
        leaves F in the file, and when the queue has grown past F by the next restart nothing corrects it: the
        level resumes at F and never reads a unit in [T, F) stored since the correction and not delivered before
        that crash (explore seed 1070000650, 5.3.3: a rollback, 175 -> 167, copies at 173-174, a crash 6.2 s after
        the restart, the level resuming at 175). A graceful shutdown's persist writes the live table, unless a
        crash cuts that persist short (seed 1070000672, 4.9.8: 103 -> 102, a copy at 102, the shutdown 150 ms
        after the restart crashed in its delayOffset.json write, the level resuming at 103). The near miss of
        ``skipped_by_a_lowered_delay_offset``, which needs the next restart to correct (log) again."""
        if not self.delay_offsets_lowered:
            return False
        events = self.by_msg.get(msg_id, ())
        for e in self._stores(msg_id, after_seq):
            if e["topic"] != SCHEDULE_TOPIC:
                continue
            level, unit = e["queue_id"] + 1, e["queue_offset"]
            stop = next((c for c in self.broker_crashes if c["seq"] > e["seq"]), None)
            if stop is None:
                continue
            back = next((r["seq"] for r in self.restarts if r["seq"] > stop["seq"]), None)
            if stop.get("crash_kind") not in ("process", "power") and not any(
                    f.get("site") == "persist.delayOffset.json" and f.get("action") == "crash during shutdown"
                    and stop["seq"] < f["seq"] < (back or f["seq"] + 1) for f in self.by_kind["fault"]):
                continue  # a graceful shutdown persists the live table, unless a crash cut that persist short
            if any(e["seq"] < d["seq"] < stop["seq"] and d["level"] == level
                   and d.get("schedule_queue_offset") == unit for d in events if d["kind"] == "deliver"):
                continue
            first = self._level_read_first(level, stop["seq"])
            if first is None or first.get("schedule_queue_offset", -1) <= unit or any(
                    lv == level and stop["seq"] < seq < first["seq"]
                    for lv, _, _, seq in self.delay_offsets_lowered_from):
                continue  # corrected again at the restart: skipped_by_a_lowered_delay_offset's case
            for lowered_level, stale, to, seq in self.delay_offsets_lowered_from:
                if (lowered_level == level and seq < e["seq"] and to <= unit < stale
                        and not any(seq < c["seq"] < stop["seq"] for c in self.broker_crashes)
                        and not any(p["file"] == "delayOffset.json" and seq < p["seq"] < (back or p["seq"] + 1)
                                    for p in self.by_kind["persist"])):
                    return True
        return False

    def _level_read_first(self, level: int, after_seq: int) -> dict | None:
        """The first unit a level read after an event (a broker stop): its first delivery, or an earlier ERROR
        line of a unit whose messageTimeup threw, as {"seq", "schedule_queue_offset"}; None if neither. The
        line names the unit the level stood at (executeOnTimeup logs ``nextOffset``, 4.9.8; 5.x alike), and
        4.9.8 retries that unit every 100 ms: a level stuck at a torn unit never delivers again (explore seed
        1070001218 with combos: a reloaded delay offset put level 2 at a unit a power failure tore, so
        ``skipped_by_a_reloaded_delay_offset`` saw no delivery to show where the level resumed)."""
        first = next((d for d in self.by_kind["deliver"]
                      if d["seq"] > after_seq and d["level"] == level), None)
        error = next(((offset, seq) for lv, offset, seq, _t, _site in self.level_unit_errors
                      if lv == level and seq > after_seq), None)
        if error is not None and (first is None or error[1] < first["seq"]):
            return {"seq": error[1], "schedule_queue_offset": error[0]}
        return first

    def skipped_behind_a_failed_async_put(self, msg_id: str, after_seq: int = -1) -> bool:
        """5.x asynchronous delivery (explore seed 900000578): a level's put of a due unit failed, and while that head
        waits for its resend (HandlePutResultTask) the level's next poll finds the unit behind it not due and writes
        the offset table past the head (``updateOffset(currOffset)``, 5.3.3 executeOnTimeUp; 4.9.8 does not). A
        broker stop before the resend succeeds leaves the table there: a graceful shutdown stops the message store
        before the schedule service, so the pending resend fails and ``stop()`` persists the table; a crash keeps
        the last persist. The restarted level starts past the head and never reads it again. Recognised by a failed
        put to the message's topic after its level copy was stored, no delivery of that unit before the next broker
        stop, and the level's first delivery after the stop being of a later unit."""
        if not self.async_table_runs_ahead:
            return False
        events = self.by_msg.get(msg_id, ())
        topics = {e["topic"] for e in events if e["kind"] == "send"}
        for e in self._stores(msg_id, after_seq):
            if e["topic"] != SCHEDULE_TOPIC:
                continue
            level, unit = e["queue_id"] + 1, e["queue_offset"]
            delivered = [d["seq"] for d in events if d["kind"] == "deliver" and d["level"] == level
                         and d.get("schedule_queue_offset") == unit and d["seq"] > e["seq"]]
            since = e["seq"]
            for stop in (c for c in self.broker_crashes if c["seq"] > e["seq"]):
                if any(s < stop["seq"] for s in delivered):
                    break  # delivered before this stop: whatever came later is not this skip
                failed = any(f.get("site") == "commitlog.put" and f.get("action") == "fail"
                             and (f.get("detail") in topics or str(f.get("detail", "")).startswith(RETRY_PREFIX))
                             and since < f["seq"] < stop["seq"] for f in self.by_kind["fault"])
                first = next((d for d in self.by_kind["deliver"] if d["seq"] > stop["seq"] and d["level"] == level),
                             None)
                if failed and first is not None and first.get("schedule_queue_offset", -1) > unit:
                    return True
                since = stop["seq"]
        return False

    def skipped_by_a_stale_timer_queue_offset(self, msg_id: str, after_seq: int = -1) -> bool:
        """A store rollback removed the timer topic's consume queue but not config/timercheck: the restarted
        broker's timer enqueue starts at the checkpoint's lastTimerQueueOffset, unclamped because the queue is
        null at recovery (TimerMessageStore.recover, 5.3.3), so timer copies stored into the recreated queue
        below that offset are never put on the wheel. Covers timer-topic copies stored after that restart (and
        before the next cut) below the bound."""
        return any(e["topic"] == TIMER_TOPIC and e["seq"] > restart and (until is None or e["seq"] < until)
                   and e["queue_offset"] < bound
                   for e in self._stores(msg_id, after_seq) for restart, until, bound in self.timer_offset_skips)

    def _torn_timer_slots(self) -> list[tuple[int, int]]:
        """(slot_ms, seq of the power failure) for each torn timer-log unit a recovery after one relinked."""
        slots = []
        for t in self.by_kind["timer_torn_unit"]:
            crash = next((c for c in reversed(self.broker_crashes) if c["seq"] < t["seq"]), None)
            if crash is not None and crash.get("crash_kind") == "power":
                slots.append((t["slot_ms"], crash["seq"]))
        return slots

    def read_through_a_stale_reference(self, deliver: dict, ctx: RunContext) -> bool:
        """A timer delivery found in the chain of another (earlier) slot after a power failure: the wheel and the
        timer log kept references into what the failure cut, and new units or messages now lie there; RocketMQ
        never compares a unit with the slot it was read from (#10668 family)."""
        slot_ms = deliver.get("slot_ms")
        if slot_ms is None or slot_ms < 0 or slot_ms == deliver["due_ms"] - ctx.timer_precision_ms:  # -1: due at once
            return False
        return any(c["seq"] < deliver["seq"] for c in self.power_crashes)

    def pending(self, ctx: RunContext) -> dict[str, int]:
        """Messages not due early enough to be consumed by the end of the drain (model.stats.pending_messages)."""
        if self._pending is None:
            self._pending = pending_messages(self.events, ctx.end_ms, ctx.timer_precision_ms, ctx.era)
        return self._pending

    def quote(self, msg_id: str) -> list[dict]:
        return _quote(self.by_msg.get(msg_id, []))

    def lost_to_a_fault(self, msg_id: str, group: str | None = None, after_seq: int = -1) -> bool:
        """The fault itself destroyed a copy: a power failure (ASYNC_FLUSH), a cut queue, a rolled-back store (or
        RocketMQ answered PUT_OK and stored nothing: ``unstored``); or, after a power failure or a rollback, the
        group's offset already stood past where the message was stored, or its unit sits in a pull batch behind a
        stale one. ``after_seq``: only copies stored and faults struck after that event count
        (at_least_once_redelivery asks about the copy that was to come back after a failed attempt; no_loss about
        any copy)."""
        if self.faultless:
            return False
        return (any(seq > after_seq for seq in self.cut_by_fault.get(msg_id, ()))
                or self.lost_to_power_failure(msg_id, after_seq)
                or self.behind_a_torn_timer_unit(msg_id, after_seq)
                or self.rolled_behind_a_torn_timer_unit(msg_id, after_seq)
                or self.behind_a_stale_unit(msg_id, after_seq)
                or self.skipped_by_a_stale_timer_queue_offset(msg_id, after_seq)
                or self.skipped_by_a_lowered_delay_offset(msg_id, after_seq)
                or self.skipped_by_a_reloaded_delay_offset(msg_id, after_seq)
                or self.skipped_behind_a_failed_async_put(msg_id, after_seq)
                or self.stalled_by_a_looping_timer_chain(msg_id, after_seq)
                or (self.timer_gives_up and self.timer_gave_up.get(msg_id, -1) > after_seq)
                or self.behind_a_restarted_timer_read_time(msg_id, after_seq)
                or self.behind_a_broken_level_unit(msg_id, after_seq)
                or self.broker_gone_after_power_failure(after_seq)
                or (group is not None and self.below_a_committed_offset(msg_id, group, after_seq))
                or (group is not None and self.below_a_moved_pull_offset(msg_id, group, after_seq))
                or (group is not None and self.below_an_offset_pulled_before_a_cut(msg_id, group, after_seq))
                or (group is not None and self.below_a_moved_pull_offset_after_a_cq_cut(msg_id, group,
                                                                                         after_seq))
                or self.skipped_by_a_reput_begun_inside_a_record(msg_id, group, after_seq)
                or self.filtered_out_by_a_torn_tags_code(msg_id, group, after_seq))

    def broker_gone_after_power_failure(self, after_seq: int = -1) -> bool:
        """#9705 (before develop): config files are written without fsync, so a power failure within the kernel's
        30 s writeback of a rewrite (a shutdown, a new topic) can tear topics.json and its .bak; the broker then
        refuses to start and never comes back. Whatever was still to come after that is RocketMQ's loss."""
        gone = self.gone_for_good()
        return gone is not None and gone[1]["seq"] > after_seq

    def gone_for_good(self) -> tuple[dict, dict] | None:
        """(the power failure, the refused restart) of a broker that #9705 kept down to the end, or None."""
        for r in self.by_kind["restart"]:
            if r["target"] == "broker" and r.get("ok") is False and ".json" in r.get("error", ""):
                crash = next((c for c in reversed(self.broker_crashes) if c["seq"] < r["seq"]), None)
                later = any(x["seq"] > r["seq"] for x in self.restarts)
                if crash is not None and crash.get("crash_kind") == "power" and not later:
                    return crash, r
        return None

    def behind_a_restarted_timer_read_time(self, msg_id: str, after_seq: int = -1) -> bool:
        """A backwards clock step leaves the wheel's read time ahead of the clock (the reader waits for the clock
        to catch up); a restart then reloads that read time from timercheck but sets the write time to now
        (TimerMessageStore.recover), so a copy due before the read time is linked into a slot the reader has
        passed and never read. Covers timer copies still undelivered at such a restart (enqueued after it), due
        before the broker time the clock had reached before the step."""
        if not self.clock_steps:
            return False
        delivered = [d["seq"] for d in self.by_msg.get(msg_id, []) if d["kind"] == "deliver"]
        for e in self._stores(msg_id, after_seq):
            out = e.get("timer_out_ms")
            if out is None:
                continue
            for st in self.clock_steps:
                if st.get("by_ms", 0) < 0 and out < st["broker_ms"] - st["by_ms"] and any(
                        r["seq"] > st["seq"] and not any(e["seq"] < d < r["seq"] for d in delivered)
                        for r in self.restarts):
                    return True
        return False

    def consumed_copy_destroyed(self, attempt: dict) -> bool:
        """The copy a consume attempt read was destroyed after it was stored: a store rollback to a snapshot
        older than the copy (``lost_msg_ids``), or a cut of its consume-queue unit. Only that copy counts."""
        msg_id = attempt["msg_id"]
        store = next((e for e in reversed(self.by_msg.get(msg_id, [])) if e["kind"] == "store"
                      and e["seq"] < attempt["seq"] and e["topic"] == attempt["queue_topic"]
                      and e["queue_id"] == attempt["queue_id"] and e["queue_offset"] == attempt["queue_offset"]),
                     None)
        if store is None:
            return False
        for e in self.by_kind["store_rollback"]:
            if e["seq"] > store["seq"] and store["t_ms"] > e["snapshot_t_ms"] and msg_id in e["lost_msg_ids"]:
                return True
        if any(crash["seq"] > store["seq"] and _not_durable(store, self._durable_end(crash))
               for crash in self.power_crashes):
            return True  # the client consumed it from its ProcessQueue after the broker lost it (explore seed 282)
        return any(e["seq"] > store["seq"] and e["topic"] == store["topic"] and e["queue_id"] == store["queue_id"]
                   and e["to_offset"] <= store["queue_offset"] < e["from_offset"] and msg_id in e["cut_msg_ids"]
                   for e in self.by_kind["cq_truncate"])

    def local_retry_dropped(self, attempt: dict) -> bool:
        """The client's local retry of this failed attempt (its send-back failed) never ran: the ProcessQueue
        was dropped first, and ConsumeRequest.run returns at once on a dropped queue."""
        return any(e["seq"] > attempt["seq"] and e["group"] == attempt["group"]
                   and e["client_id"] == attempt["client_id"] and e["queue_topic"] == attempt["queue_topic"]
                   and e["queue_id"] == attempt["queue_id"] and e["queue_offset"] == attempt["queue_offset"]
                   for e in self.by_msg.get(attempt["msg_id"], []) if e["kind"] == "local_retry_dropped")

    @cached_property
    def timer_chain_stalls(self) -> list[tuple[int, int, int | None]]:
        """(slot_ms, seq of the stall, seq of the broker's next crash or None) for each timer dequeue stalled on a
        slot chain that links back to itself, after a power failure (only stale wheel references make one)."""
        stalls = []
        for e in self.by_kind["log"]:
            m = TIMER_CHAIN_LOOP.match(e["message"]) if e["logger"] == "TimerMessageStore" else None
            if m is None or not any(c["seq"] < e["seq"] for c in self.power_crashes):
                continue
            end = next((c["seq"] for c in self.broker_crashes if c["seq"] > e["seq"]), None)
            stalls.append((int(m.group(1)), e["seq"], end))
        return stalls

    def stalled_by_a_looping_timer_chain(self, msg_id: str, after_seq: int = -1) -> bool:
        """Seed 1070000255 (5.x timer): a restart after a process crash relinks the wheel from timer-log units
        still only in the page cache and its first flush round forces the wheel and timercheck (the log has
        nothing new to force: truncateDirtyFiles set its flushed position); a power failure then cuts the log
        below those slots' positions, checkPhyPos finds no first position below the cut, and the next unit put
        in such a slot (re-enqueued or new) may land on its stale lastPos with prevPos = itself. The dequeue
        thread walks that chain for ever (TimerMessageStore.dequeue, ``while (currOffsetPy != -1)``): nothing
        due in that slot or later comes out until the broker stops. Covers timer-topic copies due at or after the
        stalled slot stored before the stall, and any timer-topic copy stored after it while that broker ran."""
        return any(e["topic"] == TIMER_TOPIC and (end is None or e["seq"] < end)
                   and (e["seq"] > stall or e.get("timer_out_ms", -1) >= slot_ms)
                   for e in self._stores(msg_id, after_seq) for slot_ms, stall, end in self.timer_chain_stalls)

    def _stores(self, msg_id: str, after_seq: int) -> list[dict]:
        """The message's store events after ``after_seq`` (every one for -1: seqs start at 0). Read only."""
        stores = self.stores_by_msg.get(msg_id, [])
        return stores if after_seq < 0 else [e for e in stores if e["seq"] > after_seq]

    def behind_a_torn_timer_unit(self, msg_id: str, after_seq: int = -1) -> bool:
        """A power failure tore the timer log's last unit; its head passed the recovery check and relinked the
        slot its torn bytes name (RocketMQ's recoverAndRevise does the same), so the units that slot held
        before are unreachable. Covers the timer copies stored before that failure and due in that slot."""
        return any(e.get("timer_out_ms") == slot_ms and e["seq"] < power_seq
                   for e in self._stores(msg_id, after_seq) for slot_ms, power_seq in self.torn_timer_slots)

    def rolled_behind_a_torn_timer_unit(self, msg_id: str, after_seq: int = -1) -> bool:
        """5.x (explore seeds 1070000321, 1070000459 with combos): a timer copy due a roll window or more past the
        write time w is linked as a roll unit into an earlier slot, w + slots/2 (or w + slots when due later
        still; TimerMessageStore.doEnqueue), to be put back into the timer topic from there. A power failure kept
        a torn last timer-log unit (in both seeds its delay lay past the surviving sector: it named the slot of
        its write time); recoverAndRevise checks only size and magic and relinks that slot's lastPos to it, so
        the slot's chain runs into the torn unit's own chain and the roll units the slot held are never read
        again (1070000321: window 3, copies due 42 s stored at 39.1-39.4 s, rolled into slot 40 s). The units
        due in that slot are ``behind_a_torn_timer_unit``'s. Covers a timer-topic copy stored before the
        failure, neither delivered nor stored again before it, that a write time between its store (one slot
        of lag: the enqueue's write time moves at its polls) and the failure rolls into the torn unit's slot."""
        slots, p = self.timer_roll_window_slots, self.timer_precision_ms
        if slots <= 0 or not self.torn_timer_slots:
            return False
        events = self.by_msg.get(msg_id, ())
        for e in self._stores(msg_id, after_seq):
            out = e.get("timer_out_ms")
            if e["topic"] != TIMER_TOPIC or out is None:
                continue
            for slot_ms, power_seq in self.torn_timer_slots:
                if e["seq"] > power_seq or any(x["kind"] in ("store", "deliver") and e["seq"] < x["seq"] < power_seq
                                               for x in events):
                    continue  # stored after the failure, or its unit was done with (delivered, rolled on) before it
                earliest, latest = e["broker_ms"] // p * p - p, self._broker_ms_at(power_seq)
                for w in (slot_ms - slots // 2 * p, slot_ms - slots * p):
                    if earliest <= w <= latest and _roll_slot_ms(out, w, slots, p) == slot_ms:
                        return True
        return False

    def _broker_ms_at(self, seq: int) -> int:
        """The latest broker time the history shows by the power failure ``seq``: a broker-clocked event's time
        carried on by the virtual time since (the largest such: a write time never goes back with the clock)."""
        crash = next(c for c in self.power_crashes if c["seq"] == seq)
        return max((e["broker_ms"] + crash["t_ms"] - e["t_ms"] for e in self.events
                    if e["seq"] < seq and e.get("broker_ms") is not None), default=-1)

    def behind_a_broken_level_unit(self, msg_id: str, after_seq: int = -1) -> bool:
        """4.9.8: a level's unit whose messageTimeup throws because of damaged data (a power failure tore the
        copy's properties, which only the body's CRC guards, explore seed 233; a unit resurrected after two
        abnormal recoveries points at an unrelated record without REAL_QID, #495, seed 207) is retried every
        100 ms and the level never gets past it. Covers the copies of that level's queue at or behind the unit
        that the error still holds up (logged after the copy was stored)."""
        if not self.level_retries_a_broken_unit:
            return False
        for store in self._stores(msg_id, after_seq):
            if store["topic"] != SCHEDULE_TOPIC:
                continue
            for level, offset, seq, _t, site in self.level_unit_errors:
                if (site in DAMAGE_SITES and level == store["queue_id"] + 1 and offset <= store["queue_offset"]
                        and seq > store["seq"]):
                    return True
        return False

    def behind_a_stale_unit(self, msg_id: str, after_seq: int = -1) -> bool:
        """#495 after a power failure: a resurrected stale unit made the reput skip a copy as "built repeatedly",
        the next copy's unit was appended in its slot ("logic queue order maybe wrong", ROCKETMQ.md 2.5), and a
        pull batch that reaches the stale unit ends there for the consumer (the broker returns its bytes and
        counts every unit in nextBeginOffset; the client's MessageDecoder.decodesBatch stops at the first record
        it cannot decode). Covers the copies of that queue within one pull batch after the stale unit."""
        for store in self._stores(msg_id, after_seq):
            for unit in self.stale_units:
                if (unit["unit_phy_offset"] is not None and unit["topic"] == store["topic"]
                        and unit["queue_id"] == store["queue_id"]
                        and 0 <= store["queue_offset"] - unit["queue_offset"] < PULL_BATCH_UNITS):
                    return True
        return False

    def below_a_committed_offset(self, msg_id: str, group: str, after_seq: int = -1) -> bool:
        """The group's offset stood past the end of a queue that a fault cut back; new messages reused those
        offsets and the consumers' offsets pass over them. #8239 (ASYNC_FLUSH): consumers had committed offsets
        of unflushed messages when the power failed. A store rollback: the broker restarts on an older copy of
        its queues with today's consumerOffset.json, and the group's offsets are read back from it (RocketMQ
        never compares them with the queue's end). A commit counts until the broker is back, and so does a
        consume: the consumer goes on from the offset after what it pulled before the fault."""
        for store in self._stores(msg_id, after_seq):
            for crash_seq, back in self.queue_cuts:
                if store["seq"] < crash_seq:
                    continue
                back = store["seq"] if back is None else back
                committed = [c["offset"] for c in self.by_kind["offset_commit"] if c["seq"] < back
                             and c["group"] == group and c["topic"] == store["topic"]
                             and c["queue_id"] == store["queue_id"]]
                # the client pulls on from its own next offset, past what it consumed (explore seed 104 with combos)
                pulled = [c["queue_offset"] + 1 for c in self.by_kind["consume"] if c["seq"] < back
                          and c["group"] == group and c.get("queue_topic", c["topic"]) == store["topic"]
                          and c["queue_id"] == store["queue_id"]]
                if (committed or pulled) and store["queue_offset"] < max(committed + pulled):
                    return True
        return False

    @cached_property
    def _pull_offsets_moved(self) -> list[tuple[int, str, str, int, int, int]]:
        """(seq, group, topic, queue id, from, to) of each OFFSET_ILLEGAL a client answered by moving its pull
        offset down (from > to), read from the client's WARN line; the group from its ``consumer_start``."""
        return [(seq, group, m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)))
                for seq, group, m in _client_lines(self, PULL_OFFSET_ILLEGAL) if int(m.group(3)) > int(m.group(4))]

    def below_a_moved_pull_offset(self, msg_id: str, group: str, after_seq: int = -1) -> bool:
        """A store rollback (or a power failure) cut a queue back while the group's consumer had pulled past the
        new end: its ProcessQueue still held copies the cut destroyed, and it pulls on from its own next offset.
        New copies reuse the cut offsets below that; the consumer's next pull is past the queue's max offset, the
        broker answers OFFSET_OVERFLOW_BADLY with nextBeginOffset = maxOffset (DefaultMessageStore.getMessage,
        4.9.8 and 5.3.3) and the client's OFFSET_ILLEGAL path (DefaultMQPushConsumerImpl) sets its offset there:
        the copies stored below it since the restart are never pulled (explore seed 910000238: a 10 s rollback,
        the consumer at 195, three retry copies stored at 178-180, the pull moved 195 -> 181). Recognised by the
        client's WARN line after the cut's restart (and before the next broker crash), and a copy of the message
        stored in that queue between the restart and the line, below the offset the line moved to."""
        moves = [mv for mv in self._pull_offsets_moved if mv[1] == group]
        if not moves:
            return False
        for store in self._stores(msg_id, after_seq):
            for _crash_seq, back in self.queue_cuts:
                if back is None or store["seq"] < back:
                    continue
                until = next((c["seq"] for c in self.broker_crashes if c["seq"] > back), None)
                if any(back < store["seq"] < seq and (until is None or seq < until) and topic == store["topic"]
                       and queue_id == store["queue_id"] and store["queue_offset"] < to
                       for seq, _g, topic, queue_id, _from, to in moves):
                    return True
        return False

    def below_a_moved_pull_offset_after_a_cq_cut(self, msg_id: str, group: str, after_seq: int = -1) -> bool:
        """A CQ truncation zeroed a queue's tail units past where the group had consumed. ConsumeQueue.recover
        stops at the first zeroed unit; the abnormal recovery re-dispatches only from the commit-log file the
        checkpoint names, appending at the write position ("[BUG]logic queue order maybe wrong",
        putMessagePositionInfo, 4.9.8), and recoverTopicQueueTable takes the queue's end from there. New
        copies reuse the cut offsets below the group's offset; its next pull is past the max offset, the
        broker answers OFFSET_OVERFLOW_BADLY with nextBeginOffset = maxOffset and the client moves its offset
        there, over them (explore seed 1040000277: a backwards step kept the checkpoint ahead, so recovery
        began at the last file; queue 0 cut 21 -> 13, units 19-20 re-dispatched at 13-14, copies stored at
        15-16, the pull moved 21 -> 17). Recognised by a copy stored in the truncated queue at a cut offset
        after the truncation's restart (and before the next broker crash), below the offset the group's
        consumer had reached before the truncation, and the client's WARN line that then moved its pull offset
        above the copy."""
        moves = [mv for mv in self._pull_offsets_moved if mv[1] == group]
        if not moves:
            return False
        for cut in self.by_kind["cq_truncate"]:
            back = next((r["seq"] for r in self.restarts if r["seq"] > cut["seq"]), None)
            if back is None:
                continue
            until = next((c["seq"] for c in self.broker_crashes if c["seq"] > back), None)
            reached = [c["offset"] for c in self.by_kind["offset_commit"] if c["seq"] < cut["seq"]
                       and c["group"] == group and c["topic"] == cut["topic"]
                       and c["queue_id"] == cut["queue_id"]]
            reached += [c["queue_offset"] + 1 for c in self.by_kind["consume"] if c["seq"] < cut["seq"]
                        and c["group"] == group and c.get("queue_topic", c["topic"]) == cut["topic"]
                        and c["queue_id"] == cut["queue_id"]]
            for store in self._stores(msg_id, after_seq):
                if (store["seq"] < back or (until is not None and store["seq"] > until)
                        or (store["topic"], store["queue_id"]) != (cut["topic"], cut["queue_id"])
                        or not cut["to_offset"] <= store["queue_offset"] < cut["from_offset"]
                        or not reached or store["queue_offset"] >= max(reached)):
                    continue
                if any(store["seq"] < seq and (until is None or seq < until) and topic == store["topic"]
                       and queue_id == store["queue_id"] and store["queue_offset"] < to
                       for seq, _g, topic, queue_id, _from, to in moves):
                    return True
        return False

    def below_an_offset_pulled_before_a_cut(self, msg_id: str, group: str, after_seq: int = -1) -> bool:
        """``below_a_committed_offset`` with its evidence consumed late: a slow consumer's ProcessQueue still held
        copies it had pulled before a rollback (or a power failure) cut the queue back, and consumed them after the
        restart, so the consume events come after the restart. Its PullRequest went on from the offset after
        them; a pull past the queue's new end is moved down (OFFSET_ILLEGAL, ``below_a_moved_pull_offset``), but
        one that comes once the new copies have passed that offset finds them there and skips those below it.
        Recognised by a consume after the restart (and before the next broker crash) of a copy stored in that
        queue before the crash and not stored there again since, by the group's only consumer of the queue after
        the restart, with no pull-offset move of the group on the queue meanwhile, and the new copy stored between
        the restart and the next broker crash below that consume's offset (explore seed 1110000307 like
        990000012, 5.3.3: GroupA-0, 500 ms a message, pulled %RETRY%GroupA 0 #141-#275 at 52.3-52.6 s; the
        rollback at 52.658 s (to 50.658 s) cut the queue to 188; after the restart at 54.658 s the level put
        188-290 at 55.658 s and the client's pull came at 55.659 s from 276, while it consumed #261-#275 of the
        old batch at 55.831 s: the copies at 188-275 were never pulled)."""
        for store in self._stores(msg_id, after_seq):
            for crash_seq, back in self.queue_cuts:
                if back is None or store["seq"] < back:
                    continue
                until = next((c["seq"] for c in self.broker_crashes if c["seq"] > back), None)
                if until is not None and store["seq"] > until:
                    continue
                place = (store["topic"], store["queue_id"])

                def here(e: dict, low: int, high: int | None, place=place) -> bool:
                    return (low < e["seq"] and (high is None or e["seq"] < high)
                            and (e.get("queue_topic", e["topic"]), e["queue_id"]) == place)

                if any(back < seq and (until is None or seq < until) and (topic, queue_id) == place
                       for seq, g, topic, queue_id, _from, _to in self._pull_offsets_moved if g == group):
                    continue
                early = {(s["msg_id"], s["queue_offset"]) for s in self.by_kind["store"] if here(s, -1, crash_seq)}
                early -= {(s["msg_id"], s["queue_offset"]) for s in self.by_kind["store"] if here(s, back, None)}
                late = [c for c in self.by_kind["consume"] if c["group"] == group and here(c, back, until)]
                if len({c["client_id"] for c in late}) != 1:
                    continue
                pulled = [c["queue_offset"] + 1 for c in late if (c["msg_id"], c["queue_offset"]) in early]
                if pulled and store["queue_offset"] < max(pulled):
                    return True
        return False

    @cached_property
    def _reputs_begun_inside_a_record(self) -> list[tuple[int, int | None, set[int]]]:
        """(seq of the reput's WARN line, seq of the next broker crash or None, seqs of the copies it never
        dispatched) for each restart after a fault that cut a store (a power failure, a rollback, a CQ
        truncation) whose reput began inside a record stored after it: the line (the first failure after the
        latest restart) names a position past the restart's commit-log end and inside such a copy."""
        damaged = [c["seq"] for c in self.broker_crashes
                   if c.get("crash_kind") == "power" or c.get("site") in ("store_rollback", "cq_truncation")]
        found = []
        for line in self.by_kind["log"]:
            m = REPUT_UNREADABLE.match(line["message"]) if line["logger"] == "DefaultMessageStore" else None
            if m is None:
                continue
            at = int(m.group(1))
            restart = next((r for r in reversed(self.restarts) if r["seq"] < line["seq"]), None)
            if (restart is None or restart.get("commit_log_end") is None or at <= restart["commit_log_end"]
                    or not any(seq < restart["seq"] for seq in damaged)):
                continue
            skipped = [s for s in self.by_kind["store"] if restart["seq"] < s["seq"] < line["seq"]]
            if not any(s["phy_offset"] < at < s["phy_offset"] + s.get("size", 0) for s in skipped):
                continue
            until = next((c["seq"] for c in self.broker_crashes if c["seq"] > line["seq"]), None)
            found.append((line["seq"], until, {s["seq"] for s in skipped}))
        return found

    def skipped_by_a_reput_begun_inside_a_record(self, msg_id: str, group: str | None = None,
                                                 after_seq: int = -1) -> bool:
        """4.9.8 (#495 once more, explore seeds 1070000584 and 1070000262 with combos): a power failure left
        stale units past a queue's recovered tail (level 4's in both; in 1070000262 a store rollback's copy
        kept them); a later abnormal recovery resurrected one whose record starts below the recovered
        commit-log end and ends past it, so truncateDirtyLogicFiles (``offset >= phyOffset`` only) kept it and
        the queue's maxPhysicOffset ended inside the next record to come. start() reputs from the queues' max
        physical offset ("maybe bigger than maxOffset ..., just let it go"): the reput read the first records
        stored after the restart from their middle, failed, and a master skips the rest of the buffer
        ("[BUG]dispatch message to consume queue error", doReput). Those copies are never dispatched; each
        later copy of their queues is appended where the skipped ones should have been ("[BUG]logic queue
        order maybe wrong", putMessagePositionInfo), below its own queue offset, and a group that comes back
        at an offset it had reached before the restart pulls past it (5.3.3 reputs from the confirm offset).
        Covers the skipped copies, and a later copy (before the next broker crash) whose line puts its unit
        below the offset the group had committed or consumed up to before the reput's line."""
        if not self.reput_from_queues:
            return False
        for line_seq, until, skipped in self._reputs_begun_inside_a_record:
            for store in self._stores(msg_id, after_seq):
                if store["seq"] in skipped:
                    return True
                if group is None or store["seq"] < line_seq or (until is not None and store["seq"] > until):
                    continue
                unit = self._unit_appended_below(store, until)
                if unit is None:
                    continue
                key = (store["topic"], store["queue_id"])
                reached = [c["offset"] for c in self.by_kind["offset_commit"] if c["seq"] < line_seq
                           and c["group"] == group and (c["topic"], c["queue_id"]) == key]
                reached += [c["queue_offset"] + 1 for c in self.by_kind["consume"] if c["seq"] < line_seq
                            and c["group"] == group
                            and (c.get("queue_topic", c["topic"]), c["queue_id"]) == key]
                if reached and unit < max(reached):
                    return True
        return False

    def _unit_appended_below(self, store: dict, until: int | None) -> int | None:
        """The unit the copy's dispatch appended below its own queue offset, from its "[BUG]logic queue order
        maybe wrong" line (after the store, before ``until``), or None."""
        for line in self.by_kind["log"]:
            if line["seq"] < store["seq"] or (until is not None and line["seq"] > until):
                continue
            m = LOGIC_ORDER_WRONG.match(line["message"]) if line["logger"] == "DefaultMessageStore" else None
            if (m is not None and (m.group(3), int(m.group(4))) == (store["topic"], store["queue_id"])
                    and int(m.group(1)) == store["queue_offset"] * CQ_UNIT_BYTES
                    and int(m.group(2)) < int(m.group(1))):
                return int(m.group(2)) // CQ_UNIT_BYTES
        return None

    cq_units_per_file = 300_000  # the broker's consume-queue file size in units; check_events sets it

    @cached_property
    def _groups_by_topic(self) -> dict[tuple[str, str], GroupInfo]:
        """(group, topic) -> what the history says of the group (read once, not per copy asked about)."""
        return {(g.group, g.topic): g for g in groups_from_history(self.events)}

    def filtered_out_by_a_torn_tags_code(self, msg_id: str, group: str | None, after_seq: int = -1) -> bool:
        """A power failure tears a file on a 512-byte sector boundary (a sector is written whole or not at
        all), and a consume-queue unit (commit-log offset 8, size 4, tagsCode 8 bytes) at a file position
        where a boundary falls within its tagsCode keeps a valid offset and size with the tagsCode zeroed (or
        cut): ConsumeQueue.recover keeps it (``offset >= 0 && size > 0`` only, both eras), and the broker's
        tag filter (ExpressionMessageFilter.isMatchedByConsumeQueue: codeSet.contains(tagsCode)) skips it for
        every group that subscribes by tags, while the queue's later units are dispatched again from the
        commit log. Explore seed 1070001225 with combos (4.9.8, SYNC_FLUSH): TopicA 0 #281 (file position
        5620, the boundary at 5632) stored at 49.1 s, durable; the power failure at 49.799 s lost the consume
        queue's sector from 5632; the broadcasting group ("TagA || TagB") pulled #280 and then #282.
        Recognised by a copy in the group's topic, durable at the next power failure, whose unit's tagsCode
        straddles a sector boundary, a tag subscription, and a consume by the group of a later unit of that
        queue after the restart."""
        if group is None:
            return False
        for store in self._stores(msg_id, after_seq):
            info = self._groups_by_topic.get((group, store["topic"]))
            if info is None or info.tags is None:
                continue  # "*" matches every tagsCode (SUB_ALL)
            pos = store["queue_offset"] % self.cq_units_per_file * CQ_UNIT_BYTES
            if (pos + CQ_UNIT_BYTES - 1) // SECTOR_BYTES * SECTOR_BYTES < pos + 12:
                continue  # no boundary within the tagsCode: a tear there cuts the offset or size (queue ends)
            crash = next((c for c in self.power_crashes if c["seq"] > store["seq"]), None)
            if crash is None or _not_durable(store, self._durable_end(crash)):
                continue  # not durable: lost_to_power_failure's case
            back = next((r["seq"] for r in self.restarts if r["seq"] > crash["seq"]), None)
            place = (store["topic"], store["queue_id"])
            if back is not None and any(
                    c["group"] == group and c["seq"] > back and c["queue_offset"] > store["queue_offset"]
                    and (c.get("queue_topic", c["topic"]), c["queue_id"]) == place
                    for c in self.by_kind["consume"]):
                return True
        return False

    def lost_to_power_failure(self, msg_id: str, after_seq: int = -1) -> bool:
        """Some copy of the message was not durable at a power failure (ASYNC_FLUSH): it ended past the flushed
        end of the commit log, so the recovery cut it off or kept it torn (a sector-wise prefix whose properties
        are zeros passes the recovery check: only the body has a CRC)."""
        for crash in self.power_crashes:
            durable = self._durable_end(crash)
            for e in self._stores(msg_id, after_seq):
                if e["seq"] < crash["seq"] and _not_durable(e, durable):
                    return True
        return False

    def _durable_end(self, crash: dict) -> int | None:
        """The flushed end of the commit log at a power failure (the next restart's end when not recorded)."""
        restart = next((r for r in self.restarts if r["seq"] > crash["seq"]), None)
        return crash.get("commit_log_durable", restart["commit_log_end"] if restart else None)


def _roll_slot_ms(due_ms: int, write_ms: int, slots: int, precision_ms: int) -> int | None:
    """The slot TimerMessageStore.doEnqueue (5.3.3) links a unit due at ``due_ms`` into at write time ``write_ms``
    when it rolls (due a roll window or more ahead), else None."""
    if due_ms - write_ms < slots * precision_ms:
        return None
    if due_ms - write_ms - slots * precision_ms < slots // 3 * precision_ms:
        return write_ms + slots // 2 * precision_ms  # "give enough time to next roll"
    return write_ms + slots * precision_ms


def _not_durable(store: dict, durable: int | None) -> bool:
    """The stored copy ended past the commit log's flushed end (None: unknown, so not judged)."""
    return durable is not None and store["phy_offset"] + store.get("size", 1) > durable


def _subscribed(group: GroupInfo, send: dict) -> bool:
    """The group's subscription takes the message: its topic, and its tags as the send recorded them."""
    if send["topic"] != group.topic:
        return False
    return group.tags is None or send.get("tags") in group.tags


# --- the preloaded population (run --from-store) ----------------------------------------------------------------
def preloaded_owed(copies: list[dict], g: GroupInfo) -> list[dict]:
    """The copies (``preloaded`` events of one message) that oblige clustering group ``g`` to consume the message
    or dead-letter it in the run; empty when the store says ``g`` is done with it or never owed it.

    A copy in ``%DLQ%g`` means g is done (a dead letter stays one). Otherwise a copy is owed when it is consumed
    from g's topic (tags matching) or from ``%RETRY%g`` -- a stored copy at or past g's committed offset of its
    queue, or a scheduled copy still pending (it will be appended past any committed offset). A group with no
    committed offset for a queue of its topic is not judged there (where it starts depends on RocketMQ's
    CONSUME_FROM rule and the young-queue rule); its retry queue is read from offset 0 (computePullFromWhere)."""
    if g.model != "CLUSTERING" or any(c["topic"] == DLQ_PREFIX + g.group for c in copies):
        return []
    owed = []
    for c in copies:
        if c["state"] == "delivered":
            continue
        topic = c["real_topic"] if c["state"] == "pending" else c["topic"]
        if topic == RETRY_PREFIX + g.group:
            offset = c["offsets"].get(g.group, 0)
        elif topic == g.topic and (g.tags is None or c.get("tags") in g.tags):
            offset = c["offsets"].get(g.group)
        else:
            continue
        if offset is not None and (c["state"] == "pending" or c["queue_offset"] >= offset):
            owed.append(c)
    return owed


def _where(copy: dict) -> str:
    """A preloaded copy in words: its topic and queue, and what is due."""
    text = f"{copy['topic']} q{copy['queue_id']} #{copy['queue_offset']}"
    if copy["state"] == "pending":
        text += f" (pending for {copy['real_topic']}, due at broker time {copy['deliver_ms']})"
    return text


# --- no_loss -------------------------------------------------------------------------------------------------
def check_no_loss(ix: _Index, ctx: RunContext) -> dict:
    """A message not due before the end of the drain (``model.stats.pending_messages``) is pending, not lost: it
    is counted in ``pending`` and not judged."""
    violations = []
    checked = pending = 0
    not_due = ix.pending(ctx)
    for send in ix.sent_ok:
        msg_id = send["msg_id"]
        events = ix.by_msg[msg_id]
        for g in ctx.groups:
            if not _subscribed(g, send):
                continue
            if msg_id in not_due and not _done_in(events, g):
                pending += 1
                continue
            checked += 1
            consumes = [e for e in events if e["kind"] == "consume" and e["group"] == g.group]
            if g.model == "BROADCASTING":
                # Every instance must have had it; a failed attempt is dropped by design (no retry).
                missing = sorted(set(g.client_ids) - {e["client_id"] for e in consumes})
                if missing and not ix.lost_to_a_fault(msg_id, g.group):
                    violations.append({"msg_id": msg_id, "group": g.group, "events": ix.quote(msg_id),
                                       "explanation": f"sent with SEND_OK but broadcasting instance(s) "
                                                      f"{', '.join(missing)} of {g.group} never received it"})
                continue
            done = any(e["status"] == CONSUME_SUCCESS for e in consumes) or any(
                e["kind"] == "dlq" and e["group"] == g.group for e in events)
            if not done and not ix.lost_to_a_fault(msg_id, g.group):
                last = events[-1]["kind"] if events else "nothing"
                violations.append({"msg_id": msg_id, "group": g.group, "events": ix.quote(msg_id),
                                   "explanation": f"sent with SEND_OK but by the end of the drain {g.group} neither "
                                                  f"consumed it successfully nor dead-lettered it "
                                                  f"({len(consumes)} attempt(s); its last event was '{last}')"})
    for msg_id, copies in ix.preloaded.items():  # run --from-store: what the store owed each group at the start
        events = ix.by_msg[msg_id]
        for g in ctx.groups:
            owed = preloaded_owed(copies, g)
            if not owed:
                continue
            if msg_id in not_due and not _done_in(events, g):
                pending += 1
                continue
            checked += 1
            if not _done_in(events, g) and not ix.lost_to_a_fault(msg_id, g.group):
                attempts = sum(1 for e in events if e["kind"] == "consume" and e["group"] == g.group)
                violations.append({"msg_id": msg_id, "group": g.group, "events": ix.quote(msg_id),
                                   "explanation": f"in the store at the start ({_where(owed[-1])}) and owed to "
                                                  f"{g.group}, but by the end of the drain {g.group} neither consumed "
                                                  f"it successfully nor dead-lettered it ({attempts} attempt(s))"})
    verdict = _verdict(checked, violations)
    verdict["pending"] = pending
    return verdict


def _done_in(events: list[dict], g: GroupInfo) -> bool:
    """The group is done with the message: every broadcasting instance had it, or a clustering success or DLQ."""
    consumes = [e for e in events if e["kind"] == "consume" and e["group"] == g.group]
    if g.model == "BROADCASTING":
        return not set(g.client_ids) - {e["client_id"] for e in consumes}
    return any(e["status"] == CONSUME_SUCCESS for e in consumes) or any(
        e["kind"] == "dlq" and e["group"] == g.group for e in events)


# --- at_least_once_redelivery --------------------------------------------------------------------------------
def _offset_msg_phy(msg_id: str | None) -> int | None:
    """The commit-log offset an IPv4 offsetMsgId names (its last 16 hex digits), or None."""
    if msg_id is None or len(msg_id) != 32:
        return None
    try:
        return int(msg_id[16:], 16)
    except ValueError:
        return None


def _idless_copy(ix: _Index, consume: dict) -> dict | None:
    """The store event of the copy a consume read when the client saw its offsetMsgId, not the message's
    UNIQ_KEY: the copy at the commit-log offset the id names, in the queue and at the unit the consume read,
    whose recorded id (its UNIQ_KEY, None without one) is another."""
    if any(e["kind"] == "send" for e in ix.by_msg.get(consume["msg_id"], ())):
        return None
    phy = _offset_msg_phy(consume["msg_id"])
    if phy is None:
        return None
    return next((e for e in reversed(ix.by_kind["store"]) if e["seq"] < consume["seq"] and e["phy_offset"] == phy
                 and e["topic"] == consume["queue_topic"] and e["queue_id"] == consume["queue_id"]
                 and e["queue_offset"] == consume["queue_offset"] and e["msg_id"] != consume["msg_id"]), None)


def _came_back_without_its_id(ix: _Index, attempt: dict) -> bool:
    """A power failure tore a copy after its body (explore seed 940000253): its properties are zeros, which pass
    the recovery check (only the body has a CRC), so the copy has no UNIQ_KEY and the client's getMsgId falls back
    to the copy's offsetMsgId. The broker's send-back (asyncConsumerSendMsgBack, 4.9.8 and 5.3.3) copies the
    properties it has -- still no UNIQ_KEY -- and sets ORIGIN_MESSAGE_ID, which the client does not read: every
    later copy is seen under its own offsetMsgId and stored (and dead-lettered) with no id in the history. The
    message does come back; the check follows it by id and cannot. Recognised by an attempt on a copy torn by a
    power failure (or an id-less copy, after one), and an id-less copy consumed or dead-lettered in the group
    after it with the next reconsume count."""
    copy = _idless_copy(ix, attempt)
    if copy is None:
        return False
    if copy["msg_id"] is not None:  # the torn copy itself: not durable at a power failure after it was stored
        if not any(copy["seq"] < c["seq"] < attempt["seq"] and _not_durable(copy, ix._durable_end(c))
                   for c in ix.power_crashes):
            return False
    elif not any(c["seq"] < attempt["seq"] for c in ix.power_crashes):
        return False
    group, again = attempt["group"], attempt["reconsume_times"] + 1
    if any(d["seq"] > attempt["seq"] and d["group"] == group and d["msg_id"] is None and d["reconsume_times"] == again
           for d in ix.by_kind["dlq"]):
        return True
    return any(c["seq"] > attempt["seq"] and c["group"] == group and c["reconsume_times"] == again
               and (copy_of := _idless_copy(ix, c)) is not None and copy_of["msg_id"] is None
               for c in ix.by_kind["consume"])


LOCAL_RETRY_DELAY_MS = 5000  # ConsumeMessageConcurrentlyService.submitConsumeRequestLater (4.9.8 and 5.3.3)


def _local_retry_died_with_its_consumer(ix: _Index, attempt: dict) -> bool:
    """Both send-backs of this failed attempt failed, so the client kept the message for a local retry
    (``local-retry``: submitConsumeRequestLater, 5 s later, on an in-memory scheduled executor), and its consumer
    was killed (kill -9) before that retry was due: the retry died with the process. The restarted consumer pulls
    from the committed offset, which only brings the message back if its copy still lies there (the caller
    requires that a fault destroyed it). Explore seed 1000000327 (5.3.3): a 10 s rollback destroyed the copy the
    client was consuming, the broker was down for both send-backs, and the consumer crash 373 ms later killed the
    retry. Recognised by the ``local-retry`` send-back of the attempt and a crash of its client within 5 s after."""
    after = [e for e in ix.by_msg.get(attempt["msg_id"], ()) if e["seq"] > attempt["seq"]
             and e["kind"] in ("consume", "send_back") and e["group"] == attempt["group"]]
    back = next((e for e in after if e["kind"] == "send_back" and e.get("path") == "local-retry"), None)
    if (back is None or back["reconsume_times"] != attempt["reconsume_times"] + 1
            or any(e["kind"] == "consume" and e["seq"] < back["seq"] for e in after)):  # another attempt's
        return False
    owner = attempt["client_id"].split("@")[0]
    return any(c["target"] == owner and back["seq"] < c["seq"] and c["t_ms"] < back["t_ms"] + LOCAL_RETRY_DELAY_MS
               for c in ix.by_kind["crash"])


def _result_dropped_with_its_queue(ix: _Index, attempt: dict) -> bool:
    """The client threw this failed attempt's result away: its ProcessQueue was dropped while the listener
    ran (OFFSET_ILLEGAL, a rebalance), and ConsumeRequest.run (4.9.8 and 5.3.3) then neither sends the
    message back nor keeps it for a local retry; it only logs "processQueue is dropped without process consume
    result". The message comes back only by a new pull of the copy it read (the caller requires that a fault
    destroyed that copy). Explore seed 1070000814 (combos, 5.3.3): a 5 s rollback destroyed the delivered
    copies of timer messages GroupA-0 had pulled (the timer does not deliver them again: timercheck is
    today's, so its read time stands past their slot); the broker was down for both send-backs, the local
    retry ran 5 s later, and the pull answered OFFSET_ILLEGAL while it ran. Recognised by that WARN of the
    attempt's client for its queue, right after the attempt (only the rest of its batch, consumed in the same
    step, in between)."""
    logger = "RocketmqClient@" + attempt["client_id"].split("@")[0]
    at = attempt["seq"] if attempt["seq"] < len(ix.events) and ix.events[attempt["seq"]] is attempt \
        else next(i for i, e in enumerate(ix.events) if e is attempt)
    for e in ix.events[at + 1:]:
        if e["kind"] == "consume" and e["client_id"] == attempt["client_id"] and e["t_ms"] == attempt["t_ms"]:
            continue  # the rest of the attempt's batch
        line = e["kind"] == "log" and e["logger"] == logger
        m = PROCESS_QUEUE_DROPPED.match(e["message"]) if line else None
        return (m is not None and e["t_ms"] == attempt["t_ms"]
                and (m.group(1), int(m.group(2))) == (attempt["queue_topic"], attempt["queue_id"]))
    return False


def _destroyed_by(ix: _Index, copy: dict) -> list[dict]:
    """The faults after which the stored ``copy``'s commit-log bytes were gone: a store rollback to a snapshot
    older than it, or a power failure before it was flushed. The commit log went on from before it, so another
    record may lie at its offset since."""
    faults = [e for e in ix.by_kind["store_rollback"] if e["seq"] > copy["seq"]
              and copy["t_ms"] > e["snapshot_t_ms"] and copy["msg_id"] in e["lost_msg_ids"]]
    return faults + [c for c in ix.power_crashes if c["seq"] > copy["seq"] and _not_durable(copy, ix._durable_end(c))]


def _store_of_its_send_back(ix: _Index, attempt: dict) -> tuple[dict, dict] | None:
    """(the broker send-back that answered ok for this failed attempt in its step, the store it made: the event
    right after it), or None."""
    back = next((e for e in ix.by_msg.get(attempt["msg_id"], ()) if e["seq"] > attempt["seq"]
                 and e["kind"] == "send_back" and e["group"] == attempt["group"]), None)
    if (back is None or back["t_ms"] != attempt["t_ms"] or back["result"] != "ok" or back.get("path") != "broker"
            or back["reconsume_times"] != attempt["reconsume_times"]):
        return None
    made = next((e for e in ix.by_kind["store"] if e["seq"] == back["seq"] + 1 and e["t_ms"] == back["t_ms"]), None)
    return None if made is None else (back, made)


def _copies_read_by(ix: _Index, attempt: dict) -> list[dict]:
    """The stores of the attempt's message at the queue unit it consumed, before it, oldest first."""
    return [e for e in ix.by_msg.get(attempt["msg_id"], ()) if e["kind"] == "store" and e["seq"] < attempt["seq"]
            and e["topic"] == attempt["queue_topic"] and e["queue_id"] == attempt["queue_id"]
            and e["queue_offset"] == attempt["queue_offset"]]


def _sent_back_as_another_message(ix: _Index, attempt: dict) -> bool:
    """The broker's send-back of this failed attempt stored another message (explore seed 1110000046, like
    4137813379, 5.3.3): consumerSendMsgBack (4.9.8 and 5.3.3) looks the message up by the commit-log offset the
    client sends (the copy's, ``lookMessageByOffset(requestHeader.getOffset())``) and checks no id. The client had
    pulled the copy before a fault destroyed it (a 5 s rollback) and consumed it from its ProcessQueue after the
    restart; the commit log had grown over that offset again, so the broker made a retry copy of the message that
    lies there now and answered SUCCESS: the client retries nothing, and the failed message never comes back.
    Recognised by the store the send-back made (the event right after it) of another message, whose copy was
    stored, after such a fault, at the commit-log offset of a destroyed copy of this message at the attempt's unit."""
    sent = _store_of_its_send_back(ix, attempt)
    if sent is None or sent[1]["msg_id"] == attempt["msg_id"]:
        return False
    back, made = sent
    return any(other["phy_offset"] == copy["phy_offset"] and fault["seq"] < other["seq"] < back["seq"]
               for copy in _copies_read_by(ix, attempt) for fault in _destroyed_by(ix, copy)
               for other in ix.by_msg.get(made["msg_id"], ()) if other["kind"] == "store")


def _torn_uniq_key(torn: str | None, msg_id: str) -> bool:
    """``torn`` is ``msg_id``, the last property's value, zeroed from some byte on: a surviving prefix, then
    NULs to the record's end, the zeroed property separator after the value one of them (one char longer)."""
    if torn is None or len(torn) != len(msg_id) + 1:
        return False
    kept = torn.rstrip("\0")
    return msg_id.startswith(kept) and "\0" not in kept


def _came_back_under_a_torn_id(ix: _Index, attempt: dict) -> bool:
    """A power failure tore the copy this attempt read inside its UNIQ_KEY (explore seed 1070001057, combos,
    5.3.3; 940000253's tear began before it, so its copy had none): the recovery kept the record (only the
    body has a CRC; forceVerifyPropCRC is off), its last property's value now a prefix of the id and zeros.
    The client had pulled the copy before the failure and failed it from its ProcessQueue; consumerSendMsgBack
    (4.9.8 and 5.3.3) reads the record at the copy's offset (``lookMessageByOffset``) and copies its
    properties, so the retry copy, and every later one, carries the torn UNIQ_KEY: the message comes back (and
    is dead-lettered) under that id, which the check, following the message by id, does not know. Recognised
    by the attempt's broker send-back storing (the event right after it) a copy under a torn form of the id,
    that copy consumed or dead-lettered in the group later, and a power failure between the read copy's store
    and the attempt that found it not durable, whose restart's commit log ends at or past its end (kept)."""
    msg_id, group = attempt["msg_id"], attempt["group"]
    sent = _store_of_its_send_back(ix, attempt)
    if sent is None or not _torn_uniq_key(sent[1]["msg_id"], msg_id):
        return False
    made = sent[1]
    if not any(e["seq"] > made["seq"] and e.get("group") == group and e["kind"] in ("consume", "dlq")
               for e in ix.by_msg.get(made["msg_id"], ())):
        return False
    for copy in _copies_read_by(ix, attempt):
        for crash in ix.power_crashes:
            if not (copy["seq"] < crash["seq"] < attempt["seq"]
                    and _not_durable(copy, ix._durable_end(crash))):
                continue
            restart = next((r for r in ix.restarts if r["seq"] > crash["seq"]), None)
            if restart is not None and restart["commit_log_end"] >= copy["phy_offset"] + copy.get("size", 1):
                return True
    return False


def check_at_least_once_redelivery(ix: _Index, ctx: RunContext) -> dict:
    """A failed attempt, or a success its crashed consumer never committed, is followed by another attempt or a
    dead letter -- unless the message's next copy is due after the drain (``pending``, as in ``no_loss``)."""
    violations = []
    checked = pending = 0
    not_due = ix.pending(ctx)
    clustering = {g.group for g in ctx.groups if g.model == "CLUSTERING"}
    crashes = {e["target"]: [] for e in ix.by_kind["crash"]}
    for e in ix.by_kind["crash"]:
        crashes[e["target"]].append(e)
    commits: dict[tuple, list[dict]] = defaultdict(list)  # (group, topic, queue_id) -> offset commits
    for e in ix.by_kind["offset_commit"]:
        commits[(e["group"], e["topic"], e["queue_id"])].append(e)
    for msg_id, events in ix.by_msg.items():
        consumes = [e for e in events if e["kind"] == "consume" and e["group"] in clustering]
        for i, attempt in enumerate(consumes):
            group = attempt["group"]
            later = [c for c in consumes[i + 1:] if c["group"] == group]
            dead = any(e["kind"] == "dlq" and e["group"] == group and e["seq"] > attempt["seq"] for e in events)
            if not later and not dead and not_due.get(msg_id, -1) >= attempt["t_ms"]:
                pending += 1  # its next copy is due after the drain: the run ended before it could come back
                continue
            if attempt["status"] != CONSUME_SUCCESS:
                checked += 1
                # A fault before the attempt destroyed the copy it read, and the client's way back (the local
                # retry of a failed send-back) died with its dropped ProcessQueue, or with its killed consumer:
                # RocketMQ itself loses it.
                no_way_back = ix.consumed_copy_destroyed(attempt) and (
                    ix.local_retry_dropped(attempt) or _local_retry_died_with_its_consumer(ix, attempt)
                    or _result_dropped_with_its_queue(ix, attempt))
                if (not later and not dead and not no_way_back
                        and not ix.lost_to_a_fault(msg_id, group, attempt["seq"])
                        and not _came_back_without_its_id(ix, attempt)
                        and not _sent_back_as_another_message(ix, attempt)
                        and not _came_back_under_a_torn_id(ix, attempt)):
                    violations.append({"msg_id": msg_id, "group": group, "events": ix.quote(msg_id),
                                       "explanation": f"consume attempt {attempt['reconsume_times']} in {group} failed "
                                                      f"at t={attempt['t_ms']} ms but the message was never "
                                                      f"delivered to {group} again nor dead-lettered"})
                continue
            # A success whose offset the dying consumer never committed must be consumed again.
            owner = attempt["client_id"].split("@")[0]
            crash = next((c for c in crashes.get(owner, []) if c["seq"] > attempt["seq"]), None)
            if crash is None:
                continue
            key = (group, attempt["queue_topic"], attempt["queue_id"])
            committed = any(c["seq"] < crash["seq"] and c["seq"] > attempt["seq"] and c["offset"] > attempt["queue_offset"]
                            and c.get("client_id", attempt["client_id"]) == attempt["client_id"]
                            for c in commits.get(key, []))
            if committed:
                continue
            checked += 1
            if not later and not dead and not ix.lost_to_a_fault(msg_id, group, attempt["seq"]):
                violations.append({"msg_id": msg_id, "group": group, "events": ix.quote(msg_id),
                                   "explanation": f"{owner} consumed it at t={attempt['t_ms']} ms and crashed before "
                                                  f"committing its offset, but {group} never got it again"})
    verdict = _verdict(checked, violations)
    verdict["pending"] = pending
    return verdict


# --- no_early_delivery ---------------------------------------------------------------------------------------
def _due_before_a_backwards_step(ix: _Index, d: dict) -> bool:
    """An asynchronous delivery's resend whose first put was on time: the broker clock had reached the due time
    before a backwards step. The level found the copy due then; HandlePutResultTask's ``doResend`` (5.3.3) puts
    it again after the step without looking at the time, so the stored copy carries the stepped-back clock."""
    stored = min((e["seq"] for e in ix.by_msg.get(d["msg_id"], ())
                  if e["kind"] == "store" and e.get("due_ms") == d["due_ms"]), default=d["seq"])
    return any(stored < st["seq"] < d["seq"] and st["by_ms"] < 0 and st["broker_ms"] - st["by_ms"] >= d["due_ms"]
               for st in ix.clock_steps)


def _corrected_then_resent(ix: _Index, d: dict, ctx: RunContext) -> bool:
    """An asynchronous delivery's resend whose first put correctDeliverTimestamp made at once (explore seed
    950000360): right after a backwards step the copy's deliver time lay more than one level-delay ahead of the
    broker clock, so the level put it at once ("deliver now"); that put failed, and ``doResend`` put it again
    100 ms later (5.3.3: ``incrementAndGet() * 100``) without looking at the time, when it lay less than a
    level-delay ahead."""
    if d["level"] == "timer":
        return False
    stored = min((e["seq"] for e in ix.by_msg.get(d["msg_id"], ())
                  if e["kind"] == "store" and e.get("due_ms") == d["due_ms"]), default=d["seq"])
    return any(stored < st["seq"] < d["seq"] and st["by_ms"] < 0
               and d["due_ms"] - st["broker_ms"] > ctx.level_delay_ms(d["level"]) for st in ix.clock_steps)


def check_no_early_delivery(ix: _Index, ctx: RunContext) -> dict:
    violations = []
    delivers = ix.by_kind["deliver"]
    for d in delivers:
        early_ms = d["due_ms"] - d["broker_ms"]
        if early_ms <= 0:
            continue
        if d["level"] != "timer" and early_ms > ctx.level_delay_ms(d["level"]):
            continue  # correctDeliverTimestamp: the deliver time lay more than one level-delay ahead (clock stepped)
        if ix.read_through_a_stale_reference(d, ctx):
            continue
        if d.get("resend") and (_due_before_a_backwards_step(ix, d) or _corrected_then_resent(ix, d, ctx)):
            continue
        if d["level"] == "timer" and any(
                st["seq"] < d["seq"] and st["by_ms"] < 0 and d["due_ms"] < st["broker_ms"] - st["by_ms"]
                for st in ix.clock_steps):
            # putMessageToTimerWheel: a copy due before the wheel's write time goes straight to the put side, and
            # a backwards step leaves the write time ahead of the broker clock (up to the time before the step)
            continue
        what = "timer message" if d["level"] == "timer" else f"level-{d['level']} message"
        violations.append({"msg_id": d["msg_id"], "events": ix.quote(d["msg_id"]),
                           "explanation": f"the {what} reached {d['topic']} at broker time {d['broker_ms']}, "
                                          f"{early_ms} ms before it was due ({d['due_ms']})"})
    return _verdict(len(delivers), violations)


# --- per_level_order -----------------------------------------------------------------------------------------
def check_per_level_order(ix: _Index, ctx: RunContext) -> dict:
    violations = []
    checked = 0
    last: dict[int, tuple[int, str]] = {}
    seen: set[tuple[int, int, str]] = set()
    for e in ix.events:
        if e["kind"] in ("restart",) and e["target"] == "broker":
            last.clear()  # a new broker: its levels start again from their persisted offsets
            continue
        if e["kind"] != "deliver" or e["level"] == "timer" or e.get("schedule_queue_offset", -1) < 0:
            continue
        if e.get("resend"):
            # Asynchronous delivery: a failed put is resent by HandlePutResultTask while the level goes on
            # with later messages (only the offsets advance in queue order), so a resend may come late.
            continue
        key = (e["level"], e["schedule_queue_offset"], e["msg_id"])
        if key in seen:
            continue  # a repeated delivery (duplicate), not a first one
        seen.add(key)
        checked += 1
        previous = last.get(e["level"])
        if previous is not None and e["schedule_queue_offset"] < previous[0]:
            violations.append({"msg_id": e["msg_id"], "events": ix.quote(e["msg_id"]) + ix.quote(previous[1])[:2],
                               "explanation": f"level {e['level']} delivered queue offset {e['schedule_queue_offset']} "
                                              f"after offset {previous[0]} ({previous[1]}): out of the level's order"})
        last[e["level"]] = (e["schedule_queue_offset"], e["msg_id"])
    return _verdict(checked, violations)


# --- dlq_after_max_retries -----------------------------------------------------------------------------------
def _copy_key(c: dict) -> tuple:
    return c["group"], c.get("queue_topic", c["topic"]), c["queue_id"], c["queue_offset"]


def _local_repeat(consumes: list[dict], c: dict) -> bool:
    """``c`` consumed a stored copy consumed before: the client's local retry after both send-backs failed, with
    reconsumeTimes raised in memory (ROCKETMQ.md 4.2). The broker's copy still carries the old count."""
    return any(p["seq"] < c["seq"] and _copy_key(p) == _copy_key(c) for p in consumes)


def _late_by_4x_fallback(ix: _Index, events: list[dict], group: str, dead: dict, r: int,
                         ctx: RunContext) -> str | None:
    """4.9.8's producer fallback of attempt ``r`` (ROCKETMQ.md 4.3): ``sendMessage`` restores the request's
    properties after handleRetryAndDLQ, so the DLQ copy keeps DELAY = 3 + r and reaches %DLQ%group through
    SCHEDULE_TOPIC_XXXX exactly one level-delay after the send-back. None if ``dead`` is that; else why not."""
    level = min(3 + r, ctx.max_delay_level)
    via = next(e for e in reversed(events) if e["kind"] == "deliver" and e["seq"] < dead["seq"])
    if via["level"] != level:
        return f"it waited at level {via['level']}, not the client's level {level} (3 + reconsumeTimes {r})"
    cause = _fallback_that_stored(events, group, via, r, dead["seq"])
    if cause is None:
        return f"no producer-fallback send-back of attempt {r} preceded it"
    since = dead["t_ms"] - cause["t_ms"]
    need = ctx.level_delay_ms(level)
    faults = [e for e in ix.events if cause["seq"] < e["seq"] < dead["seq"]
              and (e["kind"] in ("crash", "restart")
                   or (e["kind"] == "fault" and e.get("site") in ("clock", "commitlog.put", "schedule.rebuild")))]
    if not faults and not need <= since <= need + SEND_BACK_TO_DLQ_MS:
        return f"it arrived {since} ms after its send-back, not one level-{level} delay ({need} ms) later"
    return None


def _store_of_delivered_copy(events: list[dict], via: dict) -> dict | None:
    """The SCHEDULE_TOPIC_XXXX store of the copy the level delivery ``via`` put out (None: not in the history)."""
    return next((e for e in reversed(events) if e["kind"] == "store" and e["topic"] == SCHEDULE_TOPIC
                 and e["seq"] < via["seq"] and e["queue_id"] == via["level"] - 1
                 and e["queue_offset"] == via.get("schedule_queue_offset")), None)


def _fallback_that_stored(events: list[dict], group: str, via: dict, r: int, before_seq: int) -> dict | None:
    """The producer-fallback send-back of attempt ``r`` whose SCHEDULE_TOPIC_XXXX copy ``via`` delivered: the last
    one before that copy's store, so a later fallback of a twin ladder's attempt with the same count (a level
    delivery repeated after a crash, explore seed 910000265) does not time it. The last before ``before_seq``
    when the copy's store is not in the history."""
    made = _store_of_delivered_copy(events, via)
    until = before_seq if made is None else made["seq"]
    return next((b for b in reversed(events) if b["kind"] == "send_back" and b["group"] == group
                 and b["seq"] < until and b.get("path") == "producer-fallback" and b["result"] == "ok"
                 and b["reconsume_times"] == r), None)


def _over_a_lowered_limit(failed: list[dict], rt: int, limit: int, preset: set[int]) -> bool:
    """run --from-store: the store held a retry copy whose reconsumeTimes already reached a limit lowered since;
    its failed attempt is dead-lettered at once with that count + 1 (consumerSendMsgBack: reconsumeTimes >= max)."""
    over = [c for c in failed if c["reconsume_times"] >= limit and c["reconsume_times"] in preset]
    return bool(over) and rt == over[-1]["reconsume_times"] + 1


def _dead_letter_problem(ix: _Index, events: list[dict], consumes: list[dict], group: str, dead: dict,
                         limit: int, ctx: RunContext, preset: set[int] = frozenset()) -> str | None:
    """Why ``dead`` is not a dead letter RocketMQ stores (None: it is one). consumerSendMsgBack dead-letters the
    copy whose stored reconsumeTimes reached ``limit``, at once, with reconsumeTimes limit + 1. The producer
    fallback sends the client's count r + 1 (raised in memory by local retries): 5.x dead-letters when
    r + 1 > limit, at once; 4.9.8 when r + 1 >= limit, one level-delay late through the schedule topic."""
    rt = dead["reconsume_times"]
    failed = [c for c in consumes if c["seq"] < dead["seq"] and c["status"] != CONSUME_SUCCESS]
    count = (f"dead-lettered with reconsumeTimes {rt} after {len([c for c in consumes if c['seq'] < dead['seq']])}"
             f" attempt(s); expected exactly {limit + 1} failed attempts and reconsumeTimes {limit + 1}")
    era4 = ctx.era.startswith("4.")
    # causes first (#18): a delivery into %DLQ% is recorded just before the store and the dlq it caused
    via = next((e for e in reversed(events) if e["kind"] == "deliver" and e["seq"] < dead["seq"]), None)
    if era4 and via is not None and via["topic"] == f"%DLQ%{group}" and via["seq"] >= dead["seq"] - 2:
        r = rt - 1
        why_not = _late_by_4x_fallback(ix, events, group, dead, r, ctx)
        trigger = [c for c in failed if c["reconsume_times"] == r]
        # the attempt whose fallback stored the delivered copy: the last one before that copy's store (a level
        # delivery repeated after a crash may give the group a later attempt with the same count, explore seed 511)
        made = _store_of_delivered_copy(events, via)
        if made is not None:
            trigger = [c for c in trigger if c["seq"] < made["seq"]] or trigger
        # attempt ``limit`` whose broker send-back failed: the broker would have dead-lettered it; its fallback
        # (RECONSUME_TIME limit + 1) does, after an earlier attempt's send-back went through the broker
        broker_would_have = r == limit and any(
            b["kind"] == "send_back" and b["group"] == group and b.get("path") == "broker" and b["result"] == "failed"
            and b["reconsume_times"] == r and b["seq"] > trigger[-1]["seq"] for b in events if b["seq"] < dead["seq"]
        ) if trigger else False
        if why_not is None and (r < limit - 1 or not trigger
                                or (r > limit - 1 and not _local_repeat(consumes, trigger[-1]) and not broker_would_have)):
            why_not = f"attempt {r} is not the first to reach RECONSUME_TIME >= {limit}"
        return None if why_not is None else f"{count} (not 4.9.8's producer fallback: {why_not})"
    cause = next((b for b in reversed(events) if b["kind"] == "send_back" and b["group"] == group
                  and b["msg_id"] == dead["msg_id"] and b["seq"] < dead["seq"]), None)  # the one that stored it
    if not era4 and cause is not None and cause.get("path") == "producer-fallback" and cause["result"] == "ok":
        r = cause["reconsume_times"]
        trigger = [c for c in failed if c["reconsume_times"] == r]
        first = r == limit or (r > limit and trigger and _local_repeat(consumes, trigger[-1]))
        if rt != r + 1 or not trigger or not first:
            return count
    elif ((rt != limit + 1 or not any(c["reconsume_times"] == limit for c in failed))
          and not _over_a_lowered_limit(failed, rt, limit, preset)):
        return count + (" (not 4.9.8's producer fallback: it did not come through SCHEDULE_TOPIC_XXXX)"
                        if era4 and rt == limit else "")
    last = [c for c in failed if c["reconsume_times"] == rt - 1] or failed
    if failed and failed[-1]["seq"] > last[-1]["seq"] and _local_repeat(consumes, failed[-1]):
        last = [failed[-1]]  # the client's local retry (in-memory reconsumeTimes raised) is what was sent back
    backs = [b for b in events if b["kind"] == "send_back" and b["group"] == group
             and last[-1]["seq"] < b["seq"] < dead["seq"]]
    since = dead["t_ms"] - (backs[-1]["t_ms"] if backs else last[-1]["t_ms"])
    if since > SEND_BACK_TO_DLQ_MS:
        return (f"reached %DLQ%{group} {since} ms after its last send-back: it took another delay on the way "
                f"(DELAY kept, #2724)")
    return None


def _another_ladder(events: list[dict], g: GroupInfo, c: dict) -> bool:
    """The group's topic stored the message k >= 2 times (a timer or level delivery repeated after a crash or a
    power failure): k retry ladders climb side by side, and ``c`` belongs to one not yet dead-lettered when
    fewer than k dead letters came before it (explore seeds 276, and 258 with combos: a retry of the twin's ladder
    after the other's dead letter). One stored copy is one ladder: a
    second chain from it is what no_contains_message_check makes, and stays a violation."""
    stored = sum(1 for e in events if e["kind"] == "store" and e["topic"] == g.topic and e["reconsume_times"] == 0)
    dead = sum(1 for e in events if e["kind"] == "dlq" and e["group"] == g.group and e["seq"] < c["seq"])
    return stored >= 2 and dead < stored


def _client_lines(ix: _Index, pattern: re.Pattern) -> list[tuple[int, str, re.Match]]:
    """(seq, group, match) of each line of a consumer client's log that ``pattern`` matches; the group from the
    client's ``consumer_start``."""
    groups = {e["client_id"].split("@")[0]: e["group"] for e in ix.by_kind["consumer_start"]}
    lines = []
    for e in ix.by_kind["log"]:
        if e["logger"].startswith("RocketmqClient@"):
            m = pattern.match(e["message"])
            group = groups.get(e["logger"].partition("@")[2])
            if m is not None and group is not None:
                lines.append((e["seq"], group, m))
    return lines


PROCESS_QUEUE_DROPPED = re.compile(r"processQueue is dropped without process consume result\. "
                                   r"MessageQueue\(topic='([^']+)', broker_name='[^']*', queue_id=(\d+)\)")


def _sent_back(events: list[dict], c: dict) -> bool:
    """The failed attempt ``c``'s send-back stored a retry copy: a send-back of its count recorded with it (in its
    step, before the group's next consume of the message) went through, by the broker or the producer fallback."""
    for e in events:
        if e["seq"] <= c["seq"] or e.get("group") != c["group"]:
            continue
        if e["kind"] == "consume" or e["t_ms"] != c["t_ms"]:
            return False
        if (e["kind"] == "send_back" and e["reconsume_times"] == c["reconsume_times"] and e["result"] == "ok"
                and e.get("path") != "local-retry"):
            return True
    return False


def _forks(failed: list[dict], forked: Callable[[dict, dict], bool]) -> int:
    """How many of the failed consumes ``failed`` (in order) read a copy an earlier one read too, the pair
    (earlier, later) being ``forked``: each such repeat started one more retry ladder."""
    return sum(1 for i, b in enumerate(failed) if any(_copy_of(a) == _copy_of(b) and forked(a, b) for a in failed[:i]))


def _a_ladder_is_left(events: list[dict], again: dict, forks: int) -> bool:
    """``forks`` repeats made ``forks + 1`` ladders, and fewer dead letters of ``again``'s group came before it
    (``events``: the message's): ``again`` may climb a ladder not yet dead-lettered."""
    dead = sum(1 for e in events if e["kind"] == "dlq" and e["group"] == again["group"] and e["seq"] < again["seq"])
    return forks > 0 and dead < 1 + forks


def _forked_by_a_repeated_consume(ix: _Index, events: list[dict], consumes: list[dict], again: dict) -> bool:
    """A rebalance forked the retry ladder (explore seed 990000012, 5.3.3): an attempt whose send-backs both failed
    stays in its ProcessQueue for the local retry, and holds the queue's offset below the copies read after it;
    a rebalance that drops the queue (the broker's restart forgot the group, whose heartbeats come back one by
    one) persists that offset, and the queue is pulled again from it (RebalancePushImpl
    .removeUnnecessaryMessageQueue, computePullFromWhere). A copy already failed and sent back is consumed again
    with the same reconsumeTimes and sent back again: a second ladder, and ``again`` may be its retry while fewer
    dead letters than ladders came before it. Recognised by a copy failed twice (same count), the group's client
    logging between them that the copy's queue was dropped under a consume (the rebalance itself logs at INFO,
    which the history does not keep), no offset of the group committed past the copy in between, and each
    attempt's send-back storing a retry copy. One consume sent back twice (no_contains_message_check) forks
    nothing here and stays a violation."""
    drops = [(seq, group, m.group(1), int(m.group(2))) for seq, group, m in _client_lines(ix, PROCESS_QUEUE_DROPPED)]

    def dropped_between(a: dict, b: dict) -> bool:
        return any(a["seq"] < seq < b["seq"] and group == b["group"] and (topic, queue_id) == _copy_of(b)[:2]
                   for seq, group, topic, queue_id in drops)

    def committed_past(a: dict, b: dict) -> bool:
        return any(a["seq"] < e["seq"] < b["seq"] and e["group"] == b["group"] and e["topic"] == _copy_of(b)[0]
                   and e["queue_id"] == b["queue_id"] and e["offset"] > b["queue_offset"]
                   for e in ix.by_kind["offset_commit"])

    failed = [c for c in consumes if c["seq"] < again["seq"] and c["status"] != CONSUME_SUCCESS
              and c["reconsume_times"] < again["reconsume_times"]]
    forks = _forks(failed, lambda a, b: a["reconsume_times"] == b["reconsume_times"] and _sent_back(events, b)
                   and _sent_back(events, a) and dropped_between(a, b) and not committed_past(a, b))
    return _a_ladder_is_left(events, again, forks)


CLIENT_OFFSET_PERSIST_MS = 5_000  # MQClientInstance.persistAllConsumerOffset: persistConsumerOffsetInterval


def _forked_by_a_newcomers_rebalance(ix: _Index, events: list[dict], consumes: list[dict], again: dict) -> bool:
    """A consumer (re)start forked the retry ladder (explore seed 1090000121 like 990000012, 5.3.3; 1080000179 too
    until a woken rebalance ran at once): the newcomer's first rebalance took a queue and read its offset from the
    broker (computePullFromWhere, READ_FROM_STORE, kept in memory), which lagged what the previous owner had consumed: its progress reaches the broker with its
    pulls' commitOffset and its 5 s persistAll, or when its own rebalance drops the queue (persist(mq)), racing the
    newcomer's read. The newcomer pulled from there (its pulls' commitOffset even set the broker back, a plain put:
    "[NOTIFYME]update consumer offset less than store") and consumed a copy the previous owner had already failed
    and sent back: the same count sent back twice, a second ladder, and ``again`` may be its retry while fewer dead
    letters than ladders came before it. Recognised by a copy failed twice (same count) by two clients of the group,
    the second one's consumer_start between them, less than the client's persist interval after the first, and each
    attempt's send-back storing a retry copy."""
    starts = [e for e in ix.by_kind["consumer_start"] if e["group"] == again["group"]]

    def newcomer_between(a: dict, b: dict) -> bool:
        return a["client_id"] != b["client_id"] and any(
            a["seq"] < e["seq"] < b["seq"] and e["client_id"] == b["client_id"]
            and e["t_ms"] - a["t_ms"] < CLIENT_OFFSET_PERSIST_MS for e in starts)

    failed = [c for c in consumes if c["seq"] < again["seq"] and c["status"] != CONSUME_SUCCESS
              and c["reconsume_times"] < again["reconsume_times"]]
    forks = _forks(failed, lambda a, b: a["reconsume_times"] == b["reconsume_times"] and newcomer_between(a, b)
                   and _sent_back(events, a) and _sent_back(events, b))
    return _a_ladder_is_left(events, again, forks)


def _copy_of(consume: dict) -> tuple[str, int, int]:
    """The stored copy a consume read: (queue topic, queue id, queue offset)."""
    return consume.get("queue_topic", consume["topic"]), consume["queue_id"], consume["queue_offset"]


def _repeat_after_a_crash(ix: _Index, consumes: list[dict], again: dict) -> bool:
    """A crash forked the retry chain: some attempt up to ``again``'s was consumed again after it (an offset not
    yet persisted), and the copy's own send-back started a second chain; ``again`` belongs to that one. The
    repeats are counted by the duplicates invariant, they are not retries beyond the DLQ."""
    crashes = [e["seq"] for e in ix.by_kind["crash"]]
    before = [c for c in consumes if c["seq"] <= again["seq"] and c["reconsume_times"] <= again["reconsume_times"]]
    if any(a["reconsume_times"] == b["reconsume_times"] and any(a["seq"] < s < b["seq"] for s in crashes)
           for i, a in enumerate(before) for b in before[i + 1:]):
        return True
    # Or the crash came before any consume: a delivery it rewound stored a copy up to ``again``'s a second time.
    copies = [e for e in ix.by_msg[again["msg_id"]] if e["kind"] == "store" and e["seq"] < again["seq"]
              and e["topic"] not in ("SCHEDULE_TOPIC_XXXX", "rmq_sys_wheel_timer")
              and e["reconsume_times"] <= again["reconsume_times"]]
    return any((a["topic"], a["reconsume_times"]) == (b["topic"], b["reconsume_times"])
               and any(a["seq"] < s < b["seq"] for s in crashes) for i, a in enumerate(copies) for b in copies[i + 1:])


PULL_OFFSET_FIXED = re.compile(r"fix the pull request offset, MessageQueue\(topic='([^']+)', broker_name='[^']*', "
                               r"queue_id=(\d+)\) (-?\d+)")


def _pull_offset_fixes(ix: _Index) -> list[tuple[int, str, str, int, int]]:
    """(seq, group, topic, queue id, offset) of each delayed OFFSET_ILLEGAL fix a client logged (its WARN line
    names the offset it set and persisted); the group from the client's ``consumer_start``."""
    return [(seq, group, m.group(1), int(m.group(2)), int(m.group(3)))
            for seq, group, m in _client_lines(ix, PULL_OFFSET_FIXED)]


def _forked_by_a_late_offset_fix(ix: _Index, consumes: list[dict], again: dict, ctx: RunContext) -> bool:
    """4.9.8: the client answers OFFSET_ILLEGAL by marking the ProcessQueue dropped and, 10 s later, setting the
    offset to nextBeginOffset (not increase-only), persisting it and calling removeProcessQueue(mq)
    (DefaultMQPushConsumerImpl.pullMessage). A rebalance within those 10 s may have put a new ProcessQueue there
    (the queue went to the other instance and back while the restarted broker relearned its consumers); the task
    rewinds the group's offset under what that queue consumed and removes it, and the next rebalance pulls those
    copies again. A failed one is sent back twice: two retry ladders, and ``again`` may be the second one's after
    the first one's dead letter (explore seed 990000087: a 2 s rollback, GroupA's pull at 19 moved to 15, a new
    queue consumed 19-23 from 19, the fix at 62.113 s put the group back to 15; retry 1 at #20 failed at 61.504 s
    and again at 82.002 s). Recognised by the fix's WARN line for the copy's queue, at or below its offset, between
    two failed consumes of one copy, and fewer dead letters before ``again`` than ladders."""
    if not ctx.era.startswith("4."):
        return False  # 5.2.0+ (#7635) runs the fix at once on the queue it dropped, then rebalances
    fixes = [f for f in _pull_offset_fixes(ix) if f[1] == again["group"]]
    failed = [c for c in consumes if c["seq"] < again["seq"] and c["status"] != CONSUME_SUCCESS]
    forks = _forks(failed, lambda a, b: any(a["seq"] < seq < b["seq"] and (topic, queue_id) == _copy_of(b)[:2]
                                            and offset <= b["queue_offset"]
                                            for seq, _g, topic, queue_id, offset in fixes))
    return _a_ladder_is_left(ix.by_msg[again["msg_id"]], again, forks)


def check_dlq_after_max_retries(ix: _Index, ctx: RunContext) -> dict:
    violations = []
    checked = 0
    groups = {g.group: g for g in ctx.groups if g.model == "CLUSTERING"}
    for msg_id, events in ix.by_msg.items():
        for group, g in groups.items():
            limit = g.max_reconsume_times
            consumes = [e for e in events if e["kind"] == "consume" and e["group"] == group]
            dlqs = [e for e in events if e["kind"] == "dlq" and e["group"] == group]
            copies = ix.preloaded.get(msg_id, [])
            dead_before = [c for c in copies if c["topic"] == DLQ_PREFIX + group]
            if not consumes and not dlqs and not dead_before:
                continue
            checked += 1
            if dead_before:  # a dead letter in the store stays one: no copy the run stores reaches the group again
                stored = {(e["topic"], e["queue_id"], e["queue_offset"]) for e in events if e["kind"] == "store"}
                again = [c for c in consumes if (c["queue_topic"], c["queue_id"], c["queue_offset"]) in stored]
                if again:
                    violations.append({"msg_id": msg_id, "group": group, "events": ix.quote(msg_id),
                                       "explanation": f"in %DLQ%{group} at the start (stored at broker time "
                                                      f"{dead_before[0]['store_ms']}), yet delivered to {group} again "
                                                      f"as retry {again[0]['reconsume_times']}"})
                    continue
            # A retry count the store already held (a limit lowered since) is RocketMQ's to keep, not a retry too many.
            preset = {c["reconsume_times"] for c in copies}
            too_many = [c for c in consumes if c["reconsume_times"] > limit and not _local_repeat(consumes, c)
                        and c["reconsume_times"] not in preset]
            if too_many:
                c = too_many[0]
                violations.append({"msg_id": msg_id, "group": group, "events": ix.quote(msg_id),
                                   "explanation": f"{group} was given retry {c['reconsume_times']} although at most "
                                                  f"{limit} retries are allowed before the DLQ"})
                continue
            # consumerSendMsgBack dead-letters a message whose stored reconsumeTimes reached the limit: the retry copy
            # a broker send-back stores carries that count + 1, so one above the limit is a retry granted past it,
            # seen here even when that retry is due after the drain
            granted = []
            for b in events:
                if b["kind"] == "send_back" and b["group"] == group and b["result"] == "ok" and b.get("path") == "broker":
                    made = next((e for e in events if e["seq"] > b["seq"] and e["t_ms"] == b["t_ms"]
                                 and e["kind"] == "store"), None)
                    if (made is not None and made["topic"] == SCHEDULE_TOPIC and made["reconsume_times"] > limit
                            and made["reconsume_times"] not in preset):
                        granted.append(made)
            if granted:
                r = granted[0]["reconsume_times"]
                violations.append({"msg_id": msg_id, "group": group, "events": ix.quote(msg_id),
                                   "explanation": f"a send-back stored retry {r} for {group} although at most {limit} "
                                                  f"retries are allowed before the DLQ"})
                continue
            for dead in dlqs:
                problem = _dead_letter_problem(ix, events, consumes, group, dead, limit, ctx, preset)
                if problem is None:
                    # A retry chain the store already held (its counts) may still come back: the store's offsets
                    # had not passed it, so RocketMQ delivers it again (a duplicate, not a retry past the DLQ).
                    # A copy consumed again (a rebalance or a crash re-pulls it, explore seed 135 with combos) is a
                    # duplicate, not a retry: a retry past the DLQ would be a new copy.
                    seen_copies = {_copy_of(c) for c in consumes if c["seq"] < dead["seq"]}
                    after = [c for c in consumes if c["seq"] > dead["seq"] and not _repeat_after_a_crash(ix, consumes, c)
                             and c["reconsume_times"] not in preset and _copy_of(c) not in seen_copies
                             and not _another_ladder(events, g, c)
                             and not _forked_by_a_repeated_consume(ix, events, consumes, c)
                             and not _forked_by_a_newcomers_rebalance(ix, events, consumes, c)
                             and not _forked_by_a_late_offset_fix(ix, consumes, c, ctx)]
                    if after:
                        problem = f"delivered to {group} as retry {after[0]['reconsume_times']} after it was dead-lettered"
                if problem is not None:
                    violations.append({"msg_id": msg_id, "group": group, "events": ix.quote(msg_id),
                                       "explanation": problem})
                    break
    return _verdict(checked, violations)


# --- retry_schedule ------------------------------------------------------------------------------------------
def _from_a_preloaded_retry(ix: _Index, msg_id: str, consume: dict) -> bool:
    """run --from-store: the store held a retry copy of this attempt for the group (in %RETRY%group, or pending for
    it), due by the time of ``consume``: the consume may be that copy, whose send-back happened before the run."""
    retry_topic = RETRY_PREFIX + consume["group"]
    for p in ix.preloaded.get(msg_id, ()):
        if p["reconsume_times"] != consume["reconsume_times"] or p["state"] == "delivered":
            continue
        if p["topic"] == retry_topic and p["state"] == "stored":
            return True
        if p["real_topic"] == retry_topic and p["state"] == "pending" and due_mono_of_preloaded(p) <= consume["t_ms"]:
            return True
    return False


def _delivered_by_a_stale_unit(ix: _Index, events: list[dict], c: dict) -> bool:
    """After a power failure a level's consume queue may keep a stale unit (#495): its tagsCode, the deliver time
    the level trusts, is not that of any copy the message was stored with, so the copy it points at comes back
    at a time no send-back chose. Recognised by the deliver that made the consumed copy naming a due time no
    stored schedule copy of the message has."""
    if not ix.power_crashes:
        return False
    made = next((e for e in events if e["kind"] == "store" and e["seq"] < c["seq"]
                 and e["topic"] == c.get("queue_topic", c["topic"]) and e["queue_id"] == c["queue_id"]
                 and e["queue_offset"] == c["queue_offset"]), None)
    if made is None:
        return False
    deliver = next((e for e in events if e["kind"] == "deliver" and e["t_ms"] == made["t_ms"]
                    and e["topic"] == made["topic"] and isinstance(e["level"], int)), None)
    if deliver is None or not any(p["seq"] < deliver["seq"] for p in ix.power_crashes):
        return False
    return deliver["due_ms"] not in {e.get("due_ms") for e in events if is_schedule_store(e)}


def _read_through_a_stale_unit(ix: _Index, c: dict) -> bool:
    """A power failure lost the commit log past a copy that a consume queue still names: truncateDirtyLogicFiles
    (4.9.8 and 5.3.3 ConsumeQueue) reads only the queue's last file, and the recovery's own re-dispatch has just
    appended a valid unit there (a queue offset 0 record is appended with no "built repeatedly" check), so units
    in the earlier files that point past the recovered end survive. A record stored since at the reused position
    is what such a unit now names: getMessage returns its bytes unchecked, and the client hands it to the listener
    as pulled from that queue, with its own topic, queue and reconsumeTimes (explore seeds 1060000588 (5.3.3):
    %RETRY%GroupB's unit 61 read a TopicA copy, reconsumeTimes 0; 1060001290 (4.9.8)). Recognised by the copy
    consumed being a store of another topic than the consume's queue (at the consume's queue offset, the record's
    own; 5.x reports the pulled queue's id, 4.9.8 the record's), at the commit-log position of a store into that
    queue made before a power failure that lost it (at or past the durable end) and before the copy."""
    if not ix.power_crashes:
        return False
    queue = c.get("queue_topic", c["topic"])
    copies = [e for e in ix.by_msg.get(c["msg_id"], ()) if e["kind"] == "store" and e["seq"] < c["seq"]
              and e["topic"] == c["topic"] != queue and e["queue_offset"] == c["queue_offset"]]
    return any(e["topic"] == queue and e["phy_offset"] == copy["phy_offset"] and e["seq"] < p["seq"] < copy["seq"]
               and e["phy_offset"] >= p.get("commit_log_durable", e["phy_offset"] + 1)
               for copy in copies for p in ix.power_crashes for e in ix.by_kind["store"])


def _retry_made_by(events: list[dict], j: int) -> int:
    """The reconsumeTimes of the retry copy the send-back ``events[j]`` made: the copy it stored, when its store
    event follows; else the attempt's count + 1. They differ after a client-local retry: the broker counts from
    the copy in its commit log (msgExt.getReconsumeTimes() + 1), not from the client's count (explore seed
    3389118813)."""
    back = events[j]
    after = events[j + 1] if j + 1 < len(events) else None
    if after is not None and after["kind"] == "store" and after["t_ms"] == back["t_ms"]:
        return after["reconsume_times"]
    return back["reconsume_times"] + 1


def _send_back_levels(ix: _Index, ctx: RunContext) -> tuple[int, list[dict]]:
    """The level each broker send-back stored its retry copy at is the one it names, or 3 + the reconsumeTimes of the
    copy it looked up (the stored copy the attempt read: a client's local retry counts up in memory only, explore
    seed 1110000307), clamped to the table (consumerSendMsgBack, both tags). A later level only delays the retry,
    which no earliness check sees. The retry is the store the send-back made in its step (the next store of the
    same millisecond); one of another message (a lookup by a commit-log offset another record now holds), one into
    the DLQ, or one whose read copy the history does not hold is judged elsewhere."""
    checked, violations = 0, []
    events = ix.events
    for b in ix.by_kind["send_back"]:
        if b["result"] != "ok" or b.get("path") != "broker" or events[b["seq"]] is not b:
            continue
        made = next((e for e in events[b["seq"] + 1:] if e["kind"] == "store" or e["t_ms"] != b["t_ms"]), None)
        if made is None or made["kind"] != "store" or made["t_ms"] != b["t_ms"] or made["msg_id"] != b["msg_id"] \
                or made["topic"] != SCHEDULE_TOPIC:
            continue
        attempt = next((e for e in reversed(ix.by_msg[b["msg_id"]]) if e["seq"] < b["seq"]
                        and e["kind"] == "consume" and e["group"] == b["group"]), None)
        copies = _copies_read_by(ix, attempt) if attempt is not None else []
        if not copies:
            continue
        read = copies[-1]
        checked += 1
        named = b.get("delay_level") or 0
        want = min(named if named > 0 else 3 + read["reconsume_times"], ctx.max_delay_level)
        if made["queue_id"] + 1 != want:
            violations.append({"msg_id": b["msg_id"], "group": b["group"], "events": ix.quote(b["msg_id"]),
                               "explanation": f"the send-back at t={b['t_ms']} ms of a copy stored with reconsumeTimes "
                                              f"{read['reconsume_times']} stored its retry at delay level "
                                              f"{made['queue_id'] + 1}; the broker's rule names level {want}"
                                              + (" (the level it was asked for)" if named > 0 else
                                                 " (3 + reconsumeTimes)")})
    return checked, violations


def check_retry_schedule(ix: _Index, ctx: RunContext) -> dict:
    """Retry k comes no sooner than its level's delay after the send-back of attempt k-1 (level 3 + (k-1), or
    the level the send-back named), and a copy in %RETRY% has k >= 1. The deliver time is the store time plus the delay on the broker's wall
    clock (ROCKETMQ.md 11), so a forward step in between shortens the wait by its size, legitimately; after a
    backwards step correctDeliverTimestamp may deliver at once. And each send-back stores its retry at that level
    (``_send_back_levels``): a later one passes every earliness check."""
    checked, violations = _send_back_levels(ix, ctx)
    step_times = [e["t_ms"] for e in ix.clock_steps if e.get("by_ms", 0) < 0]
    forward_steps = [(e["seq"], e["by_ms"]) for e in ix.clock_steps if e.get("by_ms", 0) > 0]
    for msg_id, events in ix.by_msg.items():
        copies_seen: set[tuple] = set()
        for i, c in enumerate(events):
            if c["kind"] != "consume":
                continue
            copy = (c["group"], c.get("queue_topic", c["topic"]), c["queue_id"], c["queue_offset"])
            if copy in copies_seen:
                continue  # the same stored copy again: a client-local retry (send-back failed) or a re-pull
            copies_seen.add(copy)
            if c["reconsume_times"] < 1:
                if c.get("queue_topic") == RETRY_PREFIX + c["group"] and not _read_through_a_stale_unit(ix, c):
                    checked += 1  # every way into %RETRY% (send-back, producer fallback) counts the failed attempt
                    violations.append({"msg_id": msg_id, "group": c["group"], "events": ix.quote(msg_id),
                                       "explanation": f"a copy consumed from {RETRY_PREFIX}{c['group']} carries "
                                                      f"reconsumeTimes 0: the send-back did not count the failed "
                                                      f"attempt, so the retry ladder never climbs to the DLQ"})
                continue
            k = c["reconsume_times"]
            backs = [b for j, b in enumerate(events[:i]) if b["kind"] == "send_back" and b["group"] == c["group"]
                     and b["result"] == "ok" and _retry_made_by(events, j) == k]
            if not backs:
                continue
            if _from_a_preloaded_retry(ix, msg_id, c):
                continue  # the store's own retry copy (sent back before the run) may be the one consumed
            sent_back = backs[0]  # the earliest copy comes back first: the most lenient pairing with duplicates
            if any(sent_back["t_ms"] <= t <= c["t_ms"] for t in step_times):
                continue  # a backwards clock step in between: correctDeliverTimestamp may deliver early
            if _delivered_by_a_stale_unit(ix, events, c):
                continue
            checked += 1
            named = sent_back.get("delay_level") or 0  # cleanExpireMsg names level 3; 0: the broker's 3 + r
            level = min(named if named > 0 else 3 + (k - 1), ctx.max_delay_level)
            need = ctx.level_delay_ms(level)
            stepped = sum(by for seq, by in forward_steps if sent_back["seq"] < seq < c["seq"])
            waited = c["t_ms"] - sent_back["t_ms"]
            if waited < need - stepped:
                violations.append({"msg_id": msg_id, "group": c["group"], "events": ix.quote(msg_id),
                                   "explanation": f"retry {k} came {waited} ms after its send-back; level {level} "
                                                  f"({need} ms) had not elapsed"
                                                  + (f", even less the {stepped} ms the broker clock stepped forward"
                                                     if stepped else "")})
    return _verdict(checked, violations)


# --- bounded_lateness ----------------------------------------------------------------------------------------
def _settled_ms(ix: _Index, ctx: RunContext) -> int:
    """From when lateness is judged: the drain, and at least ``SETTLE_AFTER_FAULT_MS`` after the last fault."""
    drain = ix.drain_t if ix.drain_t is not None else ctx.drain_start_ms
    fault_times = [e["t_ms"] for e in ix.by_kind["crash"]] + [e["t_ms"] for e in ix.by_kind["restart"]] + [
        e["t_ms"] for e in ix.by_kind["fault"] if e.get("action") != "fail"]
    return max([drain, *[t + SETTLE_AFTER_FAULT_MS for t in fault_times]])


def _unmarked_file_starts(ix: _Index, ctx: RunContext) -> dict[tuple, int]:
    """(level, t_ms) of a level's poll -> the consume-queue file starts the level passed since its previous
    delivery without delivering the unit there; they delay every unit that poll delivers. A poll that began at
    such a start read only units it could not use (zeroed by a power failure and never indexed again, explore
    seed 4137813379: lookMessageByOffset(0, 0) finds nothing), so it left no event, yet it cost one poll."""
    out: dict[tuple, int] = {}
    previous: dict[int, int] = {}
    per_file = ctx.cq_units_per_file
    for e in ix.events:
        if e["kind"] == "restart" and e["target"] == "broker":
            previous.clear()  # a new broker: its levels start again from their persisted offsets
            continue
        if e["kind"] != "deliver" or not isinstance(e["level"], int) or e.get("resend"):
            continue
        offset = e.get("schedule_queue_offset", -1)
        if offset < 0:
            continue
        last = previous.get(e["level"])
        if last is not None and offset > last + 1:
            first_start = (last // per_file + 1) * per_file
            if first_start < offset:
                out[(e["level"], e["t_ms"])] = (offset - 1 - first_start) // per_file + 1
        previous[e["level"]] = offset
    return out


def _unmarked_file_start_polls(ix: _Index, ctx: RunContext) -> dict[int, list[int]]:
    """Level -> when its polls at unmarked file starts (``_unmarked_file_starts``) ran, at the latest: each
    polled again 100 ms after the one before, so the k-th before the poll that delivered after them ran k polls
    before it. They delay every copy due before them, also those the level's later polls deliver (explore seed
    940000198: two zeroed files after a power failure; copies due 0.3 s before them, in the file after the
    next, came two polls late, not only those of the next poll)."""
    out: dict[int, list[int]] = defaultdict(list)
    for (level, t_ms), count in _unmarked_file_starts(ix, ctx).items():
        out[level].extend(t_ms - LEVEL_POLL_MS * k for k in range(1, count + 1))
    return out


def check_bounded_lateness(ix: _Index, ctx: RunContext) -> dict:
    """In the drain, a message due well after the last fault is delivered within one poll of its due time.

    Lateness is ``model.stats.delivery_lateness`` (the one definition, also in summary.json's stats): on the
    simulator's monotonic clock from the scheduled copy's due time, so a broker clock that jumps (and a
    scheduler that does not correct for it) shows up as lateness."""
    violations = []
    checked = 0
    settled = _settled_ms(ix, ctx)
    schedule_stores: dict[str, list[dict]] = defaultdict(list)
    for e in ix.by_kind["store"]:
        if is_schedule_store(e):
            schedule_stores[e["msg_id"]].append(e)
    delivered: set[tuple[str, object]] = set()
    # getIndexBuffer ends at its consume-queue file: a level's poll stops there, and the units of the next file
    # wait for the next poll (DELAY_FOR_A_WHILE) however long they have been due. So each poll of the level that
    # began at a file's first unit since a copy fell due may add one poll to its lateness.
    file_start_polls: dict[int, set[int]] = defaultdict(set)
    for e in ix.by_kind["deliver"]:
        if isinstance(e["level"], int) and (e.get("schedule_queue_offset") or 0) > 0 \
                and e["schedule_queue_offset"] % ctx.cq_units_per_file == 0:
            file_start_polls[e["level"]].add(e["t_ms"])
    hidden_polls = _unmarked_file_start_polls(ix, ctx)
    # A deliver time is the store time plus the delay on the broker's wall clock: a backwards step between the
    # store and the delivery postpones the copy by the step on the simulator's clock (correctDeliverTimestamp
    # only acts on a deliver time more than one level-delay ahead), so such a copy may be that much later.
    back_steps = [(e["t_ms"], -e["by_ms"]) for e in ix.clock_steps if e.get("by_ms", 0) < 0]
    stored_at: dict[tuple[str, int], int] = {}
    if back_steps:
        last: dict[str, int] = {}
        for e in ix.events:
            if is_schedule_store(e):
                last[e["msg_id"]] = e["t_ms"]
            elif e["kind"] == "deliver" and e["msg_id"] in last:
                stored_at[(e["msg_id"], e["t_ms"])] = last[e["msg_id"]]
    error_polls: dict[int, list[int]] = defaultdict(list)  # level -> when its task hit a unit whose rebuild threw
    for level, _offset, _seq, t_ms, _site in ix.level_unit_errors:
        error_polls[level].append(t_ms)
    first_deliveries: set[tuple] = set()
    for r in delivery_lateness(ix.events):
        if (r.msg_id, r.level, r.due_mono_ms) in first_deliveries:
            continue  # the same copy again (a rewound level, a resurrected #495 unit, seed 1655531205): a duplicate
        first_deliveries.add((r.msg_id, r.level, r.due_mono_ms))
        bound = ctx.timer_precision_ms + POLL_SLACK_MS if r.level == "timer" else POLL_SLACK_MS
        crossed = (sum(1 for t in file_start_polls.get(r.level, ()) if r.due_mono_ms < t <= r.t_ms)
                   + sum(1 for t in hidden_polls.get(r.level, ()) if r.due_mono_ms < t <= r.t_ms))
        if back_steps:
            # a level queue is FIFO: a copy behind one stored before the step waits for it (explore seed 166),
            # and after it for one poll per consume-queue file crossed (seed 1655531201)
            store_t = stored_at.get((r.msg_id, r.t_ms), r.t_ms)
            if isinstance(r.level, int):
                store_t = min(store_t, r.t_ms - ctx.level_delay_ms(r.level) - max(by for _, by in back_steps)
                              - POLL_SLACK_MS - LEVEL_POLL_MS * (1 + crossed))
            bound += sum(by for t, by in back_steps if store_t <= t <= r.t_ms)
        bound += LEVEL_POLL_MS * crossed
        if isinstance(r.level, int) and not ix.level_retries_a_broken_unit:
            # 5.x: when messageTimeup throws the task moves past the unit, but only at its next poll (seed 282)
            bound += LEVEL_POLL_MS * sum(1 for t in error_polls.get(r.level, ()) if r.due_mono_ms <= t <= r.t_ms)
        delivered.add((r.msg_id, r.level))
        if r.due_mono_ms < settled:
            continue
        checked += 1
        if r.lateness_ms > bound:
            violations.append({"msg_id": r.msg_id, "events": ix.quote(r.msg_id),
                               "explanation": f"due at t={r.due_mono_ms} ms in the drain but delivered "
                                              f"{r.lateness_ms} ms late (bound {bound} ms from the polling intervals)"})
    # Liveness: a message due in the settled drain that never came back at all.
    for msg_id, stores in schedule_stores.items():
        last = stores[-1]
        if last["topic"] != SCHEDULE_TOPIC:
            continue
        level = last["queue_id"] + 1
        due_mono = last["t_ms"] + ctx.level_delay_ms(level)
        if not settled <= due_mono <= ctx.end_ms - 1000 or (msg_id, level) in delivered:
            continue
        if ix.lost_to_a_fault(msg_id, after_seq=last["seq"] - 1):
            continue  # a fault after it was stored destroyed this copy (no_loss's excuse): nothing is due
        checked += 1
        violations.append({"msg_id": msg_id, "events": ix.quote(msg_id),
                           "explanation": f"due at t={due_mono} ms in the drain but never delivered"})
    # run --from-store: every scheduled copy the store held still pending is delivered, if due before the end
    for msg_id, copies in ix.preloaded.items():
        for p in copies:
            if not is_pending_preloaded(p):
                continue
            timer = p["topic"] == TIMER_TOPIC
            level = "timer" if timer else p["queue_id"] + 1
            due_mono = due_mono_of_preloaded(p)
            if due_mono + POLL_SLACK_MS + (2 * ctx.timer_precision_ms if timer else 0) > ctx.end_ms - 1000:
                continue  # pending past the end of the drain
            checked += 1
            if not any(e["kind"] == "deliver" and e["level"] == level for e in ix.by_msg[msg_id]) and not (
                    ix.lost_to_a_fault(msg_id)):
                what = "on the timer wheel" if timer else f"at delay level {level}"
                violations.append({"msg_id": msg_id, "events": ix.quote(msg_id),
                                   "explanation": f"waiting {what} in the store at the start ({_where(p)}), due at "
                                                  f"t={due_mono} ms, but never delivered"})
    off_table = _level_copies_off_the_table(ix, ctx)
    return _verdict(checked + off_table[0], violations + off_table[1])


def _level_copies_off_the_table(ix: _Index, ctx: RunContext) -> tuple[int, list[dict]]:
    """Each delay-level copy is due its level's delay after its store, as the scenario's messageDelayLevel gives
    it: lateness is measured from the due time the broker computed, so a broker that read its table wrong (a level
    waiting another level's delay) would be on time by its own measure."""
    checked, violations = 0, []
    for e in ix.by_kind["store"]:
        if e["topic"] != SCHEDULE_TOPIC or "due_ms" not in e or e["queue_id"] + 1 not in ctx.delay_level_ms:
            continue
        checked += 1
        level, waits = e["queue_id"] + 1, e["due_ms"] - e["broker_ms"]
        if waits != ctx.delay_level_ms[level]:
            violations.append({"msg_id": e["msg_id"], "events": ix.quote(e["msg_id"]),
                               "explanation": f"the copy stored at delay level {level} at t={e['t_ms']} ms is due "
                                              f"{waits} ms after its store; messageDelayLevel gives level {level} "
                                              f"{ctx.delay_level_ms[level]} ms"})
    return checked, violations


# --- duplicates ----------------------------------------------------------------------------------------------
def _slot_unfinished(deliver: dict, shutdown: dict, ctx: RunContext) -> bool:
    """A timer slot whose puts were still running at a graceful shutdown: the checkpointed read time stays at
    the slot, so RocketMQ reads the whole slot again after the restart (its finished puts become duplicates)."""
    read_ms = shutdown.get("timer_read_ms")
    return deliver["level"] == "timer" and read_ms is not None and deliver["due_ms"] - ctx.timer_precision_ms >= read_ms


def _direct_timer_put_replayed(ix: _Index, earlier: list[dict], again: dict) -> bool:
    """A timer copy put straight to the put side (due before the wheel's write time: never in the timer log, slot
    -1) is read again after any restart: recover() resumes the timer queue at the queue offset of the timer
    log's last unit (reviseQueueOffset), which lies before every copy that skipped the log. ``earlier``: the
    deliveries of the same copy before ``again``; the first of them may have come through a slot, and a
    rolled copy (timerRollWindowSlots) then put straight out (explore seed 58). A restart lies between."""
    return again["level"] == "timer" and again.get("slot_ms") == -1 and any(
        d["level"] == "timer" and d.get("slot_ms") == -1
        and any(d["seq"] < r["seq"] < again["seq"] for r in ix.restarts) for d in earlier)


def _another_timer_copy_from_a_crash(ix: _Index, earlier: list[dict], again: dict, ctx: RunContext) -> bool:
    """After a crash the timer can hold a message twice (explore seed 58, timerRollWindowSlots 3): the recovery
    relinks the wheel from the timer log, where the copy's roll unit lies, so the roll re-puts the message as a
    new timer-topic copy; and it replays the timer queue from the copy itself, which enters the wheel again and
    is delivered. The re-put copy, stored at the restart, is delivered too, maybe only after a later graceful
    restart. So a timer delivery repeats no copy while the message's deliveries due at that time do not outnumber
    its timer-topic copies due then, one of them stored at the restart after a crash."""
    if again["level"] != "timer":
        return False
    timer_out = again["due_ms"] - ctx.timer_precision_ms
    after_crash = {r["t_ms"] for r in ix.restarts if r.get("last_exit_ok") is False}
    copies = [e for e in ix.by_msg[again["msg_id"]] if e["kind"] == "store" and e["topic"] == TIMER_TOPIC
              and e["seq"] < again["seq"] and e.get("timer_out_ms") == timer_out]
    due_then = [d for d in earlier if d["due_ms"] == again["due_ms"]]
    return len(due_then) + 1 <= len(copies) and any(c["t_ms"] in after_crash for c in copies)


def _timer_repeat_lost_by_a_crash(earlier: list[dict], again: dict, crash_times: list[int], ctx: RunContext) -> bool:
    """A timer delivery repeated after a broker crash that came within the window of the copy's latest delivery,
    not its first: the timer reads a slot again after each restart while its checkpoint stays before the slot, so
    each restart's read is a delivery the next crash can lose (explore seed 1100000549: slot 2 s read at 3.6 s, again
    after two graceful restarts, the last at 10.926 s; the crash at 12.847 s came 9.2 s after the first read)."""
    if again["level"] != "timer" or len(earlier) < 2:
        return False
    latest = earlier[-1]["t_ms"]
    return any(latest <= t <= again["t_ms"] and t - latest <= ctx.duplicate_window_ms for t in crash_times)


def _consumed_a_replayed_timer_copy(events: list[dict], original: dict, again: dict) -> bool:
    """``again`` consumed a copy that a restart's timer replay (``_direct_timer_put_replayed``) put out anew."""
    direct = [e for e in events if e["kind"] == "deliver" and e["level"] == "timer" and e.get("slot_ms") == -1]
    return any(original["seq"] < d["seq"] < again["seq"] for d in direct[1:])


def _behind_an_unfinished_async_head(ix: _Index, again: dict, shutdown: dict, ctx: RunContext) -> bool:
    """Asynchronous delivery: units behind a head whose put failed are put, but the offset table waits at the head
    until its resend succeeds (HandlePutResultTask). 5.3.3 shuts the message store down before the schedule
    service, so a resend pending at a graceful shutdown fails and the table is persisted at the head: the units
    behind it come again after the restart (explore seed 38, steered). 4.9.8 stops the schedule service first, so
    a resend that wakes within stop()'s 5 s wait is put; one asleep longer (doResend sleeps up to 60 s) leaves the
    table at the head there too. Both eras, then; recognised by the setting
    (enableScheduleAsyncDeliver), a failed commit-log put since the run began, and a gap: a unit of the level
    below ``again``'s that the level had not delivered before the shutdown while it delivered ``again``'s."""
    level, unit = again["level"], again.get("schedule_queue_offset")
    if not ctx.schedule_async_deliver or not isinstance(level, int) or unit is None:
        return False
    start = max((r["seq"] for r in ix.restarts if r["seq"] < shutdown["seq"]), default=-1)
    if not any(f.get("site") == "commitlog.put" and f.get("action") == "fail" and start < f["seq"] < shutdown["seq"]
               for f in ix.by_kind["fault"]):
        return False
    before = {d["schedule_queue_offset"] for d in ix.by_kind["deliver"]
              if d["level"] == level and start < d["seq"] < shutdown["seq"]}
    if unit not in before:
        return False
    low = min(before)
    return any(j not in before for j in range(low, unit))


def _copies_of_repeated_deliveries(ix: _Index) -> set[tuple[str, int, int]]:
    """(topic, queue_id, queue_offset) of the copies a scheduled copy's repeated delivery stored. A consume of
    such a copy repeats an earlier consume only because the delivery repeated, and the delivery is judged as
    one (explore seed 371: two crashes before the first delayOffset.json persist, each sending level 1 back
    to offset 0)."""
    out = set()
    for events in ix.by_msg.values():
        seen = set()
        for i, e in enumerate(events):
            if e["kind"] != "deliver":
                continue
            key = (e["level"], e.get("schedule_queue_offset"))
            if key in seen and i + 1 < len(events):
                made = events[i + 1]
                if made["kind"] == "store" and made["t_ms"] == e["t_ms"]:
                    out.add((made["topic"], made["queue_id"], made["queue_offset"]))
            seen.add(key)
    return out


FIRST_OFFSET_PERSIST_MS = 10_000  # BrokerController: consumerOffset.json's persist task starts 10 s after a start


def _consume_offset_never_persisted(ix: _Index, original: dict, again: dict) -> bool:
    """A broker crash between the two consumes, at most 10 s after the broker's start, and no consumerOffset.json
    written between the first consume and it: the table on disk predates that consume, however long ago it was.
    The persist window assumes a write every flushConsumerOffsetInterval, but BrokerController's first one waits
    10 s after a start (both eras), and crash_before_offset_flush may kill the broker in it (explore seed
    910000395: the first persist, at 10 s, crashed; a consumer killed meanwhile resumed from the lost table at 0)."""
    persists = [p["seq"] for p in ix.by_kind["persist"] if p.get("file") == "consumerOffset.json"]
    for c in ix.by_kind["crash"]:
        if c.get("target") != "broker" or c.get("crash_kind") == "shutdown" or not (
                original["seq"] < c["seq"] < again["seq"]):
            continue
        started_ms = max((r["t_ms"] for r in ix.restarts if r["seq"] < c["seq"]), default=0)
        if c["t_ms"] - started_ms <= FIRST_OFFSET_PERSIST_MS and not any(original["seq"] < p < c["seq"]
                                                                         for p in persists):
            return True
    return False


CLIENT_FIRST_OFFSET_PERSIST_MS = 10_000  # MQClientInstance: persistAllConsumerOffset's first run, 10 s after a start


def _persist_all_at_or_after(started_ms: int, t_ms: int) -> int:
    """The client's first persistAll round at or after ``t_ms`` (10 s after its start, then every 5 s)."""
    first_round_ms = started_ms + CLIENT_FIRST_OFFSET_PERSIST_MS
    return first_round_ms + max(0, -(-(t_ms - first_round_ms) // CLIENT_OFFSET_PERSIST_MS)) * CLIENT_OFFSET_PERSIST_MS


PULL_EXCEPTION = re.compile(r"execute the pull request exception, MessageQueue\(topic='([^']+)', broker_name='[^']*', "
                            r"queue_id=(\d+)\)")


def _consumed_while_the_broker_was_down(ix: _Index, original: dict, again: dict) -> bool:
    """The first consume came while the broker was down (after its stop, before its restart): its offset reaches the
    broker only with the client's next pull of the queue, 3 s after the pull exception the stop made it log, or with
    its persistAll (10 s after its start, then every 5 s). A consumerOffset.json written before then does not hold
    it; a crash at most 10 s after a broker start (no broker persist yet) with no write since then loses it (explore
    seed 1080000083 like 990000012, 5.3.3: consumed at 1.651 s, the broker shut down at 1.630 s and again at 3.673 s
    with the table still at the consume's offset; the pull carrying it came at 7.634 s, and the crash at 11.053 s,
    6.9 s after the restart at 4.173 s, lost it)."""
    client = original["client_id"].split("@")[0]
    stops = [c for c in ix.broker_crashes if c["seq"] < original["seq"]]
    if not stops:
        return False
    stop = stops[-1]
    if not any(stop["seq"] < r["seq"] and original["seq"] < r["seq"] for r in ix.restarts) or any(
            stop["seq"] < r["seq"] < original["seq"] for r in ix.restarts):
        return False  # the broker was up at the consume
    topic, queue_id = original.get("queue_topic", original["topic"]), original["queue_id"]
    failed_pulls = [e["t_ms"] for e in ix.by_kind["log"] if e["logger"] == f"RocketmqClient@{client}"
                    and stop["seq"] < e["seq"] < original["seq"]
                    and (m := PULL_EXCEPTION.match(e["message"])) and (m.group(1), int(m.group(2))) == (topic, queue_id)]
    if not failed_pulls:
        return False
    started_ms = max(e["t_ms"] for e in ix.by_kind["consumer_start"] if e["client_id"] == original["client_id"]
                     and e["seq"] < original["seq"])
    first_persist_ms = started_ms + CLIENT_FIRST_OFFSET_PERSIST_MS
    persist_all_ms = first_persist_ms if original["t_ms"] < first_persist_ms else first_persist_ms + (
        (original["t_ms"] - first_persist_ms) // CLIENT_OFFSET_PERSIST_MS + 1) * CLIENT_OFFSET_PERSIST_MS
    reach_ms = min(failed_pulls[-1] + PULL_RETRY_MS, persist_all_ms)
    persists = [p for p in ix.by_kind["persist"] if p.get("file") == "consumerOffset.json" and p["t_ms"] >= reach_ms]
    for c in ix.broker_crashes:
        if c.get("crash_kind") == "shutdown" or not (original["seq"] < c["seq"] < again["seq"]) or c["t_ms"] < reach_ms:
            continue
        started = max((r["t_ms"] for r in ix.restarts if r["seq"] < c["seq"]), default=0)
        if c["t_ms"] - started <= FIRST_OFFSET_PERSIST_MS and not any(p["seq"] < c["seq"] for p in persists):
            return True
    return False


def _offset_held_past_a_stop(ix: _Index, original: dict, again: dict) -> bool:
    """The first consume's offset had not left its client when the broker next stopped, and the broker crashed
    at most 10 s after the start that followed, with no consumerOffset.json written after that stop: the table
    on disk is the one the stop wrote, without the offset. A pull carries the in-memory offset only when it is
    built, and the pull after the answer that brought the copy is built before the copy is consumed; it was held
    (nothing new stored in the queue, no later consume of it, the stop within 15 s of the copy's store) until
    the stop cut it; persistAll (10 s after the client's start, then every 5 s) had no round between the consume
    and the stop, and no member started or crashed then (a rebalance persists a queue it lets go). Whatever
    carried the offset after the stop reached a broker that wrote no table before the crash. Explore seed
    1110000605 like 990000012, 4.9.8: GroupA-1 (started at 13.761 s) consumed %RETRY%GroupA 0 #0-#4 at 14.163 s;
    the shutdown at 14.924 s wrote the table at 0; after the restart at 17.924 s its pulls were refused (the
    group's heartbeat had not come) and retry-topic pulls log nothing; its first persistAll (23.761 s) sent 5;
    the crash at 27.924 s, in the broker's first persist 10 s after the start, lost it, and #1 and #4 came
    again at 31.402 s."""
    client_id, group = original["client_id"], original["group"]
    stop = next((c for c in ix.broker_crashes if c["seq"] > original["seq"]), None)
    if stop is None or stop["seq"] > again["seq"] or any(
            original["seq"] < r["seq"] < stop["seq"] for r in ix.restarts):
        return False
    if max((c["seq"] for c in ix.broker_crashes if c["seq"] < original["seq"]), default=-1) > max(
            (r["seq"] for r in ix.restarts if r["seq"] < original["seq"]), default=-1):
        return False  # the broker was down at the consume (_consumed_while_the_broker_was_down's case)
    queue = (original.get("queue_topic", original["topic"]), original["queue_id"])
    stored = [e["t_ms"] for e in ix.by_kind["store"] if e["seq"] < original["seq"]
              and (e["topic"], e["queue_id"], e["queue_offset"]) == (*queue, original["queue_offset"])]
    if not stored or stop["t_ms"] - stored[-1] >= PULL_SUSPEND_MS:
        return False  # the held pull may have timed out and gone again with the offset
    if any(original["seq"] < e["seq"] < stop["seq"] and (e["topic"], e["queue_id"]) == queue
           for e in ix.by_kind["store"]):
        return False  # a new copy in the queue answered the held pull: the next one carried the offset
    if any(original["seq"] < e["seq"] < stop["seq"] and e["t_ms"] > original["t_ms"] and e["client_id"] == client_id
           and (e.get("queue_topic", e["topic"]), e["queue_id"]) == queue for e in ix.by_kind["consume"]):
        return False
    if any(original["seq"] < e["seq"] < stop["seq"] and e["group"] == group for e in ix.by_kind["consumer_start"]) \
            or any(original["seq"] < c["seq"] < stop["seq"] and c["target"] != "broker" for c in ix.by_kind["crash"]):
        return False
    started_ms = max((e["t_ms"] for e in ix.by_kind["consumer_start"] if e["client_id"] == client_id
                      and e["seq"] < original["seq"]), default=None)
    if started_ms is None:
        return False
    if _persist_all_at_or_after(started_ms, original["t_ms"]) <= stop["t_ms"]:
        return False  # a persistAll round after the consume reached the broker before the stop
    persists = [p for p in ix.by_kind["persist"] if p.get("file") == "consumerOffset.json" and p["t_ms"] > stop["t_ms"]]
    for c in ix.broker_crashes:
        if c.get("crash_kind") == "shutdown" or not (stop["seq"] < c["seq"] < again["seq"]):
            continue
        started = max((r["t_ms"] for r in ix.restarts if r["seq"] < c["seq"]), default=0)
        return c["t_ms"] - started <= FIRST_OFFSET_PERSIST_MS and not any(p["seq"] < c["seq"] for p in persists)
    return False


PULL_SUSPEND_MS = 15_000  # DefaultMQPushConsumerImpl.BROKER_SUSPEND_MAX_TIME_MILLIS: a held pull's longest wait
PULL_REFUSED_MS = 100  # a retried pull the broker refused (or could not take) fails within a round trip


def _offset_died_with_its_consumer(ix: _Index, original: dict, again: dict) -> bool:
    """The consumer was killed (kill -9) before its consumed offset left it: a pull carries the in-memory offset
    only when it is built, and persistAll sends it 10 s after the client's start, then every 5 s. The pull held
    at the consume was built with the response that brought the copy (the offset before it); it failed, and every
    pull after it failed at once, 3 s after the one before (pullTimeDelayMillsWhenException): a broker down, or one
    answering SUBSCRIPTION_NOT_EXIST before the group's heartbeat (PullMessageProcessor returns before
    commitOffset). The kill came before the next pull and before the next persistAll round, so the broker kept
    the older offset, and the queue's next owner read the copy again. Narrow: one member (no queue handed over
    with its persist), subscription "*" (no NO_MATCHED_MSG answer re-pulls silently), no later consume of the queue
    by the client (a FOUND answer re-pulls), the first failure within 15 s of the copy's store (the held pull's
    answer at its timeout re-pulls). Explore seed 1110000387 like 990000012, 5.3.3: GroupC-0, started at
    4.153 s, consumed TopicA 0 #22 at 4.502 s; its held pull was cut by the shutdown at 4.664 s, refused at 7.666 s
    and 10.668 s after the restarts at 7.600 s and 10.323 s; the kill at 13.637 s beat the first persistAll
    (14.153 s) and the next pull (13.669 s), and #22 came again at 15.640 s."""
    client_id, group = original["client_id"], original["group"]
    client = client_id.split("@")[0]
    starts = [e for e in ix.by_kind["consumer_start"] if e["group"] == group and e["seq"] < again["seq"]]
    if any(e["client_id"] != client_id or e.get("subscription") != "*" for e in starts):
        return False
    started_ms = max((e["t_ms"] for e in starts if e["seq"] < original["seq"]), default=None)
    crash = next((c for c in ix.by_kind["crash"] if c["target"] == client and original["seq"] < c["seq"]), None)
    if started_ms is None or crash is None or crash.get("crash_kind") != "process" or crash["seq"] > again["seq"]:
        return False
    if crash["t_ms"] >= _persist_all_at_or_after(started_ms, original["t_ms"]):
        return False  # a persistAll round after the consume came before the kill
    queue = (original.get("queue_topic", original["topic"]), original["queue_id"])
    if any(e["client_id"] == client_id and (e.get("queue_topic", e["topic"]), e["queue_id"]) == queue
           and original["seq"] < e["seq"] < crash["seq"] for e in ix.by_kind["consume"]):
        return False
    failed = [(e["t_ms"], e["message"][m.end():]) for e in ix.by_kind["log"]
              if e["logger"] == f"RocketmqClient@{client}" and original["seq"] < e["seq"] < crash["seq"]
              and (m := PULL_EXCEPTION.match(e["message"])) and (m.group(1), int(m.group(2))) == queue]
    stored = [e["t_ms"] for e in ix.by_msg[original["msg_id"]] if e["kind"] == "store" and e["seq"] < original["seq"]
              and (e["topic"], e["queue_id"], e["queue_offset"]) == (*queue, original["queue_offset"])]
    if not failed or not stored or failed[0][0] - stored[-1] >= PULL_SUSPEND_MS:
        return False  # the held pull, built after the copy was stored, may have timed out and gone again
    for (before_ms, _), (t_ms, why) in zip(failed, failed[1:], strict=False):
        if "connection closed" in why or not 0 <= t_ms - before_ms - PULL_RETRY_MS <= PULL_REFUSED_MS:
            return False  # a pull that got through (and was held until a stop cut it), or one not retried at once
    return crash["t_ms"] < failed[-1][0] + PULL_RETRY_MS


def _shutdowns_judged(graceful: list[dict], earlier: list[dict], again: dict) -> list[dict]:
    """The graceful shutdowns a level's repeated delivery is judged by: the first after the unit's latest delivery.
    Its persisted table put the level back at or below the unit; a later shutdown's run never delivered the unit
    (the level was still on its way back to it), so that shutdown has nothing to answer for (explore seed
    1080000045: a resend pending at the first shutdown kept level 3's table at 10 while 11-79 had gone out; the
    second restart came before the level was back at 40, and 40-79 came again after it). A repeat in the run of
    the latest delivery (no shutdown since) is judged by every shutdown since the first delivery, as before."""
    since_latest = [g for g in graceful if earlier[-1]["seq"] < g["seq"] < again["seq"]]
    if since_latest:
        return since_latest[:1]
    return [g for g in graceful if earlier[0]["t_ms"] <= g["t_ms"] <= again["t_ms"]]


def _unit_read_twice_in_one_run(ix: _Index, before: dict, again: dict) -> bool:
    """A level delivered the same copy (its unit in the level's queue) twice with no broker stop between: the
    task's offset only moves forward within a run (a put that failed is retried, so never delivered twice), and
    only a restart reads delayOffset.json again. A consume-queue cut or a store rollback between is left to the
    other checks (the unit may be rebuilt). Timer deliveries name no unit and are not judged here."""
    unit = again.get("schedule_queue_offset")
    if not isinstance(again["level"], int) or unit is None or unit < 0:
        return False
    return not any(before["seq"] < c["seq"] < again["seq"] for c in ix.broker_crashes) and not any(
        before["seq"] < f["seq"] < again["seq"] for f in (*ix.by_kind["cq_truncate"], *ix.by_kind["store_rollback"]))


def _crash_lost_a_repeats_advance(earlier: list[dict], again: dict, delay_cuts: list[dict],
                                  delay_persists: list[int]) -> bool:
    """A level unit delivered again after a restart (a repeat with its own excuse) is a delivery like the first: a
    broker crash (``delay_cuts``) before any delayOffset.json write since that repeat sends the level back to the
    table written before it, and the unit comes once more, however long after its first delivery. The crash
    window was measured from the first delivery only (explore seed 1110000228 like 990000012, 5.3.3 asynchronous
    delivery: a resend pending at the graceful shutdown at 10.903 s kept level 3's table at 16 while 17-29 had
    gone out at 10.5-10.6 s; the restart at 11.403 s put them again at 12.403 s; the crash at 21.403 s, in the
    first consumerOffset.json write 10 s after that start, came before the first delayOffset.json write, so the
    next restart read the table at 16 again and 17-29 came a third time)."""
    if not isinstance(again["level"], int):
        return False
    return any(d["seq"] < c["seq"] < again["seq"] and not any(d["seq"] < p < c["seq"] for p in delay_persists)
               for d in earlier[1:] for c in delay_cuts)


DISTURBANCES = frozenset({"crash", "restart", "fault", "consumer_start"})  # what can move an offset or an owner
DAMAGE = frozenset({"store_rollback", "cq_truncate", "cq_unindexed", "timer_torn_unit"})
_CALM_KINDS = DISTURBANCES | DAMAGE | {"consume"}  # what _copies_consumed_twice_in_calm reads


def _damages_the_store(e: dict) -> bool:
    """A power failure, a rollback or a cut (or unindexed) queue: stale units may hand a record out twice."""
    return e["kind"] in DAMAGE or e.get("crash_kind") == "power"


REBALANCE_SETTLED_MS = 21_000  # every member rebalances within its 20 s round of a change (+ a pull's round trip)


def _copies_consumed_twice_in_calm(ix: _Index, broadcast: set[str], era: str) -> list[dict]:
    """A stored copy consumed successfully twice by its group (its instance, when broadcasting) in a calm run: no
    crash, restart, fault or consumer start between the two consumes or shortly before the first (a rebalance
    settles within every member's 20 s round, after a broker's restart once the clients are back: 4.9.8 waits for
    the 30 s heartbeat), and no store damage before the second (a power failure, a rollback or a cut consume
    queue leaves stale units that hand a record out twice however much later they are read: explore seed
    1100001002). A first consume whose result the client threw away (its ProcessQueue dropped meanwhile) is not
    one. A clustering group's members own disjoint queues and pull on from where they pulled: without this
    check a broken allocation that gave every member every queue passed every invariant."""
    settle_ms = REBALANCE_SETTLED_MS + RESUME_AFTER_BROKER_RESTART_MS.get(era, 0)
    last_seq, last_ms, damaged = -1, None, False
    consumed: dict[tuple, dict] = {}
    out = []
    for e in ix.events:
        if e["kind"] not in _CALM_KINDS:
            continue
        damaged = damaged or _damages_the_store(e)
        if e["kind"] in DISTURBANCES:
            last_seq, last_ms = e["seq"], e["t_ms"]
            continue
        if e["kind"] != "consume" or e["status"] != CONSUME_SUCCESS:
            continue
        group = e["group"] + ("/" + e["client_id"] if e["group"] in broadcast else "")
        key = (group, e["msg_id"], e.get("queue_topic", e["topic"]), e["queue_id"], e["queue_offset"])
        before = consumed.get(key)
        consumed[key] = e
        if (before is None or damaged or before["seq"] < last_seq
                or (last_ms is not None and before["t_ms"] - last_ms <= settle_ms)
                or _result_dropped_with_its_queue(ix, before)):
            continue
        out.append({"msg_id": e["msg_id"], "events": ix.quote(e["msg_id"]),
                    "explanation": f"{e['client_id']} consumed {key[2]} {key[3]} #{key[4]} again at t={e['t_ms']} ms "
                                   f"({before['client_id']} had at t={before['t_ms']} ms) with no crash, restart, "
                                   f"fault or consumer start since {settle_ms // 1000} s before the first and no "
                                   f"store damage: nothing could hand the copy out twice"})
    return out


def check_duplicates(ix: _Index, ctx: RunContext) -> dict:
    """Duplicates are expected after crashes, bounded by the persist windows; a graceful restart makes none."""
    violations = []
    first: dict[tuple, dict] = {}
    broadcast = {g.group for g in ctx.groups if g.model == "BROADCASTING"}
    crash_times = [e["t_ms"] for e in ix.by_kind["crash"] if e.get("crash_kind") != "shutdown"]
    # Config files are not fsynced (before develop #9705): after a power failure the offset files may be
    # empty or old, and any amount of redelivery is RocketMQ's documented behaviour, not a bounded window.
    power_times = [e["t_ms"] for e in ix.power_crashes]
    graceful = [e for e in ix.by_kind["crash"] if e.get("crash_kind") == "shutdown"]
    # A level's redelivery comes from delayOffset.json as last written: a crash (or a shutdown whose persist
    # the plan crashed) before any persist after the first delivery excuses it, however long ago that was
    # (the first persist after a start waits 10 s, so quick restarts may never write the file).
    delay_persists = [p["seq"] for p in ix.by_kind["persist"] if p.get("file") == "delayOffset.json"]

    def crashed_at(file: str) -> set[int]:
        """When the plan crashed a shutdown at ``file``'s persist: a crash for what it had not written yet."""
        return {f["t_ms"] for f in ix.by_kind["fault"]
                if f.get("site") == "persist." + file and f.get("action") == "crash during shutdown"}

    failed_shutdowns = crashed_at("delayOffset.json")
    delay_cuts = [c for c in ix.by_kind["crash"] if c.get("target") == "broker" and (
        c.get("crash_kind") != "shutdown" or c["t_ms"] in failed_shutdowns)]
    # a shutdown the plan crashed is a crash: what it had not persisted yet is lost
    graceful = [g for g in graceful if g["t_ms"] not in failed_shutdowns]
    shutdown_times = [g["t_ms"] for g in ix.by_kind["crash"] if g.get("crash_kind") == "shutdown"]
    crash_times = sorted(crash_times + [t for t in shutdown_times if t in failed_shutdowns])
    # A shutdown whose consumerOffset.json persist the plan crashed loses the consumer offsets committed since the
    # last write, as a crash does (explore seed 930000445); it wrote the delay offsets before (both eras), so it is a
    # crash for consumes only.
    offsets_lost = crashed_at("consumerOffset.json") - failed_shutdowns
    consume_crash_times = sorted(crash_times + [t for t in shutdown_times if t in offsets_lost])
    # A level's repeat comes from the broker's delayOffset.json: only a broker crash opens its window (a consumer's
    # crash near a level delivery explains no repeat of it).
    delay_crash_times = sorted(c["t_ms"] for c in delay_cuts)

    def unpersisted_delay_offset(original: dict, again: dict) -> bool:
        return original.get("level") != "timer" and any(
            original["seq"] < c["seq"] < again["seq"] and not any(original["seq"] < p < c["seq"] for p in delay_persists)
            for c in delay_cuts)

    redelivered = _copies_of_repeated_deliveries(ix)
    earlier: dict[tuple, list[dict]] = {}  # key -> its events so far
    for e in ix.events:
        if e["kind"] == "consume" and e["status"] == CONSUME_SUCCESS:
            group = e["group"] + ("/" + e["client_id"] if e["group"] in broadcast else "")
            key = ("consume", group, e["msg_id"])
            copy = (e.get("queue_topic", e["topic"]), e["queue_id"], e["queue_offset"])
            if copy in redelivered:
                key += copy  # the repeated delivery that stored this copy is judged; this copy's own repeats here
        elif e["kind"] == "deliver":
            key = ("deliver", e["level"], e.get("schedule_queue_offset"), e["msg_id"])
        else:
            continue
        if key not in first:
            first[key] = e
            earlier[key] = [e]
            continue
        original = first[key]
        if key[0] == "deliver" and _unit_read_twice_in_one_run(ix, earlier[key][-1], e):
            violations.append({"msg_id": e["msg_id"], "events": ix.quote(e["msg_id"]),
                               "explanation": f"delivered from level {e['level']} unit {e['schedule_queue_offset']} "
                                              f"again at t={e['t_ms']} ms with no broker stop since its delivery at "
                                              f"t={earlier[key][-1]['t_ms']} ms: a level reads a unit once per run"})
            earlier[key].append(e)
            continue
        window = [t for t in (consume_crash_times if key[0] == "consume" else delay_crash_times)
                  if original["t_ms"] <= t <= e["t_ms"]]
        explained = any(t - original["t_ms"] <= ctx.duplicate_window_ms for t in window) or any(
            original["t_ms"] <= t <= e["t_ms"] for t in power_times) or (
            key[0] == "consume" and e["reconsume_times"] != original["reconsume_times"] and _repeat_after_a_crash(
                ix, [c for c in ix.by_msg[e["msg_id"]] if c["kind"] == "consume" and c["group"] == e["group"]], e)) or (
            key[0] == "deliver" and (unpersisted_delay_offset(original, e)
                                      or _crash_lost_a_repeats_advance(earlier[key], e, delay_cuts, delay_persists)
                                      or _timer_repeat_lost_by_a_crash(earlier[key], e, delay_crash_times, ctx)
                                      or _direct_timer_put_replayed(ix, earlier[key], e)
                                      or _another_timer_copy_from_a_crash(ix, earlier[key], e, ctx))) or (
            key[0] == "consume" and _consumed_a_replayed_timer_copy(ix.by_msg[e["msg_id"]], original, e)) or (
            key[0] == "consume" and _consume_offset_never_persisted(ix, original, e)) or (
            key[0] == "consume" and _consumed_while_the_broker_was_down(ix, original, e)) or (
            key[0] == "consume" and _offset_died_with_its_consumer(ix, original, e)) or (
            key[0] == "consume" and _offset_held_past_a_stop(ix, original, e))
        if key[0] == "deliver" and not window and not explained and any(
                not _slot_unfinished(original, g, ctx) and not _behind_an_unfinished_async_head(ix, e, g, ctx)
                for g in _shutdowns_judged(graceful, earlier[key], e)):
            violations.append({"msg_id": e["msg_id"], "events": ix.quote(e["msg_id"]),
                               "explanation": f"delivered from level {e['level']} again after a graceful restart "
                                              f"(first at t={original['t_ms']} ms): the shutdown did not persist "
                                              + ("a read time past its finished slot" if e["level"] == "timer"
                                                 else "the delay offsets")})
        elif window and not explained:
            violations.append({"msg_id": e["msg_id"], "events": ix.quote(e["msg_id"]),
                               "explanation": f"{key[0]} repeated at t={e['t_ms']} ms although the first one "
                                              f"(t={original['t_ms']} ms) was more than {ctx.duplicate_window_ms} ms "
                                              f"before the crash: outside every persist window"})
        earlier[key].append(e)
    violations += _copies_consumed_twice_in_calm(ix, broadcast, ctx.era)
    verdict = _verdict(len(first), violations)
    verdict["duplicates"] = duplicate_consumes(ix.events)  # the one count (model.stats), as in summary.json
    return verdict


_FAULT_KINDS = ("fault", "crash", "store_rollback", "cq_truncate")


def check_no_unexpected_errors(ix: _Index, ctx: RunContext) -> dict:
    """Every ERROR line (RocketMQ's "should not happen", a caught exception logged as an error) names the
    injected fault that caused it, and that fault happened before it; anything else is a store bug."""
    violations = []
    errors = [e for e in ix.by_kind["log"] if e["level"] == "ERROR"]
    first_fault = next((e["seq"] for e in ix.events if e["kind"] in _FAULT_KINDS), None)
    for e in errors:
        site = e.get("fault_site")
        if site and first_fault is not None and first_fault < e["seq"]:
            continue
        why = (f"it names the fault site {site!r}, but no fault happened before it" if site
               else "no injected fault explains it")
        violations.append({"msg_id": None, "seq": e["seq"], "events": [e],
                           "explanation": f"{e['logger']} logged an ERROR at t={e['t_ms']} ms and {why}: "
                                          f"{e['message'][:300]}"})
    return _verdict(len(errors), violations)


CHECKS = {
    "no_loss": check_no_loss,
    "at_least_once_redelivery": check_at_least_once_redelivery,
    "no_early_delivery": check_no_early_delivery,
    "per_level_order": check_per_level_order,
    "dlq_after_max_retries": check_dlq_after_max_retries,
    "retry_schedule": check_retry_schedule,
    "bounded_lateness": check_bounded_lateness,
    "duplicates": check_duplicates,
    "no_unexpected_errors": check_no_unexpected_errors,
}


# --- vacuity: what each invariant should have checked ---------------------------------------------------------
def _unknown_groups(ix: _Index, ctx: RunContext) -> str | None:
    known = {g.group for g in ctx.groups}
    unknown = sorted({e["group"] for kind in ("consume", "send_back", "dlq") for e in ix.by_kind[kind]} - known)
    if unknown:
        return f"group(s) {', '.join(unknown)} consumed messages but no consumer_start says how they subscribe"
    return None


def _due_copies(ix: _Index, ctx: RunContext, since_ms: int = -1) -> list[dict]:
    """Scheduled copies (delay level, retry, timer) due at or after ``since_ms`` and before the end of the drain
    by more than the polling bound: each should have been delivered."""
    not_due = ix.pending(ctx)
    gone = ix.gone_for_good()
    gone_ms = gone[0]["t_ms"] if gone is not None else None  # no broker delivers after it went for good
    out = []
    for e in ix.by_kind["store"]:
        due = due_mono_of_store(e) if is_schedule_store(e) else None
        if due is not None and due >= since_ms and e["msg_id"] not in not_due and (gone_ms is None or due < gone_ms):
            out.append(e)
    return out


def _vacuous_no_loss(ix: _Index, ctx: RunContext, verdict: dict) -> str | None:
    """Should check every SEND_OK message for every group whose subscription (topic and tags, from the history)
    takes it. Vacuous when a group consumed a SEND_OK message it was not checked for (its subscription or the
    message's tags misread), or when nothing was checked although messages were sent to a topic a group consumes
    (all pending counts as nothing checked: the run could not tell a loss)."""
    reason = _unknown_groups(ix, ctx)
    if reason:
        return reason
    sends = {e["msg_id"]: e for e in ix.sent_ok}
    groups = defaultdict(list)
    for g in ctx.groups:
        groups[g.group].append(g)
    for c in ix.by_kind["consume"]:
        send = sends.get(c["msg_id"])
        if c["status"] == CONSUME_SUCCESS and send is not None and not any(
                _subscribed(g, send) for g in groups[c["group"]]):
            return f"{c['group']} consumed {c['msg_id']} (tags {send.get('tags')!r}) but its subscription was read " \
                   f"as not taking it"
    topics = {g.topic for g in ctx.groups}
    on_consumed_topics = sum(1 for e in ix.sent_ok if e["topic"] in topics)
    if verdict["checked"] == 0 and on_consumed_topics:
        return f"nothing checked although {on_consumed_topics} message(s) were sent with SEND_OK to topics with consumers"
    return None


def _vacuous_at_least_once(ix: _Index, ctx: RunContext, verdict: dict) -> str | None:
    """Should check every failed consume attempt of a clustering group (and every success its consumer crashed
    before committing). Vacuous when nothing was checked although a non-broadcasting group failed an attempt."""
    reason = _unknown_groups(ix, ctx)
    if reason or verdict["checked"]:
        return reason
    broadcast = {g.group for g in ctx.groups if g.model == "BROADCASTING"}
    failed = [e for e in ix.by_kind["consume"] if e["status"] != CONSUME_SUCCESS and e["group"] not in broadcast]
    if failed:
        return f"nothing checked although {len(failed)} consume attempt(s) failed"
    return None


def _vacuous_no_early_delivery(ix: _Index, ctx: RunContext, verdict: dict) -> str | None:
    """Should check every delivery of a scheduled copy. Vacuous when there was none although some scheduled copy
    was due before the end of the drain (not pending)."""
    if verdict["checked"]:
        return None
    due = _due_copies(ix, ctx)
    if due:
        return f"no delivery checked although {len(due)} scheduled cop(ies) were due before the end"
    return None


def _vacuous_per_level_order(ix: _Index, ctx: RunContext, verdict: dict) -> str | None:
    """Should check every first delivery from a delay level's queue. Vacuous when none was checked although
    delay-level copies were delivered or due before the end of the drain."""
    if verdict["checked"]:
        return None
    level_deliveries = [d for d in ix.by_kind["deliver"] if d["level"] != "timer"]
    due = [e for e in _due_copies(ix, ctx) if e["topic"] != TIMER_TOPIC]
    if level_deliveries or due:
        return (f"nothing checked although {len(level_deliveries)} delay-level deliveries happened and "
                f"{len(due)} delay-level cop(ies) were due")
    return None


def _vacuous_dlq_after_max_retries(ix: _Index, ctx: RunContext, verdict: dict) -> str | None:
    """Should check every (message, clustering group) with a consume or a DLQ copy. Vacuous when nothing was
    checked although a non-broadcasting group consumed or dead-lettered something."""
    reason = _unknown_groups(ix, ctx)
    if reason or verdict["checked"]:
        return reason
    broadcast = {g.group for g in ctx.groups if g.model == "BROADCASTING"}
    seen = [e for kind in ("consume", "dlq") for e in ix.by_kind[kind] if e["group"] not in broadcast]
    if seen:
        return f"nothing checked although {len(seen)} consume or DLQ event(s) of clustering groups exist"
    return None


def _vacuous_retry_schedule(ix: _Index, ctx: RunContext, verdict: dict) -> str | None:
    """Should check the first consume of every retry copy (reconsume_times k >= 1) after its successful
    send-back, unless a backwards clock step lies in between. Vacuous when nothing was checked although some
    message was sent back successfully and later consumed as the next retry, with no backwards clock step."""
    if verdict["checked"] or any(e.get("by_ms", 0) < 0 for e in ix.clock_steps):
        return None
    for msg_id, events in ix.by_msg.items():
        backs = [b for b in events if b["kind"] == "send_back" and b["result"] == "ok"]
        retried = [c for c in events if c["kind"] == "consume" and any(
            b["seq"] < c["seq"] and (b["group"], b["reconsume_times"] + 1) == (c["group"], c["reconsume_times"])
            for b in backs) and not _from_a_preloaded_retry(ix, msg_id, c)]
        if retried:
            return f"nothing checked although {msg_id} was sent back and consumed again as a retry"
    return None


def _vacuous_bounded_lateness(ix: _Index, ctx: RunContext, verdict: dict) -> str | None:
    """Should check every scheduled copy due in the settled drain (after the last fault's settling time) and
    before its end. Vacuous when nothing was checked although such copies exist."""
    if verdict["checked"]:
        return None
    # a copy a fault destroyed is excused by the check (nothing is due), so it is not one it should have checked
    due = [e for e in _due_copies(ix, ctx, since_ms=_settled_ms(ix, ctx))
           if not ix.lost_to_a_fault(e["msg_id"], after_seq=e["seq"] - 1)]
    if due:
        return f"nothing checked although {len(due)} scheduled cop(ies) were due in the settled drain"
    return None


def _vacuous_duplicates(ix: _Index, ctx: RunContext, verdict: dict) -> str | None:
    """Should check every successful consume and every delivery. Vacuous when nothing was checked although
    copies were stored in queues a group consumes (its topic or its %RETRY% topic) or scheduled copies were due
    before the end (a run whose copies all waited for a broker that never came back had nothing to see). A copy
    every consume of which failed is no such evidence: with its send-backs lost (explore seed 2802384112:
    3 900-byte bodies in 4 096-byte commit-log files, every retry copy unstored) there was no success and no
    delivery to see."""
    if verdict["checked"]:
        return None
    topics = {g.topic for g in ctx.groups} | {RETRY_PREFIX + g.group for g in ctx.groups}
    succeeded = {e["msg_id"] for e in ix.by_kind["consume"] if e["status"] == CONSUME_SUCCESS}
    only_failed = {e["msg_id"] for e in ix.by_kind["consume"]} - succeeded
    stored = any(e["topic"] in topics and e["msg_id"] not in only_failed for e in ix.by_kind["store"])
    if stored or _due_copies(ix, ctx):
        return "nothing checked although copies were stored in queues with consumers or scheduled copies were due"
    return None


# name -> what its ``checked`` counts (reported in each verdict as ``checks``)
CHECKED_UNITS = {
    "no_loss": "SEND_OK messages x the groups subscribed to them (topic and tags), not pending",
    "at_least_once_redelivery": "failed attempts and uncommitted successes before a consumer crash (clustering)",
    "no_early_delivery": "deliveries of scheduled copies",
    "per_level_order": "first deliveries from the delay levels' queues",
    "dlq_after_max_retries": "messages x clustering groups that consumed or dead-lettered them",
    "retry_schedule": "first consumes of retry copies after a successful send-back",
    "bounded_lateness": "scheduled copies due in the settled drain (and, run --from-store, the store's pending "
                        "scheduled copies due before the end)",
    "duplicates": "distinct successful consumes and deliveries",
}

# name -> rule(ix, ctx, verdict) -> the reason it is vacuous, or None; an invariant without a rule is never vacuous
VACUITY = {
    "no_loss": _vacuous_no_loss,
    "at_least_once_redelivery": _vacuous_at_least_once,
    "no_early_delivery": _vacuous_no_early_delivery,
    "per_level_order": _vacuous_per_level_order,
    "dlq_after_max_retries": _vacuous_dlq_after_max_retries,
    "retry_schedule": _vacuous_retry_schedule,
    "bounded_lateness": _vacuous_bounded_lateness,
    "duplicates": _vacuous_duplicates,
}


def check_events(events: list[dict], ctx: RunContext, only: list[str] | None = None) -> dict:
    """Every invariant (or those in ``only``), each verdict with ``vacuous`` (and ``vacuous_reason``) set."""
    ix = _Index(events)
    ix.timer_gives_up = not ctx.timer_retry_until_success
    ix.async_table_runs_ahead = ctx.schedule_async_deliver and not ctx.era.startswith("4.")
    ix.level_retries_a_broken_unit = ctx.era.startswith("4.")
    ix.timer_roll_window_slots, ix.timer_precision_ms = ctx.timer_roll_window_slots, ctx.timer_precision_ms
    ix.reput_from_queues = ctx.era.startswith("4.")
    ix.cq_units_per_file = ctx.cq_units_per_file
    out = {}
    for name, fn in CHECKS.items():
        if only is not None and name not in only:
            continue
        verdict = fn(ix, ctx)
        rule = VACUITY.get(name)
        reason = rule(ix, ctx, verdict) if rule is not None else None
        if name in CHECKED_UNITS:
            verdict["checks"] = CHECKED_UNITS[name]
        verdict["vacuous"] = reason is not None
        if reason is not None:
            verdict["vacuous_reason"] = reason
        out[name] = verdict
    return out


def overall_verdict(invariants: dict) -> str:
    """``violated`` if any invariant fails, else ``vacuous`` if any checked nothing it should have (or none was
    checked at all), else ``holds``."""
    if any(not v["holds"] for v in invariants.values()):
        return "violated"
    if not invariants or any(v.get("vacuous") for v in invariants.values()):
        return "vacuous"
    return "holds"
