"""The real-clock driver runs the very same services on the system clock: nothing needs the simulator."""

from __future__ import annotations

import random

from store.broker.broker_controller import BrokerController
from store.client.api import PullMessageRequest
from store.config import MessageStoreConfig
from store.disk import OsDisk
from store.driver import SystemClock, run_services
from store.message import PROPERTY_DELAY_TIME_LEVEL, MessageExt


def test_a_level_1_message_is_delivered_after_at_least_one_second_of_real_time(tmp_path):
    clock = SystemClock()
    config = MessageStoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 64)
    broker = BrokerController(OsDisk(str(tmp_path / "store")), clock, rng=random.Random(1), store_config=config)
    broker.initialize()
    start_mono = clock.monotonic_ms()
    broker.start(start_mono)
    broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 1)
    sent_ms = clock.now_ms()
    msg = MessageExt(topic="TopicTest", queue_id=0, body=b"real", properties={"UNIQ_KEY": "r1",
                                                                             PROPERTY_DELAY_TIME_LEVEL: "1"})
    broker.send_message(msg, "P")
    broker.heart_beat("c1", "G", "CLUSTERING", ["TopicTest"])  # the client pulling below heartbeats first

    found = []

    def delivered() -> bool:
        broker.pull_message_async(PullMessageRequest("G", "TopicTest", 0, 0, 1, 0, suspend=False),
                                  lambda result: found.extend(result.msg_found_list))
        return bool(found)

    assert run_services(lambda: broker.all_services, clock, delivered, start_mono + 5000)
    (got,) = found
    assert got.properties["UNIQ_KEY"] == "r1"
    assert got.store_timestamp - sent_ms >= 1000  # level 1 = 1 s on the real clock
    broker.shutdown()
    assert (tmp_path / "store" / "config" / "delayOffset.json").exists()


def test_monotonic_time_advances_during_a_live_run(tmp_path):
    """The broker reads monotonic time from its clock: a pull held after 150 ms of a live run is stamped then,
    not at the start (the old ``set_mono`` push was never made by this driver, so time stood still)."""
    clock = SystemClock()
    config = MessageStoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 64)
    broker = BrokerController(OsDisk(str(tmp_path / "store")), clock, rng=random.Random(1), store_config=config)
    broker.initialize()
    start_mono = clock.monotonic_ms()
    broker.start(start_mono)
    broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 1)
    broker.heart_beat("c1", "G", "CLUSTERING", ["TopicTest"])
    assert run_services(lambda: broker.all_services, clock, lambda: clock.monotonic_ms() >= start_mono + 150,
                        start_mono + 5000)
    answers = []
    broker.pull_message_async(PullMessageRequest("G", "TopicTest", 0, 0, 1, 0, suspend=True), answers.append)
    assert answers == []  # nothing to read: held for long polling
    ((held,),) = broker.pull_processor.held.values()
    assert held.suspend_mono_ms >= start_mono + 150
    assert broker.hold_service.next_wakeup_ms() >= clock.monotonic_ms()  # the 5 s grid is kept from now
    broker.shutdown()


def test_only_the_driver_reads_real_time():
    """Every other module of store/ gets time from the clock it was given: no ``time`` import and no
    ``datetime.now()`` (calendar arithmetic on a given timestamp is fine)."""
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / "store"
    readers = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            reads_now = (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                         and node.func.attr in ("now", "utcnow", "today") and isinstance(node.func.value, ast.Name)
                         and node.func.value.id in ("datetime", "date"))
            if reads_now or any(name.split(".")[0] == "time" for name in names):
                readers.append(path.relative_to(root).as_posix())
    assert sorted(set(readers)) == ["driver.py"]
