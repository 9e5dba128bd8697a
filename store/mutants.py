"""Named switches that put back one historical RocketMQ bug each (ROCKETMQ.md section 8).

The store reads a run's mutant set once, at construction, into plain booleans: a clean build
pays nothing on the hot path for the switches' existence.
"""

from __future__ import annotations

CATALOGUE: dict[str, str] = {
    # Delay levels (ScheduleMessageService)
    "skip_failed_delivery": "#9249 (5.0-5.3.2): a failed delivery reschedules at currOffset+1 and loses the message",
    "no_correct_delay_offset": "#1869 (<=4.9.1): delayOffset.json past the level's CQ max is never clamped",
    "no_persist_at_shutdown": "#3473 (<=4.9.2): delay offsets are not persisted on graceful shutdown",
    "offset_from_task_start": "#3966 (4.9.3): the recorded delay offset is the task's start offset + 1",
    "persist_before_load": "#6881 (5.0-5.1.1): the empty offset table is persisted before load() reads it",
    "drop_on_exception": "E1 Timer era (<=4.9.2): an exception while rebuilding a due message drops it",
    "no_correct_deliver_timestamp": "drop correctDeliverTimestamp: a clock step back makes messages wait too long",
    "correct_delay_offset_skips_missing_cq": "correctDelayOffset skips a level whose consume queue is gone "
                                             "instead of creating it: the stale offset skips new messages",
    "error_ends_level_task": "#8124 (<5.3.0): run() catches only Exception; an Error while rebuilding a due "
                             "message ends the level's self-rescheduling chain",
    "correct_delay_offset_past_max": "correctDelayOffset clamps an offset past the level queue to max + 1 "
                                     "instead of max: the first message stored after the restart is skipped",
    "correct_delay_offset_to_min": "correctDelayOffset clamps an offset past the level queue's max to its min: "
                                   "the level delivers its whole queue again",
    "resend_exception_escapes": "an exception while rebuilding an async resend escapes doResend and kills the "
                                "level's HandlePutResultTask: the failed message is never resent",
    "delay_level_off_by_one": "parseDelayLevel numbers the levels from 0 (level = i): every level waits the next "
                              "level's delay, and the last level's messages go to the level before",
    "not_due_offset_plus_one": "5.x's not-yet-due branch records currOffset + 1: a crash after the persist "
                               "skips the message the level was waiting for",
    "next_offset_at_last_put": "a poll that put two units or more schedules the next at the last one it put "
                               "(nextOffset one short): the level delivers that unit twice, with no crash",
    # Commit log
    "physic_ts_every_flush": "the checkpoint's physicMsgTimestamp moves on every 500 ms flush round, not only on a "
                             "thorough flush (fidelity only: abnormal recovery is bounded by min(physic, logics))",
    "next_begin_plus_one": "GetMessageResult.nextBeginOffset one past the last unit read: a pull skips the next "
                           "message",
    "overflow_one_plus_one": "OFFSET_OVERFLOW_ONE answers nextBeginOffset = offset + 1: the next message to "
                             "arrive is skipped",
    # Retry / DLQ
    "dlq_keeps_delay": "#2724 (<=4.9.1): the DLQ copy keeps DELAY and detours through SCHEDULE_TOPIC_XXXX",
    "dlq_threshold_gt": "'>' instead of '>=' for max reconsume times: one retry too many before the DLQ",
    "retry_level_2_plus_r": "retry level 2 + reconsumeTimes instead of 3 + reconsumeTimes",
    "retry_level_4_plus_r": "retry level 4 + reconsumeTimes instead of 3 + reconsumeTimes: every retry waits one "
                            "level longer",
    "commit_on_failed_send_back": "client-go #976 / client-cpp #209: the offset is committed although send-back failed",
    "ignore_client_max_reconsume": "consumerSendMsgBack uses the group's retryMaxTimes (16), not the request's "
                                   "maxReconsumeTimes (as for clients before V3_4_9)",
    "reconsume_times_not_bumped": "the retry copy keeps the message's reconsumeTimes instead of + 1: the ladder "
                                  "repeats level 3 and never reaches the DLQ",
    "fallback_dlq_ge": "5.x handleRetryAndDLQ with 4.x's '>=' (RIP-32 made it '>'): the fallback dead-letters a retry early",
    "no_contains_message_check": "#5481 (<5.1.0): a result for a message cleanExpireMsg already sent back is sent back again",
    # Offsets
    "allocate_average_ceil": "AllocateMessageQueueAveragely gives every consumer ceil(n/k) queues from index * "
                             "ceil(n/k), wrapping: the last shares overlap the first, whose queues have two owners",
    "commit_max_offset": "commit the largest instead of the smallest un-acked offset of a ProcessQueue",
    "overflow_badly_to_min": "#4215 (<=4.9.3): OFFSET_OVERFLOW_BADLY answers nextBeginOffset = minOffset when "
                             "minOffset == 0: the whole queue is consumed again",
    # Timer wheel
    "timer_no_queue_offset_clamp": "#7480 (<5.3.2): the timer queue offset from timercheck is not clamped into the CQ",
    "timer_drop_after_first_failure": "drop a timer message after its first failed put",
    "timer_read_time_early": "advance the timer read time before the slot's puts finish",
    "timer_read_current_slot": "the dequeue waits on read > write instead of read >= write: it reads the current "
                               "slot before it is over, up to one precision early",
    "timer_drop_after_3_retries": "#8979 (5.0-5.3.1): a failed timer put is dropped after 3 quick retries (there was no "
                                  "timerEnableRetryUntilSuccess yet)",
}


