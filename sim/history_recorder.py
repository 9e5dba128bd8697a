"""The one writer of a run's history: every event of ``history.jsonl`` is recorded here.

The schema is declared in ``model/history.py`` and checked on every record (``sim/history.py``); this
module decides *when* and *from what* an event is recorded: the broker's listeners (``on_*``), the
clients' events, and the world's own events (faults, crashes, restarts, sends). Nothing else in
``sim/`` appends to the history.

Causes before effects. A client's request (a producer's ``send``, a consumer's ``send_back``) and a
due message's ``deliver`` are answered before the sim knows their outcome, while what they cause (the
``store`` of a copy, a ``dlq``, an injected ``fault`` and the ``log`` lines it explains) is recorded
during the call. So the cause is recorded where the request reached the broker: the network opens a
mark for its client when the request leaves (``open_request``), and the cause event, once answered, is
inserted at that mark (``record_cause``); a ``deliver`` goes just before the ``store`` its put made.
Everything stays within one scheduler step (one virtual millisecond); marks never outlive it.
"""

from __future__ import annotations

from collections.abc import Callable

from store.log import DISK_DAMAGE, INFO
from store.message import PROPERTY_DELAY_TIME_LEVEL, PROPERTY_TIMER_OUT_MS
from store.topic_config import TIMER_TOPIC
from store.topics import DLQ_GROUP_TOPIC_PREFIX, RMQ_SYS_SCHEDULE_TOPIC

from .history import History

DLQ_PREFIX = DLQ_GROUP_TOPIC_PREFIX


