"""The checker's compact store: fingerprints, the packed frontier, traces rebuilt from parent pointers."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from model.checker import canonical_states, check
from model.liveness import strongly_connected_components
from model.spec import ModelConfig
from model.statestore import (
    Depths,
    FingerprintSet,
    Frontier,
    collision_probability,
    fingerprint,
    pack,
    unpack,
)
from model.symmetry import canonical


def test_the_fingerprint_set_finds_what_it_stored_across_growth():
    rng = random.Random(1)
    fps = FingerprintSet(capacity=8)
    stored = {}
    for _ in range(20_000):
        fp = rng.getrandbits(63) or 1
        if fp in stored:
            continue
        assert fps.get_or_add(fp, len(stored)) == -1
        stored[fp] = len(stored)
    assert len(fps) == len(stored) and len(fps.slots) > 8
    for fp, sid in stored.items():
        assert fps.get(fp) == sid and fps.get_or_add(fp, -7) == sid
    assert fps.get(12345) == -1 or 12345 in stored


def test_an_insert_at_the_probes_empty_slot_is_found_across_growth():
    """The checker's inlined probe ends at an empty slot and hands it to ``insert``: the same table results."""
    rng = random.Random(2)
    fps, same = FingerprintSet(capacity=8), FingerprintSet(capacity=8)
    grew = 0
    for sid in range(5_000):
        fp = rng.getrandbits(64) - 2**63 or 1
        slot = fp % fps.capacity
        while fps.slots[slot]:
            slot = slot + 1 if slot + 1 < fps.capacity else 0
        assert fps.empty_slot(fp) == slot  # the sweep's probe (model/sweep.py) ends where the inlined one does
        grew += fps.insert(slot, fp, sid)
        assert same.get_or_add(fp, sid) == -1
        assert fps.get(fp) == sid and fps.empty_slot(fp) == -1
    assert grew > 5 and fps.capacity == same.capacity and fps.slots == same.slots
    with pytest.raises(ValueError, match="dense"):
        fps.insert(0, 7, 3)
    taken = next(i for i, v in enumerate(fps.slots) if v)
    with pytest.raises(ValueError, match="taken"):
        fps.insert(taken, 7, len(fps))


def test_a_packed_chunk_of_states_unpacks_equal_with_its_records_and_sharing():
    from model.spec import Copy, Level, Msg, Sched, State, Topic

    cfg = ModelConfig(messages=2, levels=2, max_retries=1, crashes=1, send_levels=(0, 1))
    states = check(cfg, keep_states=True, symmetry=False, max_states=3000).graph.states
    assert len(states) >= 3000
    back = unpack(pack(states))
    assert back == states
    for s in back:
        assert type(s) is State and all(type(m) is Msg for m in s.msgs)
        assert type(s.up) is bool and type(s.crashes) is int  # flag and budget columns go as bytes: types kept
        assert all(type(lv) is Level and all(type(e) is Sched for e in lv.entries) for lv in s.levels)
        assert all(type(tp) is Topic and all(type(c) is Copy for c in tp.entries) for tp in s.topics)
    assert len({id(s.levels) for s in back}) == len(set(s.levels for s in states)) < len(states)  # shared
    # not one kind of tuple of one length: pickled as it is
    for odd in ([(1, 2), (3, 4, 5)], [(1, 2), [3, 4]], [(), ()], [1, 2], [states[0], (1,) * 9]):
        assert unpack(pack(odd)) == odd
    # columns of small ints or flags go as bytes; others (out of 0..255, mixed kinds) through the fields
    for columns in ([(0, True), (255, False)], [(-1, 7), (300, 8)], [(1, "a"), ("b", 2)], [(2**40, 0.5), (3, 1.5)]):
        back = unpack(pack(columns))
        assert back == columns and [list(map(type, row)) for row in back] == [list(map(type, row)) for row in columns]


def test_the_frontier_is_a_fifo_across_packed_chunks():
    f = Frontier(chunk=7, loose=14)
    out = []
    for i in range(50):
        f.push((i, (i, i)))
        if i % 3 == 0:
            out.append(f.pop())
    while (s := f.pop()) is not None:
        out.append(s)
    assert out == [(i, (i, i)) for i in range(50)]
    assert f.nbytes == 0 and f.loose_count == 0