# Mutants that change only fidelity: no history an invariant judges can tell them from the clean build, so
# they are pinned by a store-level conformance test instead (never counted as caught by an invariant).
FIDELITY_ONLY: dict[str, str] = {
    "physic_ts_every_flush": "tests/store/test_store_faithful.py::test_the_mutant_moves_it_on_every_round "
                             "(abnormal recovery starts at min(physic, logics) - 3 s, and logicsMsgTimestamp "
                             "alone already bounds it to what the consume queues durably hold)",
}


# Bugs considered for the catalogue and left out, with why (printed by ``rmqsim mutants --list``; never counted).
LEFT_OUT: dict[str, str] = {
    "stale_delay_offsets_after_failover": "#2357 (<4.9.0): needs a slave / DLedger master switch; the store has none",
    "timer_round_floor": "rounding without the precision ceil: the recorded due time is derived from the rounded "
                         "TIMER_OUT_MS, so no invariant sees the early delivery",
    "client_offset_not_increase_only": "a plain offset set after each batch: not caught on consumer-crash or "
                                       "flaky-consumer-broker-crash seed 1",
    "broker_commit_increase_only": "an increase-only broker commit: not caught on store-rollback(-failing-consumer) "
                                   "seed 1",
    "cq_kept_past_recovered_end": "alibaba #358 (<4.3.2): no fault leaves the queues past the commit-log end "
                                  "after a clean shutdown (crashes and power failures recover abnormally)",
    "dispatch_unflushed": "#8239 (5.0-5.2.x): the store flushes inside a SYNC_FLUSH put, so there is no window in "
                          "which dispatched data is unflushed",
    "no_bak_fallback_on_empty": "#5905: an empty consumerOffset.json loaded as an empty table; no invariant failed "
                                "over the built-ins at seed 1 (the clients re-commit their in-memory offsets)",
    "no_consumer_offset_persist_at_shutdown": "the clients re-commit their offsets after a broker restart: not "
                                              "caught over the built-ins at seed 1",
    "commit_one_past_first": "ProcessQueue.removeMessage returning firstKey() + 1: not caught over the built-ins at "
                             "seed 1 (a crash must fall while the oldest message is in flight)",
    "no_offset_freeze": "#7634: OFFSET_ILLEGAL fixed without a freeze: not caught over the built-ins at seed 1",
    "size_mismatch_valid": "#467 / PR #501 (<=4.3.1): a failed record with a size > 0 kept as valid at recovery: not "
                           "caught over the built-ins at seed 1 (a torn tail is zeros, so its size is 0)",
    "cq_truncate_gt": "truncateDirtyLogicFiles with '>' instead of '>=': not caught over the built-ins at seed 1",
    "timer_max_delay_int_overflow": "#5376 (5.0-5.1.0): a rejected send is the producer's error, not a loss; no "
                                    "invariant judges rejected sends",
}


class UnknownMutant(ValueError):
    pass


def validate(names) -> frozenset[str]:
    unknown = sorted(set(names) - set(CATALOGUE))
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], sorted(CATALOGUE), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownMutant(f"unknown mutant {unknown[0]!r}{hint}; known: {', '.join(sorted(CATALOGUE))}")
    return frozenset(names)
