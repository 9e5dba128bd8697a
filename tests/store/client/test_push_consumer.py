"""DefaultMQPushConsumer against the FakeBroker test double: pulls, results, send-back, offsets."""

from __future__ import annotations

from store.client.api import BROADCASTING, MessageQueue, MQBrokerException, ResponseCode
from store.client.offset_store import LocalFileOffsetStore
from store.clock import ManualClock
from store.disk import MemoryDisk

from .driving import fail, make_consumer, run_for, succeed
from .fake_broker import REMOTING_ERROR, FakeBroker

T0 = 1_700_000_000_000
MQ0 = MessageQueue("TopicTest", "broker-a", 0)
RETRY = "%RETRY%GroupA"


def setup(queues: int = 1, messages: int = 0, **options):
    clock = ManualClock(T0)
    broker = FakeBroker(clock)
    broker.create_topic("TopicTest", queues)
    for i in range(messages):
        broker.put("TopicTest", i % queues, b"m%d" % i)
    events: list = []
    consumer = make_consumer(broker, clock, events=events, **options)
    return clock, broker, consumer, events


def of_kind(events, kind):
    return [fields for k, fields in events if k == kind]


def recorder(status_of=lambda msg: "CONSUME_SUCCESS"):
    seen = []

    def listener(msgs, context):
        statuses = set()
        for m in msgs:
            seen.append((m.topic, m.queue_offset, m.reconsume_times))
            statuses.add(status_of(m))
        return "RECONSUME_LATER" if "RECONSUME_LATER" in statuses else "CONSUME_SUCCESS"

    return seen, listener


# --- the happy path --------------------------------------------------------------------------------------
def test_consumes_every_message_and_commits_offsets():
    clock, broker, consumer, events = setup(queues=2, messages=3)
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 100, succeed)
    consumed = sorted((f["queue_id"], f["queue_offset"], f["status"]) for f in of_kind(events, "consume"))
    assert consumed == [(0, 0, "CONSUME_SUCCESS"), (0, 1, "CONSUME_SUCCESS"), (1, 0, "CONSUME_SUCCESS")]
    assert all(f["msg_id"].startswith("K") and f["client_id"] == "10.0.0.1@c1" for f in of_kind(events, "consume"))
    assert consumer.offset_store.offset_table[MQ0] == 2
    assert {(f["queue_id"], f["offset"]) for f in of_kind(events, "offset_commit")} >= {(0, 2), (1, 1)}
    last_pull = [r for r in broker.calls_of("pull") if r[0].topic == "TopicTest" and r[0].queue_id == 0][-1][0]
    assert last_pull.queue_offset == 2 and last_pull.commit_offset == 2  # the offset rides on the pull


def test_offsets_are_persisted_every_5_s_after_a_first_10_s():
    clock, broker, consumer, _ = setup(queues=1, messages=2)
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 21_000, succeed)
    times = [c[4] - T0 for c in broker.calls_of("update_consumer_offset_oneway")]
    assert times == [10_000, 15_000, 20_000]
    assert [c[3] for c in broker.calls_of("update_consumer_offset_oneway")] == [2, 2, 2]


def test_shutdown_persists_unregisters_and_ignores_late_answers():
    clock, broker, consumer, _ = setup(queues=1, messages=2)
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 100, succeed)
    held = list(broker.held)
    consumer.shutdown()
    assert [c[3] for c in broker.calls_of("update_consumer_offset_oneway")] == [2]
    assert broker.calls_of("unregister_client") == [("10.0.0.1@c1", "GroupA")]
    assert consumer.services == [] and consumer.process_queue_table == {}
    pulls = len(broker.calls_of("pull"))
    broker.put("TopicTest", 0)  # wakes the held pulls: their answers go nowhere
    assert held and len(broker.calls_of("pull")) == pulls and not consumer.consume_requests


