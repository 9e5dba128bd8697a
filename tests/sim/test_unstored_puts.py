"""Puts that answer PUT_OK and store nothing (a record larger than a whole commit-log file), on real runs.

Both tags: CommitLog.asyncPutMessage, case END_OF_FILE, appends the record again to a new file, gets END_OF_FILE
again and still returns PUT_OK (4.9.8 l. 698, 5.3.3 l. 1039); every caller (SendMessageProcessor, the
send-back, ScheduleMessageService, the timer) tests the put status only. The run records an ``unstored`` event, and
the invariants count the message as RocketMQ's loss, like a copy a fault destroyed.
"""

from __future__ import annotations

import pytest

from model.invariants import check_events
from scenarios.scenario import load_scenario_text
from sim.checking import check_run, context_of
from sim.run import run_scenario
from sim.workload import message_body

# A 3 900-byte body makes a 4 039-byte record: it fits a 4 KiB commit-log file, its retry copy (about 140 bytes of
# retry properties more) does not. A 3 950-byte body does not fit at all.
SCENARIO = """
name = "unstored-{body}"
duration = "10s"
drain = "2m"
[broker]
era = "{era}"
commit_log_file_size = 4096
[[topic]]
name = "TopicA"
queues = 1
[[producer]]
topic = "TopicA"
messages = 3
rate = "1/s"
body_size = {body}
[[consumer]]
group = "GroupA"
topic = "TopicA"
fail_first = 1
[[consumer]]
group = "GroupB"
topic = "TopicA"
"""


def _run(body: int, era: str):
    text = SCENARIO.format(body=body, era=era)
    return run_scenario(load_scenario_text(text, f"unstored-{body}"), 1, check=check_run)


def _broken(result, events: list[dict]) -> dict:
    verdicts = check_events(events, context_of(result.world, events))
    return {k: v for k, v in verdicts.items() if not v["holds"]}


@pytest.mark.parametrize("era", ["5.3.3", "4.9.8"])
def test_a_retry_copy_too_big_for_a_file_is_sent_back_ok_and_lost(era):
    result = _run(3900, era)
    events = result.history.events
    assert result.summary.get("simulator_error") is None
    assert all(v["holds"] and not v["vacuous"] for v in result.summary["invariants"].values()), \
        {k: v.get("violations", [])[:1] for k, v in result.summary["invariants"].items() if not v["holds"]}
    sent = [e["msg_id"] for e in events if e["kind"] == "send" and e["status"] == "SEND_OK"]
    unstored = [e for e in events if e["kind"] == "unstored"]
    assert [e["msg_id"] for e in unstored] == sent and len(sent) == 3
    assert {e["topic"] for e in unstored} == {"SCHEDULE_TOPIC_XXXX"} and all(e["phy_offset"] % 4096 == 0
                                                                              for e in unstored)
    backs = [e for e in events if e["kind"] == "send_back"]
    assert [(e["result"], e["path"]) for e in backs] == [("ok", "broker")] * 3  # PUT_OK: the broker's SUCCESS
    for msg_id in sent:  # GroupB consumed each once; GroupA failed it once and never saw it again
        consumes = [(e["group"], e["status"]) for e in events if e["kind"] == "consume" and e["msg_id"] == msg_id]
        assert sorted(consumes) == [("GroupA", "RECONSUME_LATER"), ("GroupB", "CONSUME_SUCCESS")]
    # Without the unstored events, the lost retries break no_loss and at_least_once_redelivery.
    broken = _broken(result, [e for e in events if e["kind"] != "unstored"])
    assert set(broken) == {"no_loss", "at_least_once_redelivery"}
    assert {v["msg_id"] for v in broken["no_loss"]["violations"]} == set(sent)


@pytest.mark.parametrize("era", ["5.3.3", "4.9.8"])
def test_a_send_too_big_for_a_file_is_send_ok_and_stores_nothing(era):
    result = _run(3950, era)
    events = result.history.events
    assert result.summary.get("simulator_error") is None
    sends = [e for e in events if e["kind"] == "send"]
    assert [e["status"] for e in sends] == ["SEND_OK"] * 3
    assert [e["msg_id"] for e in events if e["kind"] == "unstored"] == [e["msg_id"] for e in sends]
    assert not any(e["kind"] in ("store", "consume") for e in events)
    assert result.summary["invariants"]["no_loss"]["holds"]
    broken = _broken(result, [e for e in events if e["kind"] != "unstored"])
    assert {v["msg_id"] for v in broken["no_loss"]["violations"]} == {e["msg_id"] for e in sends}


def test_version_2_bodies_are_body_size_bytes_and_version_1_bodies_replay():
    """Version 1 repeated an up to 8-byte pattern ``body_size // 8 + 1`` times: a producer's first 10 bodies came
    out 6/8 and the next 90 7/8 of ``body_size`` (4000 bytes asked, 3006 given). Version 2 gives ``body_size``."""
    for pattern in (b"p0-m0-", b"p0-m42-", b"p0-m420-", b"p12-m4200-"):
        for size in (0, 1, 7, 64, 4000):
            assert message_body(pattern, size, 2) == (pattern * (size + 1))[:size]
    assert len(message_body(b"p0-m0-", 4000, 1)) == 3006 and len(message_body(b"p0-m42-", 64, 1)) == 63
    assert message_body(b"p0-m420-", 64, 1) == message_body(b"p0-m420-", 64, 2)


def test_the_run_summary_and_a_sweep_row_count_unstored_puts():
    import tomllib

    from scenarios.sweep import run_task

    assert _run(3900, "5.3.3").summary["stats"]["unstored"] == 3
    task = {"cell": "c", "cell_id": "c0", "seed": 1, "params": {}, "repro": "rmqsim run x", "source": "unstored.toml",
            "doc": tomllib.loads(SCENARIO.format(body=3950, era="4.9.8")), "mutants": ()}
    row = run_task(task, check=check_run)
    assert row["error"] is None and (row["sent"], row["consumed"], row["unstored"]) == (3, 0, 3)
