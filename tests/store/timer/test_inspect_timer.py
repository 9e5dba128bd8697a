"""``rmqsim inspect`` decodes a timer store written by the real broker on the OS disk, read-only."""

from __future__ import annotations

import hashlib
import json
import os
import random

from scenarios.inspect_text import format_inspection
from store.broker.broker_controller import BrokerController
from store.clock import ManualClock
from store.disk import OsDisk
from store.driver import run_for
from store.inspect import inspect_store_dir
from store.message import MessageExt, java_string_hash

from .helpers import TIMER_STORE, TOPIC

T0 = 1_700_000_000_000


def tree_digest(root) -> dict:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[path] = (hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_mtime_ns)
    return out


def test_inspect_decodes_wheel_timer_log_and_checkpoint(tmp_path):
    root = tmp_path / "store"
    clock = ManualClock(T0, monotonic_start_ms=0)
    config = TIMER_STORE.with_(timer_roll_window_slot=20)  # 20 s: the 30 s and 60 s delays are rolled
    broker = BrokerController(OsDisk(str(root)), clock, rng=random.Random(1), store_config=config)
    broker.initialize()
    broker.start(0)
    broker.topic_config_manager.create_topic_in_send_message_method(TOPIC, "TBW102", 4)

    def run(ms):
        run_for(lambda: broker.all_services, clock, ms)

    run(1500)
    for n, delay in enumerate([2000, 2000, 30_000] + [60_000] * 8):
        broker.send_message(MessageExt(topic=TOPIC, body=b"x", properties={"UNIQ_KEY": f"k{n}",
                                                                           "TIMER_DELAY_MS": str(delay)}), "P")
    run(4000)  # the two 2 s messages are delivered, the others wait; flushes have run
    broker.shutdown()

    before = tree_digest(root)
    doc = inspect_store_dir(str(root))
    assert tree_digest(root) == before  # read-only
    json.dumps(doc)
    timer = doc["timer"]

    cp = timer["checkpoint"]
    assert cp["last_read_time_ms"] == broker.timer_message_store.commit_read_time_ms
    assert cp["master_timer_queue_offset"] == cp["last_timer_queue_offset"] == 11
    assert cp["data_version"]["counter"] > 0

    log = timer["timerlog"]
    assert log["unit_size"] == 52 and log["file_size"] == 52 * 8 + 16
    assert log["files"] == ["00000000000000000000", "00000000000000000432"]  # 11 units: 8 + a blank, then 3
    assert log["unit_count"] == 11 and log["min_offset"] == 0 and log["max_offset"] == 432 + 3 * 52
    assert log["errors"] == []
    units = log["units"]
    assert [u["pos"] for u in units] == [52 * n for n in range(8)] + [432, 484, 536]
    first = units[0]
    assert first["flags"] == ["DEFAULT"] and first["prev_pos"] == -1 and first["size"] == 52
    assert first["delayed_time_ms"] == T0 + 3000 and first["real_topic_hash"] == java_string_hash(TOPIC)
    assert units[1]["prev_pos"] == 0  # same slot: chained to the first
    rolled = [u for u in units if "ROLL" in u["flags"]]
    assert len(rolled) == 9 and {u["delayed_time_ms"] for u in rolled} == {T0 + 1000 + 20_000}  # write + window

    wheel = timer["wheel"]
    assert (wheel["file_size"], wheel["slots_total"], wheel["slot_count"]) == (600 * 64, 600, 1200)
    assert (wheel["precision_ms"], wheel["precision_source"], wheel["used_slot_count"]) == (1000, "timerlog", 2)
    assert wheel["errors"] == []
    done, pending = wheel["slots"]
    assert done == {"index": (T0 + 3000) // 1000 % 1200, "time_units": (T0 + 3000) // 1000, "time_ms": T0 + 3000,
                    "first_pos": 0, "last_pos": 52, "num": 2, "magic": 0, "pending": False}
    assert (pending["time_ms"], pending["first_pos"], pending["last_pos"], pending["num"], pending["pending"]) == (
        T0 + 21_000, 104, 536, 9, True)

    text = format_inspection(doc)
    assert "timerwheel: 1200 slots (slotsTotal 600), precision 1000 ms (timerlog), 2 used" in text
    assert "timerlog: 2 file(s) of 432 bytes, offsets [0, 588), 11 unit(s), 0 error(s)" in text
    assert "DEFAULT|ROLL" in text and "pending" in text

    limited = inspect_store_dir(str(root), max_entries=2)["timer"]
    assert len(limited["timerlog"]["units"]) == 2 and limited["timerlog"]["unit_count"] == 11
    assert len(limited["wheel"]["slots"]) == 2


def test_no_timer_files_no_timer_section(tmp_path):
    (tmp_path / "commitlog").mkdir()
    assert "timer" not in inspect_store_dir(str(tmp_path))