def test_fingerprints_count_exactly_the_distinct_states_and_are_the_same_in_every_process():
    cfg = ModelConfig(messages=2, levels=2, max_retries=1, crashes=0)
    result = check(cfg, keep_states=True)
    exact = set(result.graph.states)
    assert len(exact) == result.states  # no two distinct states merged by a collision
    assert len({fingerprint(s) for s in exact}) == len(exact)
    assert result.collision_probability == collision_probability(result.states, result.graph.generated) < 1e-9
    code = ("from model.checker import check; from model.spec import ModelConfig; "
            "r = check(ModelConfig(messages=2, levels=2, max_retries=1, crashes=0), keep_states=True); "
            "print(r.states, r.edges)")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": seed, "PATH": ""}, cwd=".").stdout for seed in ("1", "2")}
    assert runs == {f"{result.states} {result.edges}\n"}


def test_states_rebuilt_from_parent_pointers_are_the_states_explored():
    cfg = ModelConfig(messages=2, levels=1, max_retries=1, crashes=0)
    kept = check(cfg, keep_states=True, store_edges=False)  # the default search: ticks collapsed, queues compacted
    bare = check(cfg)
    assert bare.graph.compact and bare.renaming is canonical
    ids = list(range(0, kept.states, 7))
    assert canonical_states(bare.graph, cfg, ids, bare.canon, True) == [kept.graph.states[i] for i in ids]


def test_nontrivial_only_skips_single_nodes_without_a_loop():
    adj = {0: [1], 1: [0], 2: [2], 3: [0]}
    comps = strongly_connected_components(4, range(4), adj.__getitem__, nontrivial_only=True)
    assert sorted(map(sorted, comps)) == [[0, 1], [2]]


def test_colliding_fingerprints_are_all_found_across_every_growth():
    """Fingerprints that share a slot (equal mod the capacity), wrap past the table's end, or are negative:
    linear probing keeps each under its own id through every growth, and a miss stays a miss."""
    fps = FingerprintSet(capacity=8)
    stored: dict[int, int] = {}
    wanted = [3 + 8 * k for k in range(40)] + [7 + 8 * k for k in range(40)] + [-(5 + 8 * k) for k in range(40)]
    wanted += [2**63 - 1 - k for k in range(40)] + [-(2**63) + k for k in range(40)]
    capacities = {fps.capacity}
    for fp in wanted:
        assert fps.get(fp) == -1
        assert fps.get_or_add(fp, len(stored)) == -1
        stored[fp] = len(stored)
        capacities.add(fps.capacity)
        assert fps.get_or_add(fp, len(stored)) == stored[fp]  # a second add finds it, stores nothing
        assert len(fps) == len(stored)
    assert len(capacities) > 5  # it grew many times, and every stored fingerprint moved each time
    for fp, sid in stored.items():
        assert fps.get(fp) == sid
    for absent in (12, 3 + 8 * 40, -(5 + 8 * 40), 2**63 - 41, 1):
        assert fps.get(absent) == -1
    assert sorted(v for v in fps.slots if v) == list(range(1, len(stored) + 1))  # each id in one slot


def test_the_table_stays_between_half_and_three_quarters_full():
    fps = FingerprintSet(capacity=16)
    rng = random.Random(3)
    loads = []
    for sid in range(5000):
        fps.get_or_add(rng.getrandbits(64) - 2**63 or 1, sid)
        if sid > 16:
            loads.append(len(fps) / fps.capacity)
    assert min(loads) >= 0.5 and max(loads) <= 0.75
    assert fps.nbytes == 4 * fps.capacity + 8 * len(fps) <= (8 + 8) * len(fps)


def test_state_ids_must_be_dense():
    fps = FingerprintSet(capacity=8)
    fps.get_or_add(42, 0)
    with pytest.raises(ValueError, match="dense"):
        fps.get_or_add(43, 5)
    assert fps.get(43) == -1 and len(fps) == 1


def test_depths_read_like_the_column_they_replace():
    column = [0, 1, 1, 1, 2, 4, 4, 5]  # BFS order: never decreasing (depth 3 empty: a gap is allowed)
    d = Depths()
    for x in column:
        d.append(x)
    assert len(d) == len(column) and list(d) == column
    assert [d[i] for i in range(len(column))] == column and d[-1] == 5 and d.max() == 5
    with pytest.raises(IndexError):
        d[len(column)]
    with pytest.raises(ValueError, match="BFS order"):
        d.append(4)
    assert Depths().max() == 0 and list(Depths()) == []


def test_the_graph_depths_are_the_bfs_distances():
    cfg = ModelConfig(messages=1, levels=1, max_retries=1, crashes=1)
    g = check(cfg, keep_states=True).graph
    assert all(g.depth[i] == len(g.path_to(i)) - 1 for i in range(len(g)))