def test_a_tag_expression_filters_on_the_broker_and_again_by_tag_string():
    clock, broker, consumer, _ = setup(queues=1, sub_expression="Aa || B")
    for tags in ("Aa", "C", "BB", "B", None):  # "BB" has the hash code of "Aa"
        broker.put("TopicTest", 0, tags=tags)
    seen, listener = recorder()
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 100, listener)
    assert [s[1] for s in seen] == [0, 3]
    assert consumer.offset_store.offset_table[MQ0] == 4  # queueOffsetMax + 1 of what was cached
    broker.release_held()  # NO_NEW_MSG with nextBeginOffset 5 while nothing is cached: correctTagsOffset
    run_for(consumer, clock, 10, listener)
    assert consumer.offset_store.offset_table[MQ0] == 5


def test_retry_messages_are_shown_under_their_original_topic_with_a_start_time():
    clock, broker, consumer, events = setup(queues=1)
    broker.create_topic(RETRY, 1)
    broker.put(RETRY, 0, reconsume_times=1, RETRY_TOPIC="TopicTest")
    got = []
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 100, lambda msgs, ctx: got.extend(msgs) or "CONSUME_SUCCESS")
    assert [(m.topic, m.reconsume_times) for m in got] == [("TopicTest", 1)]
    assert got[0].properties["CONSUME_START_TIME"] == str(T0)
    assert of_kind(events, "consume")[0]["topic"] == "TopicTest"


# --- failures in CLUSTERING ------------------------------------------------------------------------------
def test_a_failed_message_is_sent_back_to_the_broker_and_the_offset_moves_on():
    clock, broker, consumer, events = setup(queues=1, messages=2)
    seen, listener = recorder(lambda m: "RECONSUME_LATER" if (m.queue_offset, m.reconsume_times) == (0, 0)
                              else "CONSUME_SUCCESS")
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 100, listener)
    (group, sent, level, max_times), = broker.calls_of("consumer_send_msg_back")
    assert (group, sent.queue_offset, level, max_times) == ("GroupA", 0, 0, 16)
    assert consumer.offset_store.offset_table[MQ0] == 2
    assert ("TopicTest", 0, 1) in seen  # the fake broker's retry copy, shown under the original topic
    assert of_kind(events, "send_back") == [{"group": "GroupA", "msg_id": sent.uniq_key, "reconsume_times": 0,
                                             "delay_level": 0, "result": "ok", "path": "broker"}]


def test_ack_index_marks_the_tail_of_a_batch_as_failed():
    clock, broker, consumer, events = setup(queues=1, messages=3, consume_message_batch_max_size=3)
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 10)
    request = consumer.next_consume_request()
    assert [m.queue_offset for m in request.msgs] == [0, 1, 2]
    consumer.complete_consume_request(request, "CONSUME_SUCCESS", ack_index=0)
    assert [c[1].queue_offset for c in broker.calls_of("consumer_send_msg_back")] == [1, 2]
    assert [f["status"] for f in of_kind(events, "consume")] == [
        "CONSUME_SUCCESS", "RECONSUME_LATER", "RECONSUME_LATER"]
    assert consumer.offset_store.offset_table[MQ0] == 3


def test_a_failed_send_back_falls_back_to_the_producer_with_the_retry_properties():
    clock, broker, consumer, events = setup(queues=1)
    broker.put("TopicTest", 0, b"payload", key="UNIQ-1", reconsume_times=2, TRAN_MSG="true")
    broker.failures["consumer_send_msg_back"] = MQBrokerException(ResponseCode.SYSTEM_ERROR, "look up failed")
    seen, listener = recorder(lambda m: "RECONSUME_LATER" if m.reconsume_times == 2 else "CONSUME_SUCCESS")
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 100, listener)
    (retry, group), = broker.calls_of("send_message")
    assert group == "CLIENT_INNER_PRODUCER"
    assert retry.topic == RETRY and retry.body == b"payload"
    props = retry.properties
    assert props["RETRY_TOPIC"] == "TopicTest"
    assert props["RECONSUME_TIME"] == "3" and props["MAX_RECONSUME_TIMES"] == "16"
    assert props["DELAY"] == "5"  # 3 + reconsumeTimes
    # setOriginMessageId is overwritten by setProperties(newMsg, msg.getProperties()): no fresh ORIGIN_MESSAGE_ID
    assert "ORIGIN_MESSAGE_ID" not in props and props["UNIQ_KEY"] == "UNIQ-1"
    assert "TRAN_MSG" not in props
    assert consumer.offset_store.offset_table[MQ0] == 1
    assert ("TopicTest", 0, 3) in seen  # the fallback copy came back as the next retry
    assert [(f["path"], f["result"], f["delay_level"]) for f in of_kind(events, "send_back")] == [
        ("broker", "failed", 0), ("producer-fallback", "ok", 5)]


