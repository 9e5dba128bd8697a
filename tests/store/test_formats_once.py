"""Formats once (#16 item 3): each on-disk format module exports a pure iterator over bytes; recovery and
``inspect`` both read through it, and ``store/inspect.py`` declares no layout of its own.

Round trips (Hypothesis): encode -> iterate gives the same records; a truncated or corrupt tail is reported
at its offset and everything before it is kept."""

from __future__ import annotations

import ast
import os
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

import store.inspect as inspect_
from store import checkpoint as store_checkpoint
from store import message as codec
from store.consume_queue import CQ_STORE_UNIT_SIZE, CQ_UNIT, CqUnit, iter_units
from store.disk import MemoryDisk
from store.timer import timer_checkpoint, timer_log, timer_wheel
from store.timer.timer_wheel import SLOT_SIZE, StoredSlot, encode_slot, iter_used_slots

from .broker_harness import BrokerHarness

# --- commit log ------------------------------------------------------------------------------------------------
MESSAGES = st.tuples(
    st.text("abcXYZ_-%0123456789", min_size=1, max_size=40),  # topic
    st.binary(max_size=60),  # body
    st.dictionaries(st.sampled_from(["KEYS", "TAGS", "DELAY", "X"]), st.text("ab 1", min_size=1, max_size=8),
                    max_size=3),
    st.integers(0, 1 << 40),  # queue offset
)


def _encode_file(messages, base_offset: int) -> tuple[bytes, list[tuple[int, int, str, int]]]:
    out, expected = bytearray(), []
    for topic, body, props, queue_offset in messages:
        msg = codec.MessageExt(topic=topic, queue_id=1, body=body, properties={"UNIQ_KEY": "K", **props},
                               born_timestamp=1_700_000_000_000)
        phy = base_offset + len(out)
        record = codec.encode_message(codec.prepare_message(msg), queue_offset, phy, 1_700_000_000_001)
        expected.append((phy, len(record), topic, queue_offset))
        out += record
    return bytes(out), expected


def _seen(items):
    return [(i.offset, i.request.msg_size, i.request.topic, i.request.consume_queue_offset)
            for i in items if isinstance(i, codec.Record)]


@settings(max_examples=150, deadline=None)
@given(st.lists(MESSAGES, max_size=6), st.integers(0, 1 << 40), st.integers(8, 64))
def test_commit_log_records_round_trip_and_end_at_the_blank(messages, base_offset, blank_len):
    data, expected = _encode_file(messages, base_offset)
    filler = codec.encode_blank(blank_len)  # the rest of the file: garbage after the blank header is never read
    items = list(codec.iter_records(data + filler + b"\xff" * (blank_len - len(filler)), base_offset))
    assert _seen(items) == expected
    assert items[-1] == codec.Blank(base_offset + len(data))  # nothing after the filler is read
    assert list(codec.iter_records(data + bytes(40), base_offset))[-1:] == (
        [codec.Record(expected[-1][0], items[-2].request)] if expected else [])  # a zero tail ends silently


@settings(max_examples=150, deadline=None)
@given(st.lists(MESSAGES, min_size=1, max_size=5), st.data())
def test_commit_log_truncated_or_corrupt_tail_is_reported_at_its_offset(messages, data_):
    data, expected = _encode_file(messages, 0)
    last_phy, last_size = expected[-1][0], expected[-1][1]
    cut = data_.draw(st.integers(last_phy + 8, last_phy + last_size - 1))  # < 8 zero bytes: never written
    items = list(codec.iter_records(data[:cut]))
    assert _seen(items) == expected[:-1]
    assert isinstance(items[-1], codec.Corrupt) and items[-1].offset == last_phy and items[-1].reason
    flipped = bytearray(data)
    flipped[last_phy + 4] ^= 0x55  # the magic code of the last record
    items = list(codec.iter_records(bytes(flipped)))
    assert _seen(items) == expected[:-1] and items[-1] == codec.Corrupt(last_phy, items[-1].reason)
    assert "magic" in items[-1].reason


def test_commit_log_size_mismatch_is_skipped_by_its_size_as_dispatch_does():
    data, expected = _encode_file([("T", b"x", {}, 0), ("U", b"y", {}, 1), ("V", b"z", {}, 2)], 0)
    (p0, _, _, _), (p1, size1, _, _), (p2, _, _, _) = expected
    grown = bytearray(data[p1:p2])
    struct.pack_into(">i", grown, 0, size1 + 4)  # TOTALSIZE 4 bytes longer than the fields add up to
    items = list(codec.iter_records(data[:p1] + bytes(grown) + b"\xee" * 4 + data[p2:]))
    assert [type(i).__name__ for i in items] == ["Record", "Corrupt", "Record"]
    assert items[1] == codec.Corrupt(p1, items[1].reason, size1 + 4) and "add up to" in items[1].reason
    assert items[2].offset == p2 + 4 and items[2].request.topic == "V"


