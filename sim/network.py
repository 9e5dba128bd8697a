"""The modelled network between clients and the broker.

It implements ``BrokerClientApi`` in front of whichever broker is currently up. Pull requests
and their answers each take ``latency_ms`` (the answer may also wait in the broker's long-polling
hold); the synchronous calls (send, send-back, offset query) are answered at once. While the
broker is down every call raises ``RemotingError``; a crash fails the pulls it was holding.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from store.client.api import (
    MessageQueue,
    PullCallback,
    PullMessageRequest,
    RemotingError,
    SendResult,
)
from store.faults import BrokerCrash
from store.message import MessageExt


class NetworkService:
    """Delivers in-flight messages (pull requests and answers) when their latency has passed."""

    name = "network"

    def __init__(self) -> None:
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = 0

    def deliver_at(self, at_ms: int, action: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (at_ms, self._seq, action))
        self._seq += 1

    def next_wakeup_ms(self) -> int | None:
        return self._queue[0][0] if self._queue else None

    def step(self, mono_ms: int) -> None:
        while self._queue and self._queue[0][0] <= mono_ms:
            _, _, action = heapq.heappop(self._queue)
            action()


class PullAnswer:
    """The broker's answer to one pull, sent back over the network (``latency_ms``); a driver that repeats idle
    long polls in place (sim/long_poll_skips.py) reads whose pull it answers."""

    __slots__ = ("world", "client_owner", "callback")

    def __init__(self, world, client_owner: str, callback: PullCallback) -> None:
        self.world = world
        self.client_owner = client_owner
        self.callback = callback

    def __call__(self, result) -> None:
        world = self.world

        def deliver() -> None:
            self.callback(result)
            world.scheduler.touch(self.client_owner)

        world.network_service.deliver_at(world.now_mono() + world.scenario.network.latency_ms, deliver)
        world.scheduler.touch("network")


class SimNetwork:
    """``BrokerClientApi`` over the world's current broker; ``owner`` names the client for touches."""

    def __init__(self, world, client_owner: str) -> None:
        self.world = world
        self.client_owner = client_owner
        self.broker_name = world.broker_config.broker_name
        self.channel_to = None  # the broker process this client's connection reaches (a restart closes it)
        # called, after the request that opened it, when a connection opens that a heartbeat did not open
        self.on_channel_active: Callable[[], None] | None = None

    def _broker(self, writes: bool = True, heartbeat: bool = False):
        host = self.world.brokers
        broker = host.broker
        if broker is None:
            raise RemotingError("connect to broker-a failed: the broker is down", fault_site=host.down_site)
        host.on_client_request(writes)
        if broker is not self.channel_to:
            self.channel_to = broker
            if not heartbeat and self.on_channel_active is not None:
                # the event executor's heartbeat follows the request that opened the connection (a heartbeat
                # that opens it holds the heartbeat lock, and the listener's tryLock fails quietly)
                self._after_this_request(self.on_channel_active)
        return broker

    def _after_this_request(self, action: Callable[[], None]) -> None:
        world = self.world

        def run() -> None:
            action()
            world.scheduler.touch(self.client_owner)

        world.network_service.deliver_at(world.now_mono(), run)
        world.scheduler.touch("network")

    def _call(self, fn, writes: bool = True, heartbeat: bool = False):
        """Only the modelled outcomes cross the wire: an answer, an error answer (``MQBrokerException``), or
        the injected crash (seen by the client as a closed connection). Any other exception is a bug in the
        broker and propagates: the run stops with a simulator error, never a "failed request".

        ``writes=False``: a request that never writes the store's files (a pull, an offset update), so the
        flush services need not be asked for their next wake-up again."""
        broker = self._broker(writes, heartbeat)
        try:
            return fn(broker)
        except BrokerCrash as crash:
            self.world.brokers.crashed(crash)
            raise RemotingError(f"connection closed: {crash}", fault_site=crash.site) from None

    # --- asynchronous pull ---------------------------------------------------------------------------
    def pull_message_async(self, request: PullMessageRequest, callback: PullCallback) -> None:
        world = self.world
        latency = world.scenario.network.latency_ms

        answer = PullAnswer(world, self.client_owner, callback)

        def arrive() -> None:
            try:
                self._call(lambda b: b.pull_message_async(request, answer), writes=False)
            except RemotingError as error:
                answer(error)

        world.network_service.deliver_at(world.now_mono() + latency, arrive)
        world.scheduler.touch("network")

    # --- synchronous calls ---------------------------------------------------------------------------
    def consumer_send_msg_back(self, group: str, msg: MessageExt, delay_level: int, max_reconsume_times: int) -> None:
        self.world.recorder.open_request(self.client_owner)  # the send_back event goes here (causes first)
        self._call(lambda b: b.consumer_send_msg_back(group, msg, delay_level, max_reconsume_times))

    def send_message(self, msg: MessageExt, producer_group: str) -> SendResult:
        self.world.recorder.open_request(self.client_owner)  # the send (or fallback send_back) event goes here
        return self._call(lambda b: b.send_message(msg, producer_group))

    def update_consumer_offset_oneway(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        try:
            self._call(lambda b: b.update_consumer_offset_oneway(group, topic, queue_id, offset), writes=False)
        except RemotingError:
            pass  # one-way: nobody hears about a lost request

    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> int:
        return self._call(lambda b: b.query_consumer_offset(group, topic, queue_id))

    def get_max_offset(self, topic: str, queue_id: int) -> int:
        return self._call(lambda b: b.get_max_offset(topic, queue_id))

    def get_min_offset(self, topic: str, queue_id: int) -> int:
        return self._call(lambda b: b.get_min_offset(topic, queue_id))

    def search_offset(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        return self._call(lambda b: b.search_offset(topic, queue_id, timestamp_ms))

    def heart_beat(self, client_id: str, group: str, message_model: str, topics: list[str]) -> None:
        self._call(lambda b: b.heart_beat(client_id, group, message_model, topics), heartbeat=True)

    def unregister_client(self, client_id: str, group: str) -> None:
        self._call(lambda b: b.unregister_client(client_id, group))

    def get_consumer_id_list_by_group(self, group: str) -> list[str]:
        return self._call(lambda b: b.get_consumer_id_list_by_group(group))

    def get_topic_read_queue_nums(self, topic: str) -> int:
        return self._call(lambda b: b.get_topic_read_queue_nums(topic))


__all__ = ["MessageQueue", "NetworkService", "SimNetwork"]