def test_the_fallback_copy_shares_the_consumed_messages_property_map():
    # 4.9.8 line 538 / 5.3.3 line 794: the map is shared, so the retry fields land in the consumed message too;
    # an ORIGIN_MESSAGE_ID the consumed message already had (a broker-made retry) is kept.
    clock, broker, consumer, _ = setup(queues=1)
    broker.put("TopicTest", 0, b"payload", key="UNIQ-1", reconsume_times=1, ORIGIN_MESSAGE_ID="OFFSET-ID-0")
    broker.failures["consumer_send_msg_back"] = MQBrokerException(ResponseCode.SYSTEM_ERROR, "look up failed")
    consumed = []

    def listener(msgs, context):
        consumed.extend(msgs)
        return "RECONSUME_LATER" if len(consumed) == 1 else "CONSUME_SUCCESS"

    consumer.start(clock.now_ms())
    run_for(consumer, clock, 100, listener)
    (retry, _), = broker.calls_of("send_message")
    assert retry.properties["ORIGIN_MESSAGE_ID"] == "OFFSET-ID-0"
    assert retry.properties["RECONSUME_TIME"] == "2" and retry.properties["MAX_RECONSUME_TIMES"] == "16"
    first = consumed[0].properties
    assert first["RETRY_TOPIC"] == "TopicTest" and first["DELAY"] == "4"
    # written into the shared map too, then cleared again by the producer's sendKernelImpl (header fields)
    assert "RECONSUME_TIME" not in first and "MAX_RECONSUME_TIMES" not in first


def both_send_backs_fail(**options):
    clock, broker, consumer, events = setup(queues=1, messages=3, **options)
    broker.failures["consumer_send_msg_back"] = REMOTING_ERROR
    broker.failures["send_message"] = REMOTING_ERROR
    attempts = []

    def listener(msgs, context):
        (m,) = msgs
        attempts.append((m.queue_offset, m.reconsume_times, clock.now_ms() - T0))
        return "RECONSUME_LATER" if (m.queue_offset, m.reconsume_times) == (1, 0) else "CONSUME_SUCCESS"

    consumer.start(clock.now_ms())
    run_for(consumer, clock, 100, listener)
    return clock, broker, consumer, events, attempts, listener


def test_when_both_send_backs_fail_the_message_is_retried_locally_after_5_s_and_holds_the_offset():
    clock, broker, consumer, events, attempts, listener = both_send_backs_fail()
    assert [a[:2] for a in attempts] == [(0, 0), (1, 0), (2, 0)]
    assert consumer.offset_store.offset_table[MQ0] == 1  # 2 is done, 1 is not: the offset waits at 1
    assert consumer.process_queue_table[MQ0].offsets() == [1]
    assert [(f["path"], f["result"], f["reconsume_times"]) for f in of_kind(events, "send_back")] == [
        ("broker", "failed", 0), ("producer-fallback", "failed", 0), ("local-retry", "ok", 1)]
    run_until_ms = T0 + 5000 - 1
    run_for(consumer, clock, run_until_ms - clock.now_ms(), listener)
    assert len(attempts) == 3  # not before 5 s
    run_for(consumer, clock, 101, listener)
    assert attempts[3][:2] == (1, 1) and attempts[3][2] >= 5000  # reconsumeTimes + 1, in memory
    assert consumer.offset_store.offset_table[MQ0] == 3


def test_mutant_commit_on_failed_send_back_lets_the_offset_pass_the_message():
    clock, broker, consumer, events, attempts, listener = both_send_backs_fail(
        mutants=frozenset({"commit_on_failed_send_back"}))
    assert consumer.offset_store.offset_table[MQ0] == 3  # the un-acked message 1 is passed
    run_for(consumer, clock, 10_000, listener)
    assert len(attempts) == 3  # and never retried: lost


