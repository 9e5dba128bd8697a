"""inspect: a store directory built by hand with the codec is read back as recovery would see it."""

from __future__ import annotations

import hashlib
import json
import os
import struct

import pytest

from scenarios.inspect_text import format_inspection
from store.inspect import inspect_store_dir
from store.message import (
    MessageExt,
    create_message_id,
    encode_blank,
    encode_message,
    java_string_hash,
    prepare_message,
)

FILE_SIZE = 4096
BROKER = (bytes([10, 0, 0, 5]), 10911)
CQ_UNIT = struct.Struct(">qiq")


def record(topic: str, queue_id: int, queue_offset: int, phy_offset: int, body: bytes, **props) -> bytes:
    msg = MessageExt(topic=topic, queue_id=queue_id, body=body, properties=props, born_timestamp=1_700_000_000_000,
                     store_host=BROKER)
    return encode_message(prepare_message(msg), queue_offset, phy_offset, 1_700_000_000_500 + phy_offset)


def write(path, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def name(offset: int) -> str:
    return "%020d" % offset


@pytest.fixture
def store_dir(tmp_path):
    """Three commit-log files: blank-terminated, corrupt in the middle, a size-mismatch record then a good one."""
    root = tmp_path / "store"
    layout = {}  # label -> (phy_offset, size)

    # file 0: A, B, C, then a blank and filler
    f0 = b""
    for label, queue_id, queue_offset, body in (("A", 0, 0, b"alpha"), ("B", 1, 1, b"beta"), ("C", 0, 1, b"gamma")):
        rec = record("TopicTest", queue_id, queue_offset, len(f0), body, TAGS="TagA", UNIQ_KEY=f"U-{label}")
        layout[label] = (len(f0), len(rec))
        f0 += rec
    layout["blank"] = (len(f0), FILE_SIZE - len(f0))
    f0 += encode_blank(FILE_SIZE - len(f0))
    f0 += b"\xab" * (FILE_SIZE - len(f0))  # garbage after the blank is never read
    write(root / "commitlog" / name(0), f0)

    # file 1: D, then E with a flipped body byte, then F which recovery never reaches
    f1 = b""
    d = record("TopicTest", 0, 2, 4096, b"delta", KEYS="kd")
    layout["D"] = (4096, len(d))
    f1 += d
    e = bytearray(record("%RETRY%G", 0, 0, 4096 + len(f1), b"epsilon"))
    e[88] ^= 0x20
    layout["E"] = (4096 + len(f1), len(e))
    f1 += bytes(e)
    f1 += record("TopicTest", 0, 3, 4096 + len(f1), b"phi")
    write(root / "commitlog" / name(4096), f1.ljust(FILE_SIZE, b"\0"))

    # file 2: G with TOTALSIZE grown by 4 (skipped by that size), H right after, then the zero tail
    g = bytearray(record("TopicTest", 1, 2, 8192, b"g"))
    real = len(g)
    g[0:4] = (real + 4).to_bytes(4, "big")
    h = record("T" * 130, 0, 0, 8192 + real + 4, b"hotel")  # a V2 record
    layout["G"] = (8192, real + 4)
    layout["H"] = (8192 + real + 4, len(h))
    write(root / "commitlog" / name(8192), (bytes(g) + b"\0" * 4 + h).ljust(FILE_SIZE, b"\0"))
    write(root / "commitlog" / name(12288), b"")  # an empty file is skipped

    # consume queues: TopicTest/0 spans two files of 8 units; TopicTest/1 has a pre-blank and an invalid unit
    q0_units = [(layout["A"][0], layout["A"][1], java_string_hash("TagA"))] * 8
    write(root / "consumequeue" / "TopicTest" / "0" / name(0), b"".join(CQ_UNIT.pack(*u) for u in q0_units))
    write(root / "consumequeue" / "TopicTest" / "0" / name(160),
          CQ_UNIT.pack(layout["D"][0], layout["D"][1], 0).ljust(160, b"\0"))
    q1 = [CQ_UNIT.pack(0, 2147483647, 0), CQ_UNIT.pack(layout["B"][0], layout["B"][1], 7),
          CQ_UNIT.pack(-1, 10, 0), CQ_UNIT.pack(layout["C"][0], layout["C"][1], 0)]
    write(root / "consumequeue" / "TopicTest" / "1" / name(0), b"".join(q1).ljust(160, b"\0"))
    os.makedirs(root / "consumequeue" / "TopicTest" / "notAQueue")

    # config, checkpoint, abort
    write(root / "config" / "topics.json",
          b'{\n\t"topicConfigTable":{\n\t\t"TopicTest":{\n\t\t\t"perm":6,\n\t\t\t"readQueueNums":4\n\t\t}\n\t}\n}')
    write(root / "config" / "topics.json.bak", b'{"topicConfigTable":{}}')
    write(root / "config" / "consumerOffset.json",
          b'{\n\t"offsetTable":{\n\t\t"TopicTest@G":{0:250,1:248\n\t\t}\n\t}\n}')
    write(root / "config" / "broken.json", b'{"offsetTable":')
    write(root / "config" / "timercheck", bytes(4096))  # not JSON: not listed
    write(root / "checkpoint", struct.pack(">qqqqq", 1_700_000_001_000, 1_700_000_000_900, 0, 5, 6).ljust(4096, b"\0"))
    write(root / "abort", b"")
    return str(root), layout


def test_commit_log_scan_follows_recovery(store_dir):
    root, layout = store_dir
    doc = inspect_store_dir(root)
    cl = doc["commitlog"]
    assert cl["file_size"] == FILE_SIZE
    assert cl["files"] == [name(0), name(4096), name(8192)]
    assert cl["min_offset"] == 0
    assert cl["max_offset"] == layout["H"][0] + layout["H"][1]
    assert [r["phy_offset"] for r in cl["records"]] == [layout[k][0] for k in "ABCDH"]
    assert cl["record_count"] == 5

    a = cl["records"][0]
    assert a == {
        "phy_offset": 0, "file": name(0), "pos": 0, "total_size": layout["A"][1], "magic": "V1",
        "body_crc": a["body_crc"], "queue_id": 0, "flag": 0, "queue_offset": 0, "physical_offset": 0,
        "sys_flag": 0, "born_timestamp": 1_700_000_000_000, "born_host": "127.0.0.1:0",
        "store_timestamp": 1_700_000_000_500, "store_host": "10.0.0.5:10911", "reconsume_times": 0,
        "prepared_transaction_offset": 0, "topic": "TopicTest", "body_len": 5, "body_preview": "alpha",
        "properties": {"TAGS": "TagA", "UNIQ_KEY": "U-A"}, "msg_id": create_message_id(BROKER, 0),
    }
    h = cl["records"][-1]
    assert (h["magic"], h["topic"], h["file"], h["pos"]) == ("V2", "T" * 130, name(8192), layout["G"][1])

    errors = [(e["file"], e["pos"], e["phy_offset"]) for e in cl["errors"]]
    assert errors == [(name(4096), layout["D"][1], layout["E"][0]), (name(8192), 0, 8192)]
    assert "CRC" in cl["errors"][0]["error"]
    assert "TOTALSIZE" in cl["errors"][1]["error"]


def test_consume_queues(store_dir):
    root, layout = store_dir
    cq = inspect_store_dir(root)["consumequeue"]
    assert list(cq) == ["TopicTest"] and list(cq["TopicTest"]) == ["0", "1"]
    q0 = cq["TopicTest"]["0"]
    assert (q0["unit_size"], q0["files"], q0["min_offset"], q0["max_offset"]) == (20, [name(0), name(160)], 0, 9)
    assert q0["units"][8] == {"queue_offset": 8, "commit_log_offset": layout["D"][0], "size": layout["D"][1],
                              "tags_code": 0}
    assert q0["units"][0]["tags_code"] == java_string_hash("TagA")
    q1 = cq["TopicTest"]["1"]
    assert (q1["min_offset"], q1["max_offset"], q1["unit_count"]) == (0, 2, 2)
    assert q1["units"][0] == {"queue_offset": 0, "commit_log_offset": 0, "size": 2147483647, "tags_code": 0}


def test_config_checkpoint_abort(store_dir):
    root, _ = store_dir
    doc = inspect_store_dir(root)
    config = doc["config"]
    assert sorted(config) == ["broken.json", "consumerOffset.json", "topics.json", "topics.json.bak"]
    assert config["topics.json"] == {"topicConfigTable": {"TopicTest": {"perm": 6, "readQueueNums": 4}}}
    assert config["topics.json.bak"] == {"topicConfigTable": {}}
    assert set(config["broken.json"]) == {"error"}
    assert doc["checkpoint"] == {"physic_msg_timestamp": 1_700_000_001_000, "logics_msg_timestamp": 1_700_000_000_900,
                                 "index_msg_timestamp": 0, "master_flushed_offset": 5, "confirm_phy_offset": 6}
    assert doc["abort"] is True
    # config/timercheck exists (all zeros) but no wheel or timer log: only the checkpoint is decoded.
    assert doc["timer"] == {"checkpoint": {"last_read_time_ms": 0, "last_timer_log_flush_pos": 0,
                                           "last_timer_queue_offset": 0, "master_timer_queue_offset": 0,
                                           "data_version": {"state_version": 0, "timestamp": 0, "counter": 0}},
                            "wheel": None, "timerlog": None}
    json.dumps(doc)  # the document is JSON-serialisable as it is


def test_fastjson_integer_keys_become_strings(store_dir):
    root, _ = store_dir
    parsed = inspect_store_dir(root)["config"]["consumerOffset.json"]
    assert parsed == {"offsetTable": {"TopicTest@G": {"0": 250, "1": 248}}}


def test_object_keys_of_the_client_offsets_file_become_json_text(tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    (config / "offsets.json").write_text('{"offsetTable":{{"brokerName":"b","queueId":3,"topic":"T"}:7}}')
    parsed = inspect_store_dir(str(tmp_path))["config"]["offsets.json"]
    assert parsed == {"offsetTable": {'{"brokerName":"b","queueId":3,"topic":"T"}': 7}}


def test_short_or_missing_checkpoint_and_empty_root(tmp_path):
    write(tmp_path / "checkpoint", struct.pack(">qq", 11, 22) + b"\x01\x02")
    doc = inspect_store_dir(str(tmp_path))
    assert doc["checkpoint"] == {"physic_msg_timestamp": 11, "logics_msg_timestamp": 22}
    assert doc["commitlog"] == {"file_size": 0, "files": [], "min_offset": 0, "max_offset": 0,
                                "record_count": 0, "records": [], "errors": []}
    assert doc["consumequeue"] == {} and doc["config"] == {} and doc["abort"] is False
    os.remove(tmp_path / "checkpoint")
    assert inspect_store_dir(str(tmp_path))["checkpoint"] is None


def test_inspect_never_writes(store_dir):
    root, _ = store_dir

    def snapshot():
        out = {}
        for dirpath, _, files in os.walk(root):
            for f in files:
                path = os.path.join(dirpath, f)
                with open(path, "rb") as fh:
                    out[path] = hashlib.sha256(fh.read()).hexdigest()
        return out

    before = snapshot()
    inspect_store_dir(root)
    assert snapshot() == before


def test_max_entries_caps_the_lists_not_the_counts(store_dir):
    root, layout = store_dir
    doc = inspect_store_dir(root, max_entries=2)
    assert len(doc["commitlog"]["records"]) == 2 and doc["commitlog"]["record_count"] == 5
    assert doc["commitlog"]["max_offset"] == layout["H"][0] + layout["H"][1]
    q0 = doc["consumequeue"]["TopicTest"]["0"]
    assert len(q0["units"]) == 2 and q0["unit_count"] == 9 and q0["max_offset"] == 9
    assert "3 more record(s) not listed" in format_inspection(doc)


def test_format_inspection_text(store_dir):
    root, layout = store_dir
    text = format_inspection(inspect_store_dir(root))
    lines = text.splitlines()
    assert lines[0] == f"store {root}"
    assert "abort file: present (the last shutdown was not clean)" in lines
    assert "  physic_msg_timestamp = 1700000001000  (2023-11-14 22:13:21.000Z)" in lines
    end = layout["H"][0] + layout["H"][1]
    assert f"commitlog: 3 file(s) of 4096 bytes, offsets [0, {end}), 5 record(s), 2 error(s)" in lines
    assert any(line.startswith(f"  @0 {name(0)}+0 V1 size {layout['A'][1]}: TopicTest q0 #0 stored 2023-11-14")
               for line in lines)
    assert "      TAGS=TagA UNIQ_KEY=U-A" in lines
    assert "      body 'alpha'" in lines
    crc_line = [line for line in lines if line.startswith("  ERROR ")][0]
    assert crc_line.startswith(f"  ERROR {name(4096)} pos {layout['D'][1]} (phy {layout['E'][0]}): body CRC mismatch")
    assert "consumequeue: 2 queue(s) in 1 topic(s)" in lines
    assert "  TopicTest/1: offsets [0, 2) in 1 file(s)" in lines
    assert f"    #1 -> phy {layout['B'][0]} size {layout['B'][1]} tagsCode 7" in lines
    assert "config: 4 file(s)" in lines
    assert any(line.startswith("  broken.json: ERROR ") for line in lines)
    assert '  topics.json: {"topicConfigTable":{"TopicTest":{"perm":6,"readQueueNums":4}}}' in lines
