"""Fuzzing the store's decoders: fastjson text, commit-log records, and whole store directories for
``rmqsim inspect`` (mutated bytes of a small generated store). No exception but the documented one, and
``inspect`` prints strict JSON and exits 0 on any store, however broken."""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from contextlib import redirect_stdout

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scenarios.cli import main
from scenarios.inspect_text import format_inspection
from scenarios.scenario import load_scenario_text
from sim.run import run_scenario
from store import fastjson
from store import message as codec
from store.inspect import inspect_store_dir

# --- fastjson ------------------------------------------------------------------------------------------------------
SAMPLE = fastjson.dumps({"offsetTable": {"TopicTest@GroupA": {0: 12, 1: 7}},
                         "dataVersion": {"counter": 3, "timestamp": 1700000000000},
                         "list": [1, -2.5, "x\u00e9", None, True], "key": {(("queueId", 0), ("topic", "t")): 5}})
JSON_CHARS = st.sampled_from(list('{}[]:,"\\-+.eE0123456789 \nabcdefnrtu') + ["\\u", "\\ud800", "1e999", "9" * 50])


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=80), st.lists(JSON_CHARS, max_size=40).map("".join),
                 st.tuples(st.integers(0, len(SAMPLE)), st.integers(0, 8), st.text(max_size=6)).map(
                     lambda t: SAMPLE[: t[0]] + t[2] + SAMPLE[t[0] + t[1]:]),
                 st.integers(4200, 6000).map(lambda n: "[" + "7" * n + "]")))
def test_fastjson_loads_raises_only_its_error(text):
    try:
        fastjson.loads(text)
    except fastjson.FastjsonError:
        pass


# --- commit-log records ------------------------------------------------------------------------------------------
def _record(topic: str = "TopicTest", body: bytes = b"hello", **props) -> bytes:
    msg = codec.MessageExt(topic=topic, queue_id=1, body=body, properties={"UNIQ_KEY": "K1", "TAGS": "a", **props},
                           born_timestamp=1_700_000_000_000)
    return codec.encode_message(codec.prepare_message(msg), 3, 4096, 1_700_000_000_001)


RECORD = _record()
RECORD_V2 = _record(topic="T" * 200)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([RECORD, RECORD_V2, RECORD + RECORD]),
       st.lists(st.tuples(st.integers(0, 600), st.integers(0, 255)), max_size=6),
       st.integers(0, 700), st.binary(max_size=8))
def test_commit_log_record_decoding_never_raises(record, flips, cut, tail):
    data = bytearray(record)
    for pos, value in flips:
        if pos < len(data):
            data[pos] = value
    data = bytes(data[:cut]) + tail
    for pos in (0, 1, 4):
        req = codec.check_message_and_return_size(data, pos, check_crc=True)
        assert isinstance(req.success, bool) and (req.success or req.error)
        msg = codec.decode_message(data, pos, check_crc=bool(flips))
        if msg is not None:
            assert msg.msg_id  # every field of a decoded message can be shown


# --- whole store directories for inspect -------------------------------------------------------------------------
TINY = """name = "fuzz-store"
duration = "5s"
drain = "1m"
[broker]
commit_log_file_size = 4096
consume_queue_units_per_file = 8
timer_roll_window_slot = 8
[[topic]]
name = "TopicTest"
queues = 2
[[producer]]
topic = "TopicTest"
messages = 12
rate = "4/s"
timer_delay = "3s"
[[producer]]
topic = "TopicTest"
messages = 6
delay_level = 2
[[consumer]]
group = "GroupA"
topic = "TopicTest"
fail_first = 1
"""


@pytest.fixture(scope="module")
def store_files(tmp_path_factory):
    out = tmp_path_factory.mktemp("fuzzstore") / "run"
    run_scenario(load_scenario_text(TINY, "tiny.toml"), 1, out_dir=str(out))
    root = out / "store"
    for big in [root / "timerwheel", *(root / "timerlog").iterdir()]:  # 38 MB and 100 MB, mostly zeros: keep a
        with open(big, "r+b") as f:                                      # prefix, so a copy per example is cheap
            f.truncate(min(os.path.getsize(big), 64 * 1024))
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert any(f.startswith("commitlog/") for f in files) and any(f.startswith("timerlog/") for f in files)
    assert any(f.startswith("consumequeue/") for f in files) and "timerwheel" in files
    return root, files


MUTATION = st.tuples(
    st.sampled_from(["flip", "truncate", "append", "replace", "rename", "dir"]),
    st.integers(0, 1 << 16), st.binary(min_size=1, max_size=16),
    st.sampled_from(["²", "--1", "+7", "00000000000000004096", "\udcff" if os.name != "nt" else "x", "a.json", "9" * 25]),
)


def _mutate(root: str, files: list[str], index: int, mutation) -> None:
    op, pos, data, name = mutation
    path = os.path.join(root, files[index % len(files)])
    if not os.path.isfile(path):
        return  # renamed by an earlier mutation
    with open(path, "rb") as f:
        content = bytearray(f.read())
    if op == "flip" and content:
        at = pos % len(content)
        content[at : at + len(data)] = data
    elif op == "truncate":
        content = content[: pos % (len(content) + 1)]
    elif op == "append":
        content += data * (1 + pos % 64)
    elif op == "replace":
        content = bytearray(data)
    elif op in ("rename", "dir"):
        target = os.path.join(os.path.dirname(path), name)
        if not os.path.exists(target):
            if op == "rename":
                os.rename(path, target)
            else:
                os.mkdir(target)
        return
    with open(path, "wb") as f:
        f.write(content)


MUTATIONS = st.lists(st.tuples(st.integers(0, 1000), MUTATION), min_size=1, max_size=3)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                               HealthCheck.function_scoped_fixture])
@given(MUTATIONS)
def test_inspect_decodes_any_mutated_store_quick(store_files, mutations):
    """The default tier's share of the fuzzing below (8 examples; the slow tier runs 30)."""
    test_inspect_decodes_any_mutated_store.hypothesis.inner_test(store_files, mutations)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(MUTATIONS)
def test_inspect_decodes_any_mutated_store(store_files, mutations):
    source, files = store_files
    with tempfile.TemporaryDirectory(prefix="rmqsim-fuzz-") as tmp:
        root = os.path.join(tmp, "store")
        shutil.copytree(source, root)
        for index, mutation in mutations:
            _mutate(root, files, index, mutation)
        doc = inspect_store_dir(root, max_entries=20)
        json.dumps(doc, allow_nan=False).encode("utf-8")  # strict JSON, printable
        format_inspection(doc).encode("utf-8")
        for argv in (["inspect", root], ["inspect", "--json", root]):
            with redirect_stdout(io.StringIO()) as out:
                assert main(argv) == 0
            if "--json" in argv:
                json.loads(out.getvalue(), parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