def test_mutant_commit_max_offset_commits_past_a_message_still_in_progress():
    for mutants, expected in ((frozenset(), 0), (frozenset({"commit_max_offset"}), 3)):
        clock, broker, consumer, _ = setup(queues=1, messages=3, mutants=mutants)
        consumer.start(clock.now_ms())
        run_for(consumer, clock, 10)
        slow, r1, r2 = (consumer.next_consume_request() for _ in range(3))
        consumer.complete_consume_request(r1, "CONSUME_SUCCESS")
        consumer.complete_consume_request(r2, "CONSUME_SUCCESS")
        assert consumer.offset_store.offset_table[MQ0] == expected


def test_a_result_for_a_queue_dropped_meanwhile_is_discarded():
    clock, broker, consumer, events = setup(queues=1, messages=1)
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 10)
    request = consumer.next_consume_request()
    consumer.rebalance_impl.remove_process_queue(MQ0)  # e.g. the queue moved to another consumer
    consumer.complete_consume_request(request, "RECONSUME_LATER")
    assert broker.calls_of("consumer_send_msg_back") == []
    assert MQ0 not in consumer.offset_store.offset_table
    assert len(of_kind(events, "consume")) == 1  # the listener did run


def test_requests_of_a_dropped_queue_are_skipped():
    clock, broker, consumer, events = setup(queues=1, messages=2)
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 10)
    consumer.process_queue_table[MQ0].dropped = True
    assert consumer.next_consume_request() is None
    assert of_kind(events, "local_retry_dropped") == []  # pulled messages come back from the broker: not recorded


def test_a_local_retry_of_a_dropped_queue_is_skipped_and_recorded():
    clock, broker, consumer, events, attempts, listener = both_send_backs_fail()
    consumer.rebalance_impl.remove_process_queue(MQ0)  # e.g. OFFSET_ILLEGAL after the broker restarted
    run_for(consumer, clock, 5100, listener)
    assert len(attempts) == 3  # ConsumeRequest.run returned at once: the listener never saw the retry
    (dropped,) = of_kind(events, "local_retry_dropped")
    assert (dropped["queue_topic"], dropped["queue_id"], dropped["queue_offset"], dropped["reconsume_times"]) == (
        "TopicTest", 0, 1, 1)
    assert dropped["group"] == consumer.consumer_group and dropped["client_id"] == consumer.client_id


def test_a_listener_exception_counts_as_reconsume_later():
    clock, broker, consumer, events = setup(queues=1, messages=1)

    def boom(msgs, context):
        raise RuntimeError("bug in the listener")

    consumer.start(clock.now_ms())
    run_for(consumer, clock, 10, boom)
    assert len(broker.calls_of("consumer_send_msg_back")) >= 1
    assert of_kind(events, "consume")[0]["status"] == "RECONSUME_LATER"


def test_an_expired_consumption_is_sent_back_with_level_3():
    clock, broker, consumer, _ = setup(queues=1, messages=2, consume_timeout_min=1)
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 10)
    consumer.next_consume_request()  # taken at T0, never completed
    run_for(consumer, clock, 60_000 - 10)
    assert broker.calls_of("consumer_send_msg_back") == []  # the first check at 1 min: not older than 1 min
    run_for(consumer, clock, 60_000)
    assert [(c[1].queue_offset, c[2]) for c in broker.calls_of("consumer_send_msg_back")] == [(0, 3)]
    assert consumer.process_queue_table[MQ0].offsets() == [1]


def expired_then_failed(**options):
    """Message 0's consumption outlives consumeTimeout: cleanExpireMsg sends it back (level 3) and removes it;
    then the slow listener answers RECONSUME_LATER."""
    clock, broker, consumer, events = setup(queues=1, messages=2, consume_timeout_min=1, **options)
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 10)
    slow = consumer.next_consume_request()
    run_for(consumer, clock, 120_000)
    assert [(c[1].queue_offset, c[2]) for c in broker.calls_of("consumer_send_msg_back")] == [(0, 3)]
    consumer.complete_consume_request(slow, "RECONSUME_LATER")
    return [(c[1].queue_offset, c[2]) for c in broker.calls_of("consumer_send_msg_back")]


def test_a_late_failure_of_a_message_clean_expire_msg_sent_back_is_not_sent_back_again_in_5x():
    assert expired_then_failed() == [(0, 3)]  # #5481 (5.1.0+): not in its ProcessQueue any more: skipped


