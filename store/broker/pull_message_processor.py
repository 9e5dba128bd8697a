"""PullMessageProcessor and PullRequestHoldService (long polling), 4.9.8 semantics (2.2, 5.1)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ..client.api import (
    MQBrokerException,
    PullCallback,
    PullMessageRequest,
    PullResult,
    PullStatus,
    ResponseCode,
)
from ..consumer_offset import ConsumerOffsetManager
from ..log import StoreLog, as_log
from ..message import tags_string_to_tags_code
from ..message_store import DefaultMessageStore, GetMessageStatus
from ..probes import NO_PROBES
from ..subscription_group import SubscriptionGroupManager
from ..topic_config import TopicConfigManager, is_readable
from .consumer_manager import ConsumerManager

BROKER_SUSPEND_MAX_TIME_MS = 15_000  # the client's brokerSuspendMaxTimeMillis
HOLD_CHECK_INTERVAL_MS = 5000  # PullRequestHoldService with long polling

_STATUS_TO_CODE = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}
_CODE_TO_PULL_STATUS = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@lru_cache(maxsize=256)
def tags_filter_of(sub_expression: str) -> Callable[[int], bool] | None:
    """The broker's tag-hash filter for ``"TagA || TagB"``; None for ``*``. Cached: every pull names one."""
    expr = sub_expression.strip()
    if not expr or expr == "*":
        return None
    codes = {tags_string_to_tags_code(tag.strip()) for tag in expr.split("||") if tag.strip()}
    return codes.__contains__


@dataclass(slots=True)
class _HeldRequest:
    request: PullMessageRequest
    callback: PullCallback
    suspend_mono_ms: int


class PullMessageProcessor:
    probes = NO_PROBES  # the run's ProbeCollector when the world attaches one

    def __init__(
        self,
        store: DefaultMessageStore,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        offsets: ConsumerOffsetManager,
        consumers: ConsumerManager,
        *,
        client_host: str = "127.0.0.1",
        overflow_badly_to_min: bool = False,
        log: StoreLog | None = None,
    ) -> None:
        self.store = store
        self.topics = topics
        self.groups = groups
        self.offsets = offsets
        self.consumers = consumers
        self.log = as_log(log, "PullMessageProcessor")
        self.overflow_badly_to_min = overflow_badly_to_min  # <= 4.9.3 (#4215)
        self.client_host = client_host
        self.held: dict[tuple[str, int], list[_HeldRequest]] = {}
        self.clock = store.clock

    def process(self, request: PullMessageRequest, callback: PullCallback, allow_suspend: bool = True) -> None:
        """Answer now through ``callback``, or hold the request until a message arrives (long polling)."""
        try:
            code, result = self.pull(request)
        except MQBrokerException as error:
            if error.code == ResponseCode.SUBSCRIPTION_NOT_EXIST:
                self.log.warn(error.remark)  # here, not in ``pull``: a driver's read-only look logs nothing
            callback(error)
            return
        if code == ResponseCode.PULL_NOT_FOUND and allow_suspend and request.suspend:
            key = (request.topic, request.queue_id)
            self.held.setdefault(key, []).append(_HeldRequest(request, callback, self.clock.monotonic_ms()))
        else:
            callback(result)
        if allow_suspend and request.commit_offset > 0:
            self.offsets.commit_offset(self.client_host, request.consumer_group, request.topic,
                                       request.queue_id, request.commit_offset)

    def pull(self, request: PullMessageRequest) -> tuple[int, PullResult]:
        """The answer to ``request`` as of now, without holding it or committing its offset (a read only)."""
        sgc = self.groups.find_subscription_group_config(request.consumer_group)
        if sgc is None:
            raise MQBrokerException(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                    f"subscription group [{request.consumer_group}] does not exist")
        if not sgc.consume_enable:
            raise MQBrokerException(ResponseCode.NO_PERMISSION, "subscription group no permission")
        tc = self.topics.select_topic_config(request.topic)
        if tc is None:
            raise MQBrokerException(ResponseCode.TOPIC_NOT_EXIST, f"topic[{request.topic}] not exist")
        if not is_readable(tc.perm):
            raise MQBrokerException(ResponseCode.NO_PERMISSION, f"the topic[{request.topic}] pulling is forbidden")
        if request.queue_id < 0 or request.queue_id >= tc.read_queue_nums:
            raise MQBrokerException(ResponseCode.SYSTEM_ERROR, f"queueId[{request.queue_id}] is illegal")
        # The client does not post its subscription with a pull (postSubscriptionWhenPull is false), so the broker
        # judges the pull by the group's heartbeats: a restarted broker knows no group until its clients' next
        # heartbeat (every 30 s; 5.x clients send one as soon as they reconnect). Both tags.
        info = self.consumers.groups.get(request.consumer_group)
        if info is None:
            raise MQBrokerException(ResponseCode.SUBSCRIPTION_NOT_EXIST,
                                    f"the consumer's group info not exist, group: {request.consumer_group}")
        if request.topic not in info.topics:
            raise MQBrokerException(ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's subscription not exist, "
                                    f"group: {request.consumer_group}, topic:{request.topic}")
        got = self.store.get_message(request.consumer_group, request.topic, request.queue_id,
                                     request.queue_offset, request.max_msg_nums,
                                     tags_filter_of(request.sub_expression))
        if got.status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
            code = ResponseCode.PULL_OFFSET_MOVED if request.queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
        else:
            code = _STATUS_TO_CODE[got.status]
        next_begin = got.next_begin_offset
        if code == ResponseCode.PULL_OFFSET_MOVED:
            self.probes.probe("broker.pull_offset_moved")
        if got.status == GetMessageStatus.OFFSET_OVERFLOW_BADLY and self.overflow_badly_to_min and got.min_offset == 0:
            next_begin = 0  # <= 4.9.3 (#4215): the whole queue is consumed again
        return code, PullResult(_CODE_TO_PULL_STATUS[code], next_begin, got.min_offset, got.max_offset,
                                got.messages if code == ResponseCode.SUCCESS else [])

    # --- long polling ----------------------------------------------------------------------
    def notify_message_arriving(self, topic: str, queue_id: int, max_offset: int) -> None:
        """Wake the held pulls of this queue that now have something to read (or have timed out)."""
        waiting = self.held.get((topic, queue_id))
        if not waiting:
            return
        still: list[_HeldRequest] = []
        woken: list[_HeldRequest] = []
        now_mono_ms = self.clock.monotonic_ms()
        for held in waiting:
            timed_out = now_mono_ms >= held.suspend_mono_ms + BROKER_SUSPEND_MAX_TIME_MS
            (woken if max_offset > held.request.queue_offset or timed_out else still).append(held)
        if still:
            self.held[(topic, queue_id)] = still
        else:
            del self.held[(topic, queue_id)]
        for held in woken:
            self.process(held.request, held.callback, allow_suspend=False)

    def drop_held(self) -> list[_HeldRequest]:
        """A crash or shutdown: the held requests are never answered by this broker."""
        dropped = [h for key in sorted(self.held) for h in self.held[key]]
        self.held.clear()
        return dropped


