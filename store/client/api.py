"""What a client asks of a broker (MQClientAPIImpl's requests), as one protocol.

``BrokerController`` answers these in-process; the simulator wraps it in a modelled network
that adds latency (the asynchronous pull answers later) and failures (a call raises
``RemotingError``). Pulls are asynchronous, as in RocketMQ (pullMessageAsync + PullCallback);
send-back and sends are synchronous; offset updates are one-way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ..message import MessageExt

CLUSTERING = "CLUSTERING"
BROADCASTING = "BROADCASTING"

CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class ResponseCode:
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    INVALID_PARAMETER = 29
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12


class PullStatus:
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


class SendStatus:
    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


class RemotingError(Exception):
    """The request did not get an answer (network failure, timeout, broker down).

    ``fault_site`` names the injected fault behind it (e.g. the crash that took the broker down)."""

    def __init__(self, message: str = "", *, fault_site: str | None = None) -> None:
        super().__init__(message)
        self.fault_site = fault_site


class MQBrokerException(Exception):
    """The broker answered with an error code."""

    def __init__(self, code: int, remark: str = "", *, fault_site: str | None = None) -> None:
        super().__init__(f"CODE: {code} DESC: {remark}")
        self.code = code
        self.remark = remark
        self.fault_site = fault_site  # the injected fault that made the broker answer so, if one did


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    topic: str
    broker_name: str
    queue_id: int


@dataclass(frozen=True, slots=True)
class PullMessageRequest:
    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    commit_offset: int  # the client's in-memory offset; committed by the broker when > 0 (CLUSTERING)
    sub_expression: str = "*"
    suspend: bool = True  # long polling


@dataclass(slots=True)
class PullResult:
    pull_status: str
    next_begin_offset: int
    min_offset: int
    max_offset: int
    msg_found_list: list[MessageExt] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SendResult:
    send_status: str
    msg_id: str  # UNIQ_KEY
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int


PullCallback = Callable[["PullResult | Exception"], None]


class BrokerClientApi(Protocol):
    broker_name: str

    def pull_message_async(self, request: PullMessageRequest, callback: PullCallback) -> None: ...

    def consumer_send_msg_back(
        self, group: str, msg: MessageExt, delay_level: int, max_reconsume_times: int
    ) -> None:
        """Raises MQBrokerException for any non-SUCCESS answer, RemotingError when unanswered."""
        ...

    def send_message(self, msg: MessageExt, producer_group: str) -> SendResult: ...

    def update_consumer_offset_oneway(self, group: str, topic: str, queue_id: int, offset: int) -> None: ...

    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> int:
        """Raises MQBrokerException(QUERY_NOT_FOUND) when the broker has none."""
        ...

    def get_max_offset(self, topic: str, queue_id: int) -> int: ...

    def get_min_offset(self, topic: str, queue_id: int) -> int: ...

    def search_offset(self, topic: str, queue_id: int, timestamp_ms: int) -> int: ...

    def heart_beat(self, client_id: str, group: str, message_model: str, topics: list[str]) -> None: ...

    def unregister_client(self, client_id: str, group: str) -> None: ...

    def get_consumer_id_list_by_group(self, group: str) -> list[str]: ...

    def get_topic_read_queue_nums(self, topic: str) -> int:
        """Route information; raises MQBrokerException(TOPIC_NOT_EXIST) for an unknown topic."""
        ...