def test_a_late_failure_starts_a_second_retry_chain_in_4x_and_with_the_mutant():
    assert expired_then_failed(era="4.9.8") == [(0, 3), (0, 0)]
    assert expired_then_failed(mutants=frozenset({"no_contains_message_check"})) == [(0, 3), (0, 0)]


# --- BROADCASTING ----------------------------------------------------------------------------------------
def test_broadcasting_failures_are_dropped_and_offsets_still_advance():
    disk = MemoryDisk()
    clock, broker, consumer, events = setup(queues=1, messages=2, message_model=BROADCASTING,
                                            offset_store_disk=disk)
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 10_001, fail)
    assert [f["status"] for f in of_kind(events, "consume")] == ["RECONSUME_LATER"] * 2
    assert broker.calls_of("consumer_send_msg_back") == [] and broker.calls_of("send_message") == []
    assert of_kind(events, "send_back") == []
    assert consumer.offset_store.offset_table[MQ0] == 2
    assert broker.calls_of("update_consumer_offset_oneway") == []
    reread = LocalFileOffsetStore(disk, ".rocketmq_offsets", "10.0.0.1@c1", "GroupA")
    reread.load()
    assert reread.offset_table == {MQ0: 2}  # persisted after the first 10 s
    assert all(r[0].commit_offset == 0 for r in broker.calls_of("pull"))  # never piggy-backed


# --- pull flow -------------------------------------------------------------------------------------------
def test_offset_illegal_drops_the_queue_and_fixes_the_offset_10_s_later():
    clock, broker, consumer, _ = setup(queues=1, messages=5, era="4.9.8")
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 1000, succeed)
    assert consumer.offset_store.offset_table[MQ0] == 5
    del broker.queues["TopicTest"][0][2:]  # the queue was truncated behind the consumer's back
    old_pq = consumer.process_queue_table[MQ0]
    broker.release_held()  # the held pull is answered: offset 5 > max 2 -> OFFSET_ILLEGAL, next 2
    assert old_pq.dropped
    run_for(consumer, clock, 9_999, succeed)
    assert consumer.offset_store.offset_table[MQ0] == 5 and consumer.process_queue_table[MQ0] is old_pq
    persisted_before = len(broker.calls_of("update_consumer_offset_oneway"))
    run_for(consumer, clock, 1, succeed)
    fixes = [c[3] for c in broker.calls_of("update_consumer_offset_oneway")[persisted_before:]]
    assert fixes[:1] == [2]  # updateOffset(next, increaseOnly=false) then persist, not increase-only
    assert MQ0 not in consumer.process_queue_table and MQ0 not in consumer.offset_store.offset_table
    seen, listener = recorder()
    broker.put("TopicTest", 0, b"after")
    run_for(consumer, clock, 20_000, listener)  # the next rebalance re-creates the queue at offset 2
    assert seen == [("TopicTest", 2, 0)]
    assert consumer.process_queue_table[MQ0] is not old_pq


def test_offset_illegal_fixes_freezes_and_rebalances_at_once_in_5x():
    # 5.2.0+: executeTask (not executeTaskLater 10 s): updateAndFreezeOffset, persist, removeProcessQueue,
    # rebalanceImmediately, so the queue is pulled again from the fixed offset without waiting for the 20 s round.
    clock, broker, consumer, _ = setup(queues=1, messages=5)
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 1000, succeed)
    del broker.queues["TopicTest"][0][2:]
    old_pq = consumer.process_queue_table[MQ0]
    persisted_before = len(broker.calls_of("update_consumer_offset_oneway"))
    broker.release_held()
    assert old_pq.dropped
    seen, listener = recorder()
    broker.put("TopicTest", 0, b"after")
    run_for(consumer, clock, 10, listener)
    fixes = [c[3] for c in broker.calls_of("update_consumer_offset_oneway")[persisted_before:]]
    assert fixes[:1] == [2]
    assert seen == [("TopicTest", 2, 0)]
    assert consumer.process_queue_table[MQ0] is not old_pq


