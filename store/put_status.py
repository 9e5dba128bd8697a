"""Put results as RocketMQ names them (PutMessageStatus, AppendMessageResult, PutMessageResult)."""

from __future__ import annotations

from dataclasses import dataclass


class PutMessageStatus:
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPPED_FILE_FAILED = "CREATE_MAPPED_FILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGE_CACHE_BUSY = "OS_PAGE_CACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"
    WHEEL_TIMER_FLOW_CONTROL = "WHEEL_TIMER_FLOW_CONTROL"
    WHEEL_TIMER_MSG_ILLEGAL = "WHEEL_TIMER_MSG_ILLEGAL"
    WHEEL_TIMER_NOT_ENABLE = "WHEEL_TIMER_NOT_ENABLE"


class AppendMessageStatus:
    PUT_OK = "PUT_OK"
    END_OF_FILE = "END_OF_FILE"  # no room in the file: a blank was written, nothing stored


@dataclass(frozen=True, slots=True)
class AppendMessageResult:
    wrote_offset: int  # commit-log offset of the record
    wrote_bytes: int
    msg_id: str  # offsetMsgId
    store_timestamp: int
    logics_offset: int  # queue offset in the (possibly rewritten) topic
    topic: str
    queue_id: int
    # END_OF_FILE: the record does not fit even a new file; both tags still answer PUT_OK (asyncPutMessage, case
    # END_OF_FILE), so the send succeeds with nothing stored and no queue offset taken
    status: str = AppendMessageStatus.PUT_OK

    @property
    def stored(self) -> bool:
        return self.status == AppendMessageStatus.PUT_OK


@dataclass(frozen=True, slots=True)
class PutMessageResult:
    status: str
    append: AppendMessageResult | None = None
    fault_site: str | None = None  # the injected fault that failed this put, if one did

    @property
    def is_ok(self) -> bool:
        return self.status == PutMessageStatus.PUT_OK
