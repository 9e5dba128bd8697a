"""The checker's compact store: fingerprints, the packed frontier, traces rebuilt from parent pointers."""

from __future__ import annotations

import random
import subprocess
import sys

from model.checker import canonical_states, check
from model.liveness import strongly_connected_components
from model.spec import ModelConfig
from model.statestore import FingerprintSet, Frontier, collision_probability, fingerprint
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
    kept = check(cfg, keep_states=True, store_edges=False)  # the default search: ticks collapsed, POR on
    bare = check(cfg)
    ids = list(range(0, kept.states, 7))
    assert canonical_states(bare.graph, cfg, ids, canonical, True) == [kept.graph.states[i] for i in ids]


def test_nontrivial_only_skips_single_nodes_without_a_loop():
    adj = {0: [1], 1: [0], 2: [2], 3: [0]}
    comps = strongly_connected_components(4, range(4), adj.__getitem__, nontrivial_only=True)
    assert sorted(map(sorted, comps)) == [[0, 1], [2]]