def test_a_pull_that_raises_is_retried_after_3_s():
    clock, broker, consumer, _ = setup(queues=1, messages=1)
    broker.failures["pull_message_async"] = REMOTING_ERROR
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 7000)
    times = [t - T0 for request, t in broker.calls_of("pull") if request.topic == "TopicTest"]
    assert times == [0, 3000, 6000]


def test_a_pull_answered_with_an_error_is_retried_after_3_s():
    clock, broker, consumer, _ = setup(queues=1, messages=1)
    broker.deliver_later = True
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 10)
    callbacks = [cb for cb, _ in broker.pending]
    broker.pending.clear()
    clock.advance(500)  # the answer comes late: the retry is measured from now, read from the clock
    for cb in callbacks:
        cb(MQBrokerException(ResponseCode.SYSTEM_BUSY, "busy"))
    assert min(s.next_wakeup_ms() for s in consumer.services if s.name == "pull-message-service") == (
        clock.now_ms() + 3000)


def test_flow_control_waits_50_ms_while_too_much_is_cached():
    for options in ({"pull_threshold_for_queue": 2}, {"consume_concurrently_max_span": 2}):
        clock, broker, consumer, _ = setup(queues=1, messages=5, **options)
        consumer.start(clock.now_ms())
        run_for(consumer, clock, 10)  # 5 cached, nobody consumes
        pulls = len(broker.calls_of("pull"))
        pull_service = next(s for s in consumer.services if s.name == "pull-message-service")
        assert pull_service.next_wakeup_ms() <= clock.now_ms() + 50
        run_for(consumer, clock, 200)
        assert len(broker.calls_of("pull")) == pulls  # re-checked every 50 ms, never pulled
        consumer.run_listener(succeed)
        run_for(consumer, clock, 100)
        assert len(broker.calls_of("pull")) > pulls


def test_the_consumer_starts_at_the_broker_max_offset_with_consume_from_last_offset():
    clock, broker, consumer, _ = setup(queues=1, messages=3, consume_from_where="CONSUME_FROM_LAST_OFFSET")
    seen, listener = recorder()
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 100, listener)
    broker.put("TopicTest", 0, b"new")
    run_for(consumer, clock, 100, listener)
    assert seen == [("TopicTest", 3, 0)]


def test_heartbeats_register_the_consumer_and_repeat_every_30_s():
    clock, broker, consumer, _ = setup(queues=1)
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 62_000)
    assert broker.calls_of("heart_beat")[0] == ("10.0.0.1@c1", "GroupA", "CLUSTERING", ("TopicTest", RETRY))
    assert len(broker.calls_of("heart_beat")) == 4  # at start, 1 s, 31 s, 61 s


def test_no_new_msg_does_not_move_the_offset_past_cached_messages():
    clock, broker, consumer, _ = setup(queues=1, messages=2)
    consumer.start(clock.now_ms())
    run_for(consumer, clock, 10)  # both cached, not consumed; the next pull (offset 2) is held
    broker.release_held()  # NO_NEW_MSG, nextBeginOffset 2
    assert consumer.offset_store.read_offset(MQ0, "READ_FROM_MEMORY") == -1
    consumer.run_listener(succeed)
    assert consumer.offset_store.offset_table[MQ0] == 2


def test_5x_shows_a_pulled_message_under_the_pulled_queue_id_and_4x_under_its_own():
    """A consume-queue unit may name a record of another queue (a stale unit after a power failure: explore seed
    1060000588). 5.x PullAPIWrapper.processPullResult sets every pulled message's queueId to the pulled queue's
    (msg.setQueueId(mq.getQueueId())); 4.9.8 sets only the broker name, so the record's own queue id stays."""
    for era, queue_ids in (("5.3.3", [0, 1]), ("4.9.8", [1, 1])):
        clock, broker, consumer, events = setup(queues=2, era=era)
        record = broker.put("TopicTest", 1)
        broker.queues["TopicTest"][0].append(record)  # queue 0's unit 0 names queue 1's record
        consumer.start(clock.now_ms())
        run_for(consumer, clock, 100, succeed)
        consumed = of_kind(events, "consume")
        assert sorted(f["queue_id"] for f in consumed) == queue_ids, era
        assert [f["queue_offset"] for f in consumed] == [0, 0]