class HistoryRecorder:
    """Records events at the world's virtual time; ``faults`` (SimFaults) names the fault behind a log line."""

    def __init__(self, history: History, now_mono: Callable[[], int]) -> None:
        self.history = history
        self.now_mono = now_mono
        self.faults = None  # set by the world once its SimFaults exists (they record through this recorder)
        self.due_of: dict[str, int] = {}  # msg_id -> due time of its scheduled copy (the send event's deliver_ms)
        self._schedule = None  # the current broker's ScheduleMessageService (its delay table gives due_ms)
        self._marks: dict[str, int] = {}  # client owner -> where its request in flight reached the broker
        self._last_store: tuple[str, int] | None = None  # (msg_id, position) of the latest store event
        # Called before every record or mark: deferred rounds that came before run first (sim/scheduler.py).
        self.before_write: Callable[[], None] = lambda: None

    def record(self, kind: str, **fields) -> dict:
        self.before_write()
        return self.history.record(self.now_mono(), kind, **fields)

    def on_preloaded(self, event: dict) -> None:
        """run --from-store: one copy the store held at the start (sim/from_store.py decides its fields)."""
        self.record("preloaded", **event)

    # --- causes before effects ---------------------------------------------------------------------------
    def open_request(self, owner: str) -> None:
        """``owner``'s request leaves for the broker: its cause event, recorded later, goes here. A request
        retried within the same operation (a producer's retries) keeps the first mark."""
        if owner not in self._marks:
            self.before_write()
            self._marks[owner] = len(self.history.events)

    def record_cause(self, owner: str, kind: str, **fields) -> dict:
        """Record ``owner``'s answered request at its mark, before what it caused (or here, without one)."""
        mark = self._marks.pop(owner, None)
        if mark is None:
            return self.record(kind, **fields)
        self.before_write()
        return self.history.insert(mark, self.now_mono(), kind, **fields)

    def end_step(self) -> None:
        """A scheduler step is over: a mark left open (a request whose cause was never recorded) is dropped."""
        if self._marks:
            self._marks.clear()

    # --- wiring to a broker ------------------------------------------------------------------------------
    def attach_recovery(self, broker) -> None:
        """The listeners that recovery (``initialize``) may already call."""
        broker.message_store.unindexed_listeners.append(self.on_unindexed)
        timer = broker.timer_message_store
        if timer is not None:
            timer.torn_unit_listeners.append(self.on_torn_timer_unit)

    def attach(self, broker) -> None:
        """The listeners of a running broker: puts, deliveries of due messages, persisted files."""
        self._schedule = broker.schedule_message_service
        timer = broker.timer_message_store
        if timer is not None:
            timer.deliver_listeners.append(self.on_deliver)
        broker.message_store.put_listeners.append(self.on_store)
        broker.schedule_message_service.deliver_listeners.append(self.on_deliver)
        for manager in (broker.consumer_offset_manager, broker.schedule_message_service,
                        broker.topic_config_manager, broker.subscription_group_manager):
            manager.persist_listeners.append(self.on_persist)

    # --- the broker's listeners --------------------------------------------------------------------------
    def on_log(self, level: str, logger: str, message: str, fault_site: str | None, caught: bool) -> None:
        """A line without a cause of its own is put down to a fault site that fired in the same step; a caught
        exception is not (it names its fault, or none caused it)."""
        if level == INFO:
            return
        faults = self.faults
        if fault_site == DISK_DAMAGE:  # inconsistent files: only an injected loss of data explains them
            fault_site = faults.damage_site or (None if caught else faults.fired)
        elif fault_site is None and not caught:
            fault_site = faults.fired
        self.record("log", level=level, logger=logger, message=message, fault_site=fault_site)

    def on_store(self, msg, result) -> None:
        a = result.append
        if not a.stored:  # PUT_OK for a record no commit-log file can hold: RocketMQ's loss, shown as such
            self.record("unstored", msg_id=msg.uniq_key, topic=a.topic, queue_id=a.queue_id, phy_offset=a.wrote_offset,
                        reconsume_times=msg.reconsume_times, broker_ms=a.store_timestamp)
            self._last_store = (msg.uniq_key, len(self.history.events) - 1)
            return
        timer_out = msg.properties.get(PROPERTY_TIMER_OUT_MS) if a.topic == TIMER_TOPIC else None
        extra = {} if timer_out is None else {"timer_out_ms": int(timer_out)}  # its wheel slot
        if a.topic == RMQ_SYS_SCHEDULE_TOPIC:
            level = int(msg.properties.get(PROPERTY_DELAY_TIME_LEVEL, "0"))
            extra["due_ms"] = a.store_timestamp + self._schedule.delay_level_table_ms.get(level, 1000)
            # due_ms: what pending and vacuity are judged by (model/stats.py)
        self.record("store", msg_id=msg.uniq_key, topic=a.topic, queue_id=a.queue_id, queue_offset=a.logics_offset,
                    phy_offset=a.wrote_offset, size=a.wrote_bytes, reconsume_times=msg.reconsume_times,
                    broker_ms=a.store_timestamp, **extra)
        self._last_store = (msg.uniq_key, len(self.history.events) - 1)
        if a.topic == RMQ_SYS_SCHEDULE_TOPIC:
            self.due_of[msg.uniq_key] = extra["due_ms"]
        elif timer_out is not None:
            self.due_of[msg.uniq_key] = int(timer_out)
        elif a.topic.startswith(DLQ_PREFIX):
            self.record("dlq", group=a.topic[len(DLQ_PREFIX):], msg_id=msg.uniq_key,
                        reconsume_times=msg.reconsume_times)

    def on_unindexed(self, req, unit) -> None:
        self.record("cq_unindexed", msg_id=req.uniq_key, topic=req.topic, queue_id=req.queue_id,
                    queue_offset=req.consume_queue_offset, phy_offset=req.commit_log_offset,
                    unit_phy_offset=None if unit is None else unit[0])

    def on_torn_timer_unit(self, slot_ms: int, timer_log_pos: int) -> None:
        self.record("timer_torn_unit", slot_ms=slot_ms, timer_log_pos=timer_log_pos)

    def on_deliver(self, inner, level, due_ms: int, result, schedule_queue_offset: int = -1,
                   slot_ms: int | None = None, resend: bool = False) -> None:
        if not result.is_ok:
            return
        extra = {} if slot_ms is None else {"slot_ms": slot_ms}  # timer: the slot whose chain led to it
        if resend:  # HandlePutResultTask's resend of a failed asynchronous put: later messages may be ahead of it
            extra["resend"] = True
        fields = dict(msg_id=inner.uniq_key, level=level, due_ms=due_ms, topic=inner.topic, queue_id=inner.queue_id,
                      broker_ms=result.append.store_timestamp, schedule_queue_offset=schedule_queue_offset, **extra)
        if (at := self._store_just_made(inner.uniq_key)) is not None:
            self.history.insert(at, self.now_mono(), "deliver", **fields)  # before the store (and dlq) it caused
        else:
            self.record("deliver", **fields)

    def _store_just_made(self, msg_id: str) -> int | None:
        """The position of the store (or unstored) event of ``msg_id`` recorded by the put of this very step."""
        last = self._last_store
        events = self.history.events
        if last is None or last[0] != msg_id or last[1] >= len(events):
            return None
        event = events[last[1]]
        if event["kind"] not in ("store", "unstored") or event.get("msg_id") != msg_id or \
                event["t_ms"] != self.now_mono() - self.history.start_mono_ms:
            return None
        return last[1]

    def on_persist(self, file_name: str, rounds_ms: range | None = None) -> None:
        """One persist now, or a run of overwritten rounds at their own (monotonic) times."""
        if rounds_ms is None:
            self.record("persist", file=file_name)
        else:
            self.before_write()
            self.history.record_at(rounds_ms, "persist", file=file_name)

    # --- the clients -------------------------------------------------------------------------------------
    def on_client_event(self, owner: str, kind: str, fields: dict) -> None:
        """A push consumer's own event (consume, send_back, offset_commit, local_retry_dropped); a send_back
        goes where its request reached the broker."""
        if kind == "send_back":
            self.record_cause(owner, kind, **fields)
        else:
            self.record(kind, **fields)

    def on_send(self, owner: str, msg_id: str, topic: str, queue_id: int, delay_level: int, timer_delay_ms: int | None,
                status: str, tags: str | None) -> None:
        """A producer's send, answered; ``deliver_ms`` is the due time of the copy it scheduled (if any)."""
        self.record_cause(owner, "send", msg_id=msg_id, topic=topic, queue_id=queue_id, delay_level=delay_level,
                    timer_delay_ms=timer_delay_ms, deliver_ms=self.due_of.pop(msg_id, None), status=status, tags=tags)