# --- consume queue ---------------------------------------------------------------------------------------------
UNITS = st.lists(st.tuples(st.integers(0, (1 << 63) - 1), st.integers(1, (1 << 31) - 1),
                           st.integers(-(1 << 63), (1 << 63) - 1)), max_size=20)


@settings(max_examples=200, deadline=None)
@given(UNITS, st.integers(0, 1 << 30), st.integers(0, 19),
       st.sampled_from([None, (-1, 20, 0), (4096, 0, 0), (4096, -5, 0), (0, 0, 0)]))
def test_cq_units_round_trip_and_the_tail_is_reported(units, base, tail_len, invalid_unit):
    data = b"".join(CQ_UNIT.pack(*u) for u in units)
    assert list(iter_units(data, base)) == [CqUnit(base + i, *u) for i, u in enumerate(units)]
    # An invalid unit ends the queue (what follows is not read); a partial unit can only be the file's end.
    tail = CQ_UNIT.pack(*invalid_unit) + CQ_UNIT.pack(1, 1, 1) if invalid_unit else b"\x07" * tail_len
    assert list(iter_units(CQ_UNIT.pack(0, 0x7FFFFFFF, 0))) == [CqUnit(0, 0, 0x7FFFFFFF, 0)]  # the pre-blank unit
    items = list(iter_units(data + tail, base))
    assert items[: len(units)] == [CqUnit(base + i, *u) for i, u in enumerate(units)]
    if tail:
        assert len(items) == len(units) + 1 and isinstance(items[-1], codec.Corrupt)
        assert items[-1].offset == base + len(units) and items[-1].reason
    else:
        assert len(items) == len(units)


# --- timer log ---------------------------------------------------------------------------------------------------
TIMER_UNITS = st.lists(st.tuples(st.integers(-1, 1 << 40), st.sampled_from([1, 2, 3, 4, 5]),
                                 st.integers(0, 1 << 42), st.integers(0, 1 << 30), st.integers(0, 1 << 40),
                                 st.integers(1, 1 << 20), st.integers(-(1 << 31), (1 << 31) - 1)), max_size=10)


@settings(max_examples=200, deadline=None)
@given(TIMER_UNITS, st.integers(0, 1 << 30), st.sampled_from(["blank", "zero", "cut", "bad-size", "bad-magic"]))
def test_timer_log_units_round_trip_and_the_tail_is_reported(units, base, tail):
    data = b"".join(timer_log.encode_unit(prev, magic, write, write + delay, py, size, h)
                    for prev, magic, write, delay, py, size, h in units)
    expected = [timer_log.TimerLogRecord(base + i * timer_log.UNIT_SIZE, timer_log.decode_unit(data, i * 52))
                for i in range(len(units))]
    assert [(r.unit.prev_pos, r.unit.magic, r.unit.delayed_time_ms, r.unit.offset_py) for r in expected] == [
        (prev, magic, write + delay, py) for prev, magic, write, delay, py, _s, _h in units]
    end = base + len(data)
    one = timer_log.encode_unit(5, 1, 1000, 2000, 7, 9, 3)
    tails = {"blank": (timer_log.encode_blank(64) + one, timer_log.Blank(end)),
             "zero": (bytes(52) + one, None),
             "cut": (one[:30], codec.Corrupt(end, "")),
             "bad-size": (struct.pack(">i", 51) + one[4:], codec.Corrupt(end, "")),
             "bad-magic": (one[:12] + struct.pack(">i", 16) + one[16:], codec.Corrupt(end, ""))}
    suffix, last = tails[tail]
    items = list(timer_log.iter_units(data + suffix, base))
    if last is None:
        assert items == expected
    elif isinstance(last, timer_log.Blank):
        assert items == [*expected, last]
    else:
        assert items[:-1] == expected and isinstance(items[-1], codec.Corrupt) and items[-1].offset == end
        assert "recovery stops here" in items[-1].reason


# --- timer wheel, checkpoints --------------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.integers(0, 399), st.tuples(st.integers(1, 1 << 30), st.integers(0, 1 << 40),
                                                       st.integers(0, 1 << 40), st.integers(0, 1000)), max_size=12),
       st.integers(0, 31))
def test_wheel_used_slots_round_trip(slots, partial):
    buf = bytearray(400 * SLOT_SIZE)
    for index, (units, first, last, num) in slots.items():
        buf[index * SLOT_SIZE : (index + 1) * SLOT_SIZE] = encode_slot(units * 100, 100, first, last, num)
    found = list(iter_used_slots(bytes(buf) + b"\x01" * partial))  # a partial slot at the end is ignored
    assert found == [StoredSlot(i, *slots[i], 0) for i in sorted(slots)]


