"""rmqsim trace: the journey of a lost message, a retried message, and the exit codes."""

import pytest

from model.journey import journey
from scenarios.cli import main


@pytest.fixture(scope="module")
def lost_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("trace") / "run"
    assert main(["run", "consumer-crash", "--mutant", "commit_max_offset", "--out", str(out)]) == 1
    return out


@pytest.fixture(scope="module")
def ladder_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("trace") / "ladder"
    assert main(["run", "retry-ladder-to-dlq", "--out", str(out)]) == 0
    return out


def test_lost_messages_show_the_commit_that_skipped_them_and_the_crash(lost_run, capsys):
    assert main(["trace", str(lost_run), "--lost"]) == 1
    text = capsys.readouterr().out
    blocks = text.split("\n\n")
    assert len(blocks) == 8  # the 8 lost messages of this run
    for block in blocks:
        assert "VIOLATION no_loss" in block
        assert "BEFORE it was consumed" in block
        assert "!!" in block and "CRASH GroupA-1" in block
        # the early commit comes before the crash that loses the message
        assert block.index("BEFORE it was consumed") < block.index("CRASH")


def test_retry_ladder_hops_name_levels_retry_and_dlq(ladder_run, capsys):
    msg = "5CAFAACCCF87BEABD37F47B760000000"
    assert main(["trace", str(ladder_run), msg]) == 0
    text = capsys.readouterr().out
    assert "dead-lettered" in text.splitlines()[0]
    for level in range(3, 19):
        assert f"SCHEDULE_TOPIC_XXXX level {level} " in text
    assert "%RETRY%GroupA queue 0" in text and "%DLQ%GroupA" in text
    assert "reconsumeTimes 16 -> RECONSUME_LATER" in text
    # causes before effects: the send-back before the copy it stores, the delivery before its %RETRY% copy
    lines = [line for line in text.splitlines() if not line.startswith("..")]
    first_back = next(i for i, line in enumerate(lines) if "send back by" in line)
    assert "store in SCHEDULE_TOPIC_XXXX level 3" in lines[first_back + 1]
    first_deliver = next(i for i, line in enumerate(lines) if "deliver from" in line)
    assert "store in %RETRY%GroupA" in lines[first_deliver + 1]
    assert "send to TopicTest" in lines[2] and "store in TopicTest" in lines[3]
    assert "send back by" in lines[-3] and "store in %DLQ%GroupA" in lines[-2] and "dead-lettered" in lines[-1]


def test_journey_is_in_history_order_with_context_marked(ladder_run):
    import json

    events = [json.loads(line) for line in open(ladder_run / "history.jsonl")]
    hops = journey(events, "5CAFAACCCF87BEABD37F47B760000000")
    context = [h.seq for h in hops if h.context]
    assert context == sorted(context)
    own = [h.kind for h in hops if not h.context]
    assert own.count("consume") == 17 and own.count("deliver") == 16 and own[-1] in ("dlq", "send_back")
    assert all(h.kind in ("offset_commit", "persist") for h in hops if h.context)


def test_bad_input_exits_2(lost_run, tmp_path, capsys):
    assert main(["trace", str(tmp_path / "missing"), "ABC"]) == 2
    assert main(["trace", str(lost_run), "NOSUCHMESSAGE"]) == 2
    err = capsys.readouterr().err
    assert "not a directory" in err and "no message NOSUCHMESSAGE" in err and "Traceback" not in err
    assert main(["trace", str(lost_run)]) == 2


def test_no_violations_prints_nothing_to_trace(ladder_run, capsys):
    assert main(["trace", str(ladder_run), "--violations"]) == 0
    assert "nothing to trace" in capsys.readouterr().out


def test_a_message_named_twice_is_traced_once_with_both_reasons(lost_run, tmp_path, capsys):
    import json
    import shutil

    run = tmp_path / "twice"
    shutil.copytree(lost_run, run, ignore=shutil.ignore_patterns("store"))
    summary = json.loads((run / "summary.json").read_text())
    first = summary["invariants"]["no_loss"]["violations"][0]
    summary["invariants"]["duplicates"] = {"holds": False, "checked": 1,
                                           "violations": [dict(first, explanation="planted second reason")]}
    (run / "summary.json").write_text(json.dumps(summary))
    assert main(["trace", str(run), "--violations"]) == 1
    text = capsys.readouterr().out
    assert text.count(f"message {first['msg_id']}") == 1 and "duplicates: planted second reason" in text
    assert len(text.split("\n\n")) == 8
