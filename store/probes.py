"""Coverage probes (FoundationDB's CODE_PROBE): a named mark on each modelled failure path and era branch.

A bug on a path no run reaches can't be found, so runs count the probes they hit and the gate lists the
ones never hit. A component calls ``self.probes.probe("name")``; its class default is ``NO_PROBES``, whose
``probe`` does nothing, and the world injects one ``ProbeCollector`` per run (``attach_probes``). Probes
are never history events: a run's history is the same with or without a collector.
"""

from __future__ import annotations

# Every probe name, with the path it marks (tests check each ``probe("...")`` call in store/ is listed here).
CATALOGUE: dict[str, str] = {
    # ScheduleMessageService (delay levels)
    "delay.deliver_failed_retry": "a due delayed message's put failed; the level retries the same unit",
    "delay.deliver_failed_skip": "a due delayed message's put failed and the level moved past it (#9249 mutant)",
    "delay.correct_deliver_timestamp": "correctDeliverTimestamp fired: a deliver time beyond one level-delay ahead",
    "delay.correct_delay_offset": "correctDelayOffset clamped a level's offset into its consume queue",
    "delay.cq_offset_reset": "a level's offset lay outside its consume queue at poll time and was reset",
    "delay.message_unreadable": "a unit of a level queue pointed at an unreadable commit-log record (skipped)",
    "delay.timeup_error": "rebuilding a due message threw (the exception path)",
    "delay.async_resend": "HandlePutResultTask resent a failed async delivery",
    "delay.async_resend_error": "rebuilding a message for an async resend threw",
    # Commit log, consume queues, recovery
    "store.put_failed": "a commit-log put failed (an injected fault)",
    "store.recover_abnormally": "the store recovered abnormally (no clean-shutdown marker)",
    "store.recover_truncated_commitlog": "recovery cut the commit log back to the last valid record",
    "store.recover_truncated_cq": "recovery truncated consume queues that reached past the commit log",
    "store.get_offset_too_small": "a read asked below a queue's min offset",
    "store.get_offset_overflow_badly": "a read asked past a queue's max offset",
    "store.get_message_unreadable": "a consume-queue unit pointed at no record the commit log could return or decode",
    # Config files
    "config.main_missing": "a config file was missing at load",
    "config.main_empty": "a config file was empty at load (#5905's 0-byte file)",
    "config.main_unreadable": "a config file could not be parsed at load",
    "config.bak_used": "a config file was loaded from its .bak",
    "config.bak_unusable": "neither a config file nor its .bak could be loaded",
    # Broker: send-back, retry, DLQ, pull
    "broker.send_back_to_dlq": "consumerSendMsgBack dead-lettered a message (max reconsume times reached)",
    "broker.fallback_retry": "the producer fallback put a message into the retry topic (handleRetryAndDLQ)",
    "broker.fallback_dlq": "the producer fallback dead-lettered a message (handleRetryAndDLQ)",
    "broker.pull_offset_moved": "a pull answered PULL_OFFSET_MOVED",
    # Client
    "client.send_back_failed": "a send-back failed; the client retries the message locally",
    "client.producer_fallback": "the send-back failed over the broker call and the client sent it as a producer",
    "client.offset_illegal_fixed": "the consumer fixed an OFFSET_ILLEGAL offset",
    "client.expired_message_sent_back": "cleanExpireMsg sent back a message consumed for too long",
    "client.result_of_removed_message": "a consume result came for a message no longer in its ProcessQueue (5.1+)",
    # Timer wheel
    "timer.roll": "a timer message beyond the wheel's window was rolled",
    "timer.flow_control": "a timer message was rejected by flow control",
    "timer.put_retry": "a timer put failed with a retryable status and is retried",
    "timer.put_no_retry": "a timer put failed with an unrecoverable status and was skipped",
    "timer.put_gave_up": "a timer put was dropped after its retries",
    "timer.unknown_error": "converting a due timer message failed (unknown error)",
    "timer.get_msg_miss": "a timer unit pointed at an unreadable commit-log record (dropped)",
    "timer.queue_offset_clamped": "recovery clamped the timer queue offset into the timer topic's queue (#7480)",
}


class ProbeCollector:
    """One run's counts: probe name -> hits."""

    __slots__ = ("hits",)

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}

    def probe(self, name: str) -> None:
        self.hits[name] = self.hits.get(name, 0) + 1

    def as_dict(self) -> dict[str, int]:
        return dict(sorted(self.hits.items()))


class _NoProbes:
    __slots__ = ()

    def probe(self, name: str) -> None:
        pass


NO_PROBES = _NoProbes()


def never_hit(hits) -> list[str]:
    """The catalogue's probes that no count in ``hits`` (name -> count) reached, in catalogue order."""
    return [name for name in CATALOGUE if not hits.get(name)]