class PullRequestHoldService:
    """Every 5 s re-check every held pull (new messages or the 15 s suspend timeout)."""

    name = "pull-request-hold"
    WAKE_FLOOR = "at_mono_ms"  # every wake-up it names is at or after it (see PeriodicService.WAKE_FLOOR)

    def __init__(self, processor: PullMessageProcessor, mono_ms: int) -> None:
        self.processor = processor
        self.at_mono_ms = mono_ms + HOLD_CHECK_INTERVAL_MS
        # A driver may sleep through checks that provably wake nothing: with ``idle_skip`` the next wake-up is
        # the first check at which a held pull has a message to read or has timed out (arrivals notify at once).
        self.idle_skip = False
        # A driver may repeat idle long polls in place: ``repeat_idle(mono_ms, due)`` hears every held pull this
        # check would answer when all of them merely timed out, and returns when each would be suspended again
        # (answered "no new message", pulled again, nothing else happening meanwhile), or None: answer them.
        self.repeat_idle: Callable[[int, list[_HeldRequest]], int | None] | None = None

    def next_wakeup_ms(self) -> int | None:
        processor = self.processor
        if not processor.held:
            return None
        now_mono_ms = processor.clock.monotonic_ms()
        while self.at_mono_ms < now_mono_ms:  # keep the 5 s grid across idle stretches
            self.at_mono_ms += HOLD_CHECK_INTERVAL_MS
        if not self.idle_skip:
            return self.at_mono_ms
        store = processor.store
        due_ms = None
        for (topic, queue_id), waiting in processor.held.items():
            max_offset = store.get_max_offset_in_queue(topic, queue_id)
            for held in waiting:
                if max_offset > held.request.queue_offset:
                    return self.at_mono_ms
                timeout_ms = held.suspend_mono_ms + BROKER_SUSPEND_MAX_TIME_MS
                if due_ms is None or timeout_ms < due_ms:
                    due_ms = timeout_ms
        if due_ms <= self.at_mono_ms:
            return self.at_mono_ms
        return self.at_mono_ms + -(-(due_ms - self.at_mono_ms) // HOLD_CHECK_INTERVAL_MS) * HOLD_CHECK_INTERVAL_MS

    def step(self, mono_ms: int) -> None:
        if mono_ms < self.at_mono_ms:
            return
        self.at_mono_ms = mono_ms + HOLD_CHECK_INTERVAL_MS
        processor = self.processor
        store = processor.store
        keys = sorted(processor.held)
        if self.repeat_idle is not None and self._repeated_in_place(mono_ms, keys):
            return
        for topic, queue_id in keys:
            processor.notify_message_arriving(topic, queue_id, store.get_max_offset_in_queue(topic, queue_id))

    def _repeated_in_place(self, mono_ms: int, keys: list[tuple[str, int]]) -> bool:
        """The pulls this check answers all timed out with nothing to read: if the driver says so, each is held
        again from the time its repeat would arrive, last in its queue's list, as the repeat would be."""
        processor = self.processor
        store = processor.store
        due: list[_HeldRequest] = []
        for key in keys:
            max_offset = store.get_max_offset_in_queue(*key)
            for held in processor.held[key]:
                if max_offset > held.request.queue_offset:
                    return False
                if mono_ms >= held.suspend_mono_ms + BROKER_SUSPEND_MAX_TIME_MS:
                    due.append(held)
        if not due:
            return False
        again_mono_ms = self.repeat_idle(mono_ms, due)
        if again_mono_ms is None:
            return False
        for held in due:
            key = (held.request.topic, held.request.queue_id)
            still = [other for other in processor.held[key] if other is not held]
            if still:
                processor.held[key] = still
            else:
                del processor.held[key]
        for held in due:
            held.suspend_mono_ms = again_mono_ms
            processor.held.setdefault((held.request.topic, held.request.queue_id), []).append(held)
        return True
