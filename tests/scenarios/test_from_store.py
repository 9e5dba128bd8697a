"""``rmqsim run SCENARIO --from-store DIR``: the broker starts on a copy of a store directory, and the messages the
store held join the checked population (``preloaded`` events)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from model.history import validate_history
from scenarios.cli import main
from scenarios.scenario import load_scenario_text
from sim.from_store import StoreImage, StoreImageError, load_store_image
from sim.run import run_scenario
from sim.world import World
from store import fastjson
from store import message as codec

# A: level-1 and level-16 (30 min) messages; the consumer fails twice with 1 retry, so every level-1 message ends
# in %DLQ%GroupA, while the level-16 ones are still waiting in SCHEDULE_TOPIC_XXXX when A ends.
SCENARIO_A = """
name = "from-store-a"
seed = 1
duration = "20s"
drain = "40s"

[[topic]]
name = "TopicTest"
queues = 2

[[producer]]
topic = "TopicTest"
messages = 20
rate = "2/s"
delay_levels = [1, 16]

[[consumer]]
group = "GroupA"
topic = "TopicTest"
max_reconsume_times = 1
fail_first = 2
"""

# B: the same group, a little traffic of its own, and a drain long enough for A's pending level-16 messages.
SCENARIO_B = """
name = "from-store-b"
seed = 7
duration = "10s"
drain = "35m"

[[topic]]
name = "TopicTest"
queues = 2

[[producer]]
topic = "TopicTest"
messages = 4
rate = "1/s"

[[consumer]]
group = "GroupA"
topic = "TopicTest"
max_reconsume_times = 1
"""

# C: a consumer for a hand-made store's messages (and one message of its own).
SCENARIO_C = """
name = "from-store-c"
seed = 3
duration = "5s"
drain = "2m"

[[topic]]
name = "TopicTest"
queues = 2

[[producer]]
topic = "TopicTest"
messages = 1