_BIG_WHEEL_SLOTS = (2 * timer_wheel._SCAN_BLOCK + 3 * timer_wheel._SCAN_CHUNK) // SLOT_SIZE + 6  # past 2 blocks (even)


@settings(max_examples=40, deadline=None)
@given(st.sets(st.one_of(st.integers(0, _BIG_WHEEL_SLOTS - 1),  # and slots next to a chunk's or block's edge
                         st.builds(lambda edge, side: max(0, edge * timer_wheel._SCAN_CHUNK // SLOT_SIZE - side),
                                   st.integers(1, _BIG_WHEEL_SLOTS * SLOT_SIZE // timer_wheel._SCAN_CHUNK),
                                   st.integers(0, 1)).filter(lambda i: i < _BIG_WHEEL_SLOTS)), max_size=10))
def test_a_wheel_of_several_scan_blocks_loads_and_scans_every_used_slot(used):
    """The scans skip zero blocks and zero chunks at once: a used slot on either side of any edge is found, and a
    wheel file loads into the same bytes."""
    buf = bytearray(_BIG_WHEEL_SLOTS * SLOT_SIZE)
    for index in used:
        buf[index * SLOT_SIZE : (index + 1) * SLOT_SIZE] = encode_slot(1000 * (index + 1), 1000, index, index, 1)
    assert [slot.index for slot in iter_used_slots(bytes(buf))] == sorted(used)
    disk = MemoryDisk()
    disk.open(timer_wheel.TIMER_WHEEL_FILE, create_size=len(buf)).write(0, bytes(buf))
    wheel = timer_wheel.TimerWheel(disk, _BIG_WHEEL_SLOTS // 2, 1000)
    assert bytes(wheel.buf) == bytes(buf) and sorted(wheel._used) == sorted(used)


@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), min_size=7, max_size=7), st.integers(0, 60))
def test_checkpoints_decode_whole_fields_of_a_short_file(longs, cut):
    raw = timer_checkpoint.CHECKPOINT_STRUCT.pack(*longs)[:cut]
    doc = timer_checkpoint.decode_fields(raw)
    assert list(doc) == [*timer_checkpoint.FIELDS[: min(cut // 8, 4)]] + (["data_version"] if cut >= 56 else [])
    assert [doc[name] for name in timer_checkpoint.FIELDS if name in doc] == longs[: min(cut // 8, 4)]
    raw = struct.pack(">qqqqq", *longs[:5])[:cut]
    assert store_checkpoint.decode_fields(raw) == dict(zip(store_checkpoint.FIELDS, longs[: min(cut // 8, 5)], strict=False))


# --- one reader for recovery and inspect ----------------------------------------------------------------------------
def test_inspect_declares_no_layout_of_its_own():
    tree = ast.parse(open(os.path.join(os.path.dirname(inspect_.__file__), "inspect.py"), encoding="utf-8").read())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    calls = {node.func.attr for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}
    assert "struct" not in imported and not calls & {"unpack_from", "iter_unpack", "unpack", "from_bytes"}
    assert inspect_.CQ_UNIT_SIZE == CQ_STORE_UNIT_SIZE


def test_recovery_and_inspect_read_through_the_same_iterators(tmp_path, monkeypatch):
    from store import commit_log, consume_queue
    from store.disk import OsDisk

    h = BrokerHarness(disk=OsDisk(str(tmp_path)))
    h.broker.topic_config_manager.create_topic_in_send_message_method("TopicTest", "TBW102", 1)
    for n in range(3):
        h.send(key=f"k{n}")
    h.run_for(2000)
    h.broker.shutdown()
    calls: list[str] = []

    def spy(name, real):
        def wrapped(*args, **kwargs):
            calls.append(name)
            return real(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(codec, "iter_records", spy("records", codec.iter_records))
    monkeypatch.setattr(consume_queue, "iter_units", spy("units", consume_queue.iter_units))
    monkeypatch.setattr(inspect_, "iter_units", spy("units", consume_queue.iter_units))
    assert commit_log.codec is codec
    again = BrokerHarness(disk=OsDisk(str(tmp_path)))  # a clean restart: recovery scans the commit log and queues
    again.broker.shutdown()
    recovered = sorted(set(calls))
    calls.clear()
    doc = inspect_.inspect_store_dir(str(tmp_path))
    assert recovered == ["records", "units"] and sorted(set(calls)) == ["records", "units"]
    assert doc["commitlog"]["record_count"] == 3