[[consumer]]
group = "GroupA"
topic = "TopicTest"
"""


def _scenario(text: str, name: str):
    return load_scenario_text(text, name)


def _tree_digest(root) -> str:
    h = hashlib.sha256()
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(directory, name)
            h.update(os.path.relpath(path, root).encode())
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def _image(store_dir, scenario) -> StoreImage:
    world = World(scenario, scenario.seed)
    return load_store_image(str(store_dir), world.store_config, world.broker_config, world.clock.epoch_ms)


@pytest.fixture(scope="module")
def store_of_a(tmp_path_factory):
    out = tmp_path_factory.mktemp("a")
    result = run_scenario(_scenario(SCENARIO_A, "a.toml"), disk="os", out_dir=str(out))
    assert result.summary["verdict"] == "holds"
    return out / "store"


def _events(result, kind):
    return [e for e in result.history.events if e["kind"] == kind]


@pytest.fixture(scope="module")
def b_on_a(store_of_a):
    """B started on A's store (memory disk), run once: the digests of A's store before and after, and the run
    (its history validated against the strict schema, which the suite's autouse fixture turns on only later)."""
    import sim.history

    before = _tree_digest(store_of_a)
    scenario = _scenario(SCENARIO_B, "b.toml")
    strict, sim.history.STRICT = sim.history.STRICT, True
    try:
        result = run_scenario(scenario, from_store=_image(store_of_a, scenario))
    finally:
        sim.history.STRICT = strict
    return before, _tree_digest(store_of_a), result


# --- (1) a store a scenario wrote to the OS disk ----------------------------------------------------------------
def test_pending_delayed_messages_of_a_are_delivered_in_b(store_of_a, b_on_a):
    before, after, result = b_on_a
    assert after == before  # DIR is never modified
    validate_history(result.history.events)
    preloaded = _events(result, "preloaded")
    pending = sorted({e["msg_id"] for e in preloaded if e["state"] == "pending"})
    dead = sorted({e["msg_id"] for e in preloaded if e["topic"] == "%DLQ%GroupA"})
    assert len(pending) == 10 and len(dead) == 10
    assert all(e["delay_level"] == 16 for e in preloaded if e["state"] == "pending")
    delivered = {e["msg_id"] for e in _events(result, "deliver")}
    consumed = {e["msg_id"] for e in _events(result, "consume") if e["status"] == "CONSUME_SUCCESS"}
    assert set(pending) <= delivered and set(pending) <= consumed
    assert not set(dead) & consumed  # dead letters stay in the DLQ
    inv = result.summary["invariants"]
    assert result.summary["verdict"] == "holds", {k: v["violations"][:1] for k, v in inv.items() if not v["holds"]}
    assert inv["no_loss"]["checked"] == 4 + 10  # B's own sends + A's pending messages
    assert inv["dlq_after_max_retries"]["checked"] == 4 + 10 + 10  # ... + A's dead letters
    assert inv["no_early_delivery"]["checked"] >= 10 and inv["bounded_lateness"]["checked"] >= 10
    assert result.summary["preloaded"] == {"copies": len(preloaded), "messages": 20, "pending": 10, "dead_letters": 10}
    assert result.summary["from_store"] == os.path.abspath(store_of_a)
    assert "--from-store" in result.summary["repro"]


def test_a_broker_that_drops_one_preloaded_message_fails_no_loss(store_of_a, monkeypatch):
    """Planted bug: the simulated broker loses the first pending level-16 message of the store (its copy of
    delayOffset.json is one past it); the population comes from DIR itself, so no_loss names that message."""
    scenario = _scenario(SCENARIO_B, "b.toml")
    image = _image(store_of_a, scenario)
    first_pending = next(c for c in image.copies if c["state"] == "pending")
    original = StoreImage.install

    def install_dropping_one(self, world):
        original(self, world)
        table = fastjson.loads(world.disk.read_file("config/delayOffset.json").decode())
        table["offsetTable"][first_pending["queue_id"] + 1] = first_pending["queue_offset"] + 1
        for name in ("config/delayOffset.json", "config/delayOffset.json.bak"):
            world.disk.write_file(name, fastjson.dumps(table).encode(), fsync=True)

    monkeypatch.setattr(StoreImage, "install", install_dropping_one)
    result = run_scenario(scenario, from_store=image)
    no_loss = result.summary["invariants"]["no_loss"]
    assert not no_loss["holds"]
    assert [v["msg_id"] for v in no_loss["violations"]] == [first_pending["msg_id"]]
    assert "in the store at the start" in no_loss["violations"][0]["explanation"]
    from reports.run_plots import message_lanes

    lanes = {lane.msg_id: lane for lane in message_lanes(result.history.events)}
    assert first_pending["msg_id"] in lanes and lanes[first_pending["msg_id"]].delay_level == 16  # drawn in the report
    lateness = result.summary["invariants"]["bounded_lateness"]  # every pending copy must be delivered, consumed or not
    assert [v["msg_id"] for v in lateness["violations"]] == [first_pending["msg_id"]]
    assert "waiting at delay level 16 in the store at the start" in lateness["violations"][0]["explanation"]


def test_a_dead_letter_delivered_again_fails_dlq_after_max_retries(b_on_a):
    """Planted bug: the store's dead letters lose their DLQ copy in the population (as if they were still owed)
    and the run re-sends one; the check must see the DLQ'd message come back through a retry."""
    from model import invariants

    result = b_on_a[2]  # the run the test above judges, made once
    events = result.history.events
    dead = next(e for e in events if e["kind"] == "preloaded" and e["topic"] == "%DLQ%GroupA")
    t = events[-1]["t_ms"]
    extra = [{"seq": len(events), "t_ms": t, "kind": "store", "msg_id": dead["msg_id"], "topic": "%RETRY%GroupA",
              "queue_id": 0, "queue_offset": 999, "phy_offset": 10**6, "size": 200, "reconsume_times": 1,
              "broker_ms": dead["broker_ms"] + t},
             {"seq": len(events) + 1, "t_ms": t, "kind": "consume", "group": "GroupA", "client_id": "GroupA-0@sim",
              "msg_id": dead["msg_id"], "topic": "TopicTest", "queue_topic": "%RETRY%GroupA", "queue_id": 0,
              "queue_offset": 999, "reconsume_times": 1, "status": "CONSUME_SUCCESS"}]
    from sim.checking import context_of

    verdict = invariants.check_events(events + extra, context_of(result.world, events + extra),
                                      only=["dlq_after_max_retries"])["dlq_after_max_retries"]
    assert not verdict["holds"] and verdict["violations"][0]["msg_id"] == dead["msg_id"]
    assert "in %DLQ%GroupA at the start" in verdict["violations"][0]["explanation"]


def test_a_killed_broker_on_that_store_recovers_abnormally_and_keeps_the_pending_messages(store_of_a, tmp_path):
    """The README's question: what happens to what is pending if the broker is killed now? The abort file
    makes the recovery abnormal; every pending message must still be delivered."""
    import shutil

    killed = tmp_path / "killed"
    shutil.copytree(store_of_a, killed)
    (killed / "abort").write_bytes(b"")
    scenario = _scenario(SCENARIO_B, "b.toml")
    image = _image(killed, scenario)
    assert not image.last_exit_ok
    result = run_scenario(scenario, from_store=image, disk="os")
    assert result.world.probes.as_dict().get("store.recover_abnormally")
    normal = run_scenario(scenario, from_store=_image(store_of_a, scenario), disk="os")
    assert not normal.world.probes.as_dict().get("store.recover_abnormally")
    assert result.summary["verdict"] == "holds"
    assert result.summary["invariants"]["no_loss"]["checked"] == 14


# --- (2) a hand-made store: a commit log, no consume queues -----------------------------------------------------
def _hand_made_store(root, *, abort: bool = False) -> list[str]:
    """Three plain messages in TopicTest and two level-2 messages in SCHEDULE_TOPIC_XXXX, written record by record
    with the store's codec into a 64 KiB commit-log file; consumerOffset.json says GroupA has consumed nothing."""
    base_ms = 1_750_000_000_000
    msgs = []
    for i in range(3):
        msgs.append(codec.MessageExt(topic="TopicTest", body=f"plain {i}".encode(), queue_id=i % 2,
                                     properties={"UNIQ_KEY": f"HANDMADE{i:024d}", "TAGS": "TagA"}))
    for i in range(3, 5):
        msgs.append(codec.MessageExt(topic="SCHEDULE_TOPIC_XXXX", body=f"delayed {i}".encode(), queue_id=1,
                                     properties={"UNIQ_KEY": f"HANDMADE{i:024d}", "DELAY": "2",
                                                 "REAL_TOPIC": "TopicTest", "REAL_QID": "0", "TAGS": "TagA"}))
    data, queue_offsets = b"", {}
    for i, msg in enumerate(msgs):
        key = (msg.topic, msg.queue_id)
        prep = codec.prepare_message(msg)
        data += codec.encode_message(prep, queue_offsets.get(key, 0), len(data), base_ms + 1000 * i)
        queue_offsets[key] = queue_offsets.get(key, 0) + 1
    (root / "commitlog").mkdir(parents=True)
    (root / "commitlog" / ("0" * 20)).write_bytes(data + bytes(65536 - len(data)))
    (root / "config").mkdir()
    offsets = {"offsetTable": {"TopicTest@GroupA": {0: 0, 1: 0}}}
    (root / "config" / "consumerOffset.json").write_text(fastjson.dumps(offsets), encoding="utf-8")
    if abort:
        (root / "abort").write_bytes(b"")
    return [m.properties["UNIQ_KEY"] for m in msgs]


@pytest.mark.parametrize("abort", [False, True])
def test_a_hand_made_store_without_consume_queues_is_rebuilt_and_delivered(tmp_path, abort):
    root = tmp_path / "store"
    ids = _hand_made_store(root, abort=abort)
    (root / "index").mkdir()
    (root / "index" / "20250101000000000").write_bytes(b"\x01" * 1000)  # not modelled: not copied
    scenario = _scenario(SCENARIO_C, "c.toml")
    image = _image(root, scenario)
    assert image.sizes["mapped_file_size_commit_log"] == 65536
    assert image.last_exit_ok is not abort
    out = tmp_path / "out"
    result = run_scenario(scenario, from_store=image, out_dir=str(out))
    assert not (root / "consumequeue").exists()  # DIR untouched
    assert (out / "store" / "consumequeue" / "TopicTest" / "0").is_dir()  # recovery rebuilt the queues
    assert (out / "store" / "consumequeue" / "SCHEDULE_TOPIC_XXXX" / "1").is_dir()
    assert not (out / "store" / "index").exists()
    consumed = {e["msg_id"] for e in _events(result, "consume") if e["status"] == "CONSUME_SUCCESS"}
    assert set(ids) <= consumed
    delivered = {e["msg_id"] for e in _events(result, "deliver")}
    assert set(ids[3:]) <= delivered
    inv = result.summary["invariants"]
    assert result.summary["verdict"] == "holds", {k: v["violations"][:1] for k, v in inv.items() if not v["holds"]}
    assert inv["no_loss"]["checked"] == 1 + 5
    assert inv["no_early_delivery"]["checked"] >= 2


# --- (3) bad input ------------------------------------------------------------------------------------------------
def _run_cli(capsys, *argv) -> tuple[int, str]:
    code = main(["run", *argv])
    return code, capsys.readouterr().err


def _scenario_file(tmp_path) -> str:
    path = tmp_path / "c.toml"
    path.write_text(SCENARIO_C, encoding="utf-8")
    return str(path)


def test_not_a_store_dir_is_exit_2_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    (tmp_path / "empty").mkdir()
    code, err = _run_cli(capsys, _scenario_file(tmp_path), "--from-store", str(tmp_path / "empty"), "--out", str(out))
    assert code == 2 and str(tmp_path / "empty") in err and "not a RocketMQ store directory" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    code, err = _run_cli(capsys, _scenario_file(tmp_path), "--from-store", str(tmp_path / "nope"), "--out", str(out))
    assert code == 2 and "not a directory" in err and not out.exists()


def test_a_corrupt_record_is_exit_2_with_the_path_and_offset(tmp_path, capsys):
    root = tmp_path / "store"
    _hand_made_store(root)
    log = root / "commitlog" / ("0" * 20)
    data = bytearray(log.read_bytes())
    second = int.from_bytes(data[0:4], "big")  # the second record starts where the first ends
    data[second + 4] ^= 0xFF  # its magic code
    log.write_bytes(bytes(data))
    before = _tree_digest(root)
    out = tmp_path / "out"
    code, err = _run_cli(capsys, _scenario_file(tmp_path), "--from-store", str(root), "--out", str(out))
    assert code == 2 and str(log) in err and f"at offset {second}" in err, err
    assert len(err.strip().splitlines()) == 1 and not out.exists() and _tree_digest(root) == before


def test_a_corrupt_config_file_is_exit_2_with_the_path_and_offset(tmp_path, capsys):
    root = tmp_path / "store"
    _hand_made_store(root)
    bad = root / "config" / "consumerOffset.json"
    bad.write_text('{"offsetTable": {"TopicTest@GroupA": {0: 0,, }}}', encoding="utf-8")
    out = tmp_path / "out"
    code, err = _run_cli(capsys, _scenario_file(tmp_path), "--from-store", str(root), "--out", str(out))
    assert code == 2 and str(bad) in err and "offset" in err, err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_a_torn_tail_after_an_abnormal_exit_is_cut_as_recovery_cuts_it(tmp_path, capsys):
    """With the abort file a bad record in the last file is the torn write of a crash: accepted, and neither the
    recovery nor the population keeps it or anything after it. Without the abort file it is corruption: exit 2."""
    root = tmp_path / "store"
    ids = _hand_made_store(root, abort=True)
    log = root / "commitlog" / ("0" * 20)
    data = bytearray(log.read_bytes())
    pos = 0
    for _ in range(3):  # the fourth record (the first delayed message)
        pos += int.from_bytes(data[pos:pos + 4], "big")
    body_at = data.find(b"delayed 3")
    assert pos < body_at < pos + int.from_bytes(data[pos:pos + 4], "big")
    data[body_at] ^= 0x01  # its body no longer matches its BODYCRC
    log.write_bytes(bytes(data))
    scenario = _scenario(SCENARIO_C, "c.toml")
    image = _image(root, scenario)
    assert {c["msg_id"] for c in image.copies} == set(ids[:3])
    result = run_scenario(scenario, from_store=image)
    consumed = {e["msg_id"] for e in _events(result, "consume") if e["status"] == "CONSUME_SUCCESS"}
    assert set(ids[:3]) <= consumed and not set(ids[3:]) & consumed
    assert result.summary["verdict"] == "holds"
    (root / "abort").unlink()
    code, err = _run_cli(capsys, _scenario_file(tmp_path), "--from-store", str(root), "--out", str(tmp_path / "o"))
    assert code == 2 and f"at offset {pos}" in err, err


def test_a_commit_log_file_of_another_size_is_exit_2(tmp_path):
    root = tmp_path / "store"
    _hand_made_store(root)
    (root / "commitlog" / f"{65536:020d}").write_bytes(bytes(1000))
    with pytest.raises(StoreImageError, match="differs from 65536"):
        _image(root, _scenario(SCENARIO_C, "c.toml"))


# --- (4) determinism ---------------------------------------------------------------------------------------------
@pytest.mark.slow  # child processes (seconds); tests/sim/test_determinism.py checks across processes by default
def test_same_inputs_give_the_same_history_in_other_processes(store_of_a, tmp_path):
    scenario_file = tmp_path / "b.toml"
    scenario_file.write_text(SCENARIO_B, encoding="utf-8")
    hashes = []
    for i, hash_seed in enumerate(("0", "12345")):
        out = tmp_path / f"out{i}"
        env = dict(os.environ, PYTHONPATH=os.getcwd(), PYTHONHASHSEED=hash_seed)
        done = subprocess.run([sys.executable, "-m", "scenarios.cli", "run", str(scenario_file), "--from-store",
                               str(store_of_a), "--out", str(out)], capture_output=True, text=True, env=env,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        hashes.append(json.loads((out / "summary.json").read_text())["history_sha256"])
    assert hashes[0] == hashes[1]
    code = main(["replay", str(tmp_path / "out0")])
    assert code == 0


# --- the README's example runs as written ---------------------------------------------------------------------------
def _readme_block() -> list[str]:
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    section = text.split("### Starting on a store: `rmqsim run --from-store`", 1)[1]
    block = section.split("```", 2)[1]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.startswith("rmqsim ")]


def test_the_readme_example_runs_as_written_and_says_what_the_readme_says(tmp_path, monkeypatch, capsys):
    import shlex

    repo = os.path.join(os.path.dirname(__file__), "..", "..")
    os.symlink(os.path.abspath(os.path.join(repo, "examples")), tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    commands = _readme_block()
    assert [c.split()[1] for c in commands] == ["run", "inspect", "run", "run"]
    outputs = []
    for command in commands:
        assert main(shlex.split(command)[1:]) == 0, command
        outputs.append(capsys.readouterr().out)
    assert "waiting in delay level 16" in outputs[1]
    for name, out in (("kill-now", outputs[2]), ("level-16-is-5m", outputs[3])):
        assert "no_loss (10 checked)" in out and "dlq_after_max_retries (20 checked)" in out, out
        summary = json.loads((tmp_path / "out" / name / "summary.json").read_text())
        assert summary["verdict"] == "holds"
    kill = [json.loads(line) for line in (tmp_path / "out" / "kill-now" / "history.jsonl").read_text().splitlines()]
    crash = next(e for e in kill if e["kind"] == "crash")
    assert all(e["t_ms"] > crash["t_ms"] for e in kill if e["kind"] == "deliver")  # delivered after the kill
    early = [json.loads(line) for line in
             (tmp_path / "out" / "level-16-is-5m" / "history.jsonl").read_text().splitlines()]
    validate_history(early)
    delivers = [e for e in early if e["kind"] == "deliver"]
    assert len(delivers) == 10 and all(e["due_ms"] - e["broker_ms"] > 29 * 60_000 for e in delivers)
    corrected = [e for e in early if e["kind"] == "preloaded" and e["state"] == "pending"]
    assert len(corrected) == 10 and all(e["due_ms"] == e["broker_ms"] for e in corrected)
    summary = json.loads((tmp_path / "out" / "level-16-is-5m" / "summary.json").read_text())
    assert summary["stats"]["lateness_ms"]["max"] == 1000  # from the corrected due time, as the README says


# --- retry copies keep their reconsumeTimes ----------------------------------------------------------------------
# RA: five messages whose first attempt fails near the end: their retry copies wait in level 3 when RA ends (and the
# originals' offsets may not be committed yet, so B consumes some of them again).
SCENARIO_RA = """
name = "retries-pending"
seed = 1
duration = "5s"
drain = "3s"

[[topic]]
name = "TopicTest"
queues = 2

[[producer]]
topic = "TopicTest"
messages = 5
rate = "1/s"

[[consumer]]
group = "GroupA"
topic = "TopicTest"
max_reconsume_times = 16
fail_first = 1
"""

SCENARIO_RB = """
name = "retries-consumed"
seed = 1
duration = "5s"
drain = "2m"

[[topic]]
name = "TopicTest"
queues = 2

[[consumer]]
group = "GroupA"
topic = "TopicTest"
max_reconsume_times = {limit}
fail_first = {fail}
"""


@pytest.fixture(scope="module")
def store_with_retries(tmp_path_factory):
    out = tmp_path_factory.mktemp("ra")
    run_scenario(_scenario(SCENARIO_RA, "ra.toml"), disk="os", out_dir=str(out))
    return out / "store"


def test_pending_retry_copies_keep_their_reconsume_times(store_with_retries):
    scenario = _scenario(SCENARIO_RB.format(limit=16, fail=0), "rb.toml")
    result = run_scenario(scenario, from_store=_image(store_with_retries, scenario))
    preloaded = _events(result, "preloaded")
    retries = {e["msg_id"] for e in preloaded if e["state"] == "pending" and e["real_topic"] == "%RETRY%GroupA"}
    assert len(retries) == 5 and all(e["reconsume_times"] == 1 for e in preloaded if e["msg_id"] in retries
                                     and e["real_topic"] == "%RETRY%GroupA")
    from_retry = [e for e in _events(result, "consume") if e["queue_topic"] == "%RETRY%GroupA"]
    assert {e["msg_id"] for e in from_retry} == retries and all(e["reconsume_times"] == 1 for e in from_retry)
    inv = result.summary["invariants"]
    assert result.summary["verdict"] == "holds", {k: v["violations"][:1] for k, v in inv.items() if not v["holds"]}


def test_a_limit_lowered_under_the_store_dead_letters_its_retries_at_once(store_with_retries):
    """maxReconsumeTimes 0 now, while the store holds retry copies with reconsumeTimes 1: each failed attempt of
    such a copy is dead-lettered with reconsumeTimes 2 (RocketMQ's ``reconsumeTimes >= max``), not a violation;
    and the retry copy is the store's own, not a retry sent back too early."""
    scenario = _scenario(SCENARIO_RB.format(limit=0, fail=5), "rb.toml")
    result = run_scenario(scenario, from_store=_image(store_with_retries, scenario))
    dlq = _events(result, "dlq")
    assert any(e["reconsume_times"] == 2 for e in dlq)
    inv = result.summary["invariants"]
    assert inv["dlq_after_max_retries"]["holds"] and inv["retry_schedule"]["holds"]
    assert result.summary["verdict"] == "holds", {k: v["violations"][:1] for k, v in inv.items() if not v["holds"]}


# --- timer messages --------------------------------------------------------------------------------------------------
SCENARIO_TA = """
name = "timer-pending"
seed = 1
duration = "20s"
drain = "10s"

[[topic]]
name = "TopicTest"
queues = 2

[[producer]]
topic = "TopicTest"
messages = 10
rate = "1/s"
timer_delay = "10m"

[[consumer]]
group = "GroupA"
topic = "TopicTest"
"""


@pytest.mark.slow  # a timer store run twice (seconds); tests/store/timer/test_recovery.py restarts timers by default
def test_pending_timer_messages_are_delivered_after_the_restart(tmp_path):
    """The store's timer log, wheel and config/timercheck come along: messages waiting on the wheel come due."""
    out = tmp_path / "ta"
    run_scenario(_scenario(SCENARIO_TA, "ta.toml"), disk="os", out_dir=str(out))
    scenario = _scenario(SCENARIO_RB.format(limit=16, fail=0).replace('drain = "2m"', 'drain = "15m"'), "tb.toml")
    image = _image(out / "store", scenario)
    assert image.sizes["timer_slots_total"] > 0 and image.sizes["mapped_file_size_timer_log"] > 0
    result = run_scenario(scenario, from_store=image)
    waiting = {e["msg_id"] for e in _events(result, "preloaded") if e["topic"] == "rmq_sys_wheel_timer"
               and e["state"] == "pending"}
    assert len(waiting) == 10
    delivered = {e["msg_id"] for e in _events(result, "deliver") if e["level"] == "timer"}
    assert waiting <= delivered
    inv = result.summary["invariants"]
    assert inv["no_loss"]["checked"] == 10 and inv["no_early_delivery"]["checked"] >= 10
    assert result.summary["verdict"] == "holds", {k: v["violations"][:1] for k, v in inv.items() if not v["holds"]}


@pytest.mark.parametrize("name, text, says", [
    ("consumerOffset.json", '{"offsetTable": [1, 2]}', "offsetTable must be an object"),
    ("delayOffset.json", '{"offsetTable": {"1": "x"}}', "invalid literal"),
])
def test_a_config_file_the_broker_cannot_decode_is_exit_2(tmp_path, capsys, name, text, says):
    """Parseable JSON of the wrong shape: RocketMQ logs an ERROR and starts with an empty table (every offset
    forgotten); from a store given as input that is bad input, not a run."""
    root = tmp_path / "store"
    _hand_made_store(root)
    (root / "config" / name).write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    code, err = _run_cli(capsys, _scenario_file(tmp_path), "--from-store", str(root), "--out", str(out))
    assert code == 2 and str(root) in err and name in err and says in err, err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_trace_shows_the_copies_the_store_held(store_of_a, tmp_path, capsys):
    scenario_file = tmp_path / "b.toml"
    scenario_file.write_text(SCENARIO_B, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["run", str(scenario_file), "--from-store", str(store_of_a), "--out", str(out)]) == 0
    events = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    pending = next(e for e in events if e["kind"] == "preloaded" and e["state"] == "pending")
    dead = next(e for e in events if e["kind"] == "preloaded" and e["topic"] == "%DLQ%GroupA")
    capsys.readouterr()
    assert main(["trace", str(out), pending["msg_id"]]) == 0
    text = capsys.readouterr().out
    assert ": consumed" in text.splitlines()[0]
    assert "in the store at the start: SCHEDULE_TOPIC_XXXX level 16" in text and "waiting for TopicTest" in text
    assert main(["trace", str(out), dead["msg_id"]]) == 0
    text = capsys.readouterr().out
    assert "dead-lettered before the run" in text.splitlines()[0] and "%DLQ%GroupA queue 0" in text


def test_damaged_stores_are_refused_or_run_never_a_traceback(tmp_path):
    """Bytes flipped anywhere in the commit log or consumerOffset.json (with or without the abort file): the store
    is refused with a StoreImageError, or the run gives a verdict. Damage no CRC covers (a header field, a property)
    may make RocketMQ itself lose a message, and then the verdict says so. It is never a simulator error."""
    import random
    import shutil

    rng = random.Random(5)
    _hand_made_store(tmp_path / "orig")
    scenario = _scenario(SCENARIO_C, "c.toml")
    outcomes = {"refused": 0, "holds": 0, "violated": 0}
    for i in range(40):
        root = tmp_path / f"s{i}"
        shutil.copytree(tmp_path / "orig", root)
        if rng.random() < 0.3:
            (root / "abort").write_bytes(b"")
        target = rng.choice([root / "commitlog" / ("0" * 20), root / "config" / "consumerOffset.json"])
        data = bytearray(target.read_bytes())
        limit = 900 if target.parent.name == "commitlog" else len(data)  # where the five records are
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(limit)] = rng.randrange(256)
        target.write_bytes(bytes(data))
        try:
            image = _image(root, scenario)
        except StoreImageError as error:
            assert str(root) in str(error)
            outcomes["refused"] += 1
            continue
        result = run_scenario(scenario, from_store=image)
        assert result.summary["verdict"] in ("holds", "violated"), result.summary.get("simulator_error")
        outcomes[result.summary["verdict"]] += 1
    assert all(outcomes.values()), outcomes  # each outcome seen: the damage was varied enough
