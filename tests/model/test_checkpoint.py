"""Checkpoints of the sweep (model/checkpoint.py): a search stopped and resumed finds what it would have found,
with the same ids; a checkpoint of another search, or a damaged one, is refused."""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model import checkpoint as checkpoint_module
from model.checker import STOP_STATES, check
from model.checkpoint import MANIFEST, Checkpoint, CheckpointError
from model.spec import ModelConfig
from model.sweep_workers import _PeerColumn
from scenarios.check_cli import check_main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
M1C1 = ModelConfig(messages=1, levels=2, max_retries=1, crashes=1)
# a violation found after 72 layers and some 10 000 states: its counterexample crosses several sittings
SHUTDOWN = ModelConfig(messages=2, levels=2, max_retries=1, crashes=1, mutants=frozenset({"no_persist_at_shutdown"}))


def _ids(g) -> list[int]:
    """Every state's id: 0, 1, ... in one process; ``local * N + rank`` of each peer's states on N peers."""
    if not isinstance(g.parent, _PeerColumn):
        return list(range(len(g.parent)))
    columns, peers = g.parent.columns, len(g.parent.columns)
    return sorted(local * peers + rank for rank, w in g.parent.by_rank.items() for local in range(len(columns[w])))


def _search(r) -> tuple:
    """What a search found, ids included: counts, and every state's parent and action."""
    g = r.graph
    ids = _ids(g)
    v = r.violation
    return (r.verdict(), r.states, r.edges, g.generated, g.terminal_states, r.depth, r.sweep_layers, ids,
            [g.parent[i] for i in ids], [g.actions[g.parent_action[i]] for i in ids[1:]],
            None if v is None else (v.prop, v.path_ids, v.format()))


def _resumed(cfg: ModelConfig, directory, workers: int, limits: list[int]):
    """The search run with each of ``limits`` (states) in turn, then without one, from the same checkpoint."""
    sittings = 0
    for limit in [*limits, None]:
        r = check(cfg, sweep=True, workers=workers, checkpoint=str(directory), checkpoint_every_s=0, max_states=limit)
        sittings += 1
        assert r.sittings == sittings
        if r.verdict() != "incomplete":
            return r
        assert r.stop == STOP_STATES and r.checkpoint == str(directory) and os.path.exists(directory / MANIFEST)
    raise AssertionError("no verdict without a limit")


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("cfg", [M1C1, SHUTDOWN], ids=["m1c1", "no_persist_at_shutdown"])
def test_a_search_resumed_twice_finds_what_it_finds_in_one_go(tmp_path, cfg, workers):
    whole = check(cfg, sweep=True, workers=workers)
    resumed = _resumed(cfg, tmp_path / "ck", workers, [whole.states // 4, whole.states // 2])
    assert resumed.sittings == 3
    assert _search(resumed) == _search(whole)
    assert not os.path.exists(tmp_path / "ck")  # a verdict: nothing left to resume


@settings(max_examples=6, deadline=None)
@given(workers=st.integers(1, 3), stops=st.lists(st.integers(1, 3300), min_size=1, max_size=3))
def test_wherever_it_stops_a_resumed_search_is_the_same(tmp_path_factory, workers, stops):
    directory = tmp_path_factory.mktemp("ck") / "search"
    assert _search(_resumed(M1C1, directory, workers, sorted(stops))) == _search(check(M1C1, sweep=True,
                                                                                        workers=workers))


def test_a_checkpoint_of_another_search_is_refused(tmp_path):
    directory = tmp_path / "ck"
    r = check(M1C1, sweep=True, checkpoint=str(directory), checkpoint_every_s=0, max_states=1)
    assert r.checkpoint == str(directory)
    other = ModelConfig(messages=1, levels=2, max_retries=1, crashes=0)
    with pytest.raises(CheckpointError, match="of another search .*config"):
        check(other, sweep=True, checkpoint=str(directory))
    with pytest.raises(CheckpointError, match="workers: 1 there, 2 here"):
        check(M1C1, sweep=True, workers=2, checkpoint=str(directory))
    with pytest.raises(CheckpointError, match="symmetry: True there, False here"):
        check(M1C1, sweep=True, symmetry=False, checkpoint=str(directory))
    assert check(M1C1, sweep=True, checkpoint=str(directory)).holds  # what made it still resumes it


def test_a_checkpoint_of_other_model_code_is_refused(tmp_path, monkeypatch):
    directory = tmp_path / "ck"
    check(M1C1, sweep=True, checkpoint=str(directory), checkpoint_every_s=0, max_states=1)
    monkeypatch.setattr(checkpoint_module, "model_source_digest", lambda: "edited")
    with pytest.raises(CheckpointError, match="model_source: '[0-9a-f]{16}' there, 'edited' here"):
        check(M1C1, sweep=True, checkpoint=str(directory))


def test_the_digest_covers_every_module_the_search_imports():
    """A module that joins the search without joining the digest would let a checkpoint of other code resume."""
    here = os.path.dirname(checkpoint_module.__file__)
    reached, todo = set(), ["checker"]
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        tree = ast.parse(open(os.path.join(here, name + ".py"), encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                todo.extend([node.module] if node.module else [alias.name for alias in node.names])
    assert sorted(reached) == sorted(checkpoint_module.SEARCH_MODULES)


def test_a_damaged_checkpoint_is_refused_and_a_foreign_directory_left_alone(tmp_path):
    directory = tmp_path / "ck"
    check(M1C1, sweep=True, checkpoint=str(directory), checkpoint_every_s=0, max_states=1)
    recorded = json.loads((directory / MANIFEST).read_text())["files"]["parent"]
    os.truncate(directory / "parent", recorded - 4)
    with pytest.raises(CheckpointError, match=f"damaged: parent holds {recorded - 4} bytes, the checkpoint recorded "
                                              f"{recorded}"):
        check(M1C1, sweep=True, checkpoint=str(directory))
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(CheckpointError, match="holds no rmqsim checkpoint"):
        check(M1C1, sweep=True, checkpoint=str(foreign))
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_resuming_drops_what_was_written_after_the_checkpoint(tmp_path):
    """Files a later, unfinished layer wrote are cut back or deleted: the search writes them again."""
    directory = tmp_path / "ck"
    check(SHUTDOWN, sweep=True, checkpoint=str(directory), checkpoint_every_s=0, max_states=4000)
    files = json.loads((directory / MANIFEST).read_text())["files"]
    (directory / "0_0_0_0_-99-0-0").write_bytes(b"a layer file no checkpoint lists")
    with open(directory / "parent", "ab") as f:
        f.write(b"\1" * 12)
    kept = Checkpoint(str(directory), _identity(directory))
    assert kept.saved is not None
    assert {name: os.path.getsize(directory / name) for name in files} == files
    assert not os.path.exists(directory / "0_0_0_0_-99-0-0")
    kept.close()


def test_one_search_at_a_time_in_a_directory(tmp_path):
    """Two searches writing the same files would spoil both: the second is refused while the first runs."""
    first = Checkpoint(str(tmp_path / "ck"), {"config": 1})
    with pytest.raises(CheckpointError, match="in use by another search"):
        Checkpoint(str(tmp_path / "ck"), {"config": 1})
    first.close()
    Checkpoint(str(tmp_path / "ck"), {"config": 1}).close()


def _identity(directory) -> dict:
    return json.loads((directory / MANIFEST).read_text())["identity"]


def test_the_command_line_keeps_a_checkpoint_after_a_limit_and_says_how_to_go_on(tmp_path, capsys):
    directory = str(tmp_path / "ck")
    args = ["--messages", "2", "--crashes", "1", "--mutant", "no_persist_at_shutdown", "--sweep", "--checkpoint",
            directory, "--checkpoint-every", "0", "--no-progress"]
    assert check_main([*args, "--max-states", "3000"]) == 2
    err = capsys.readouterr().err
    assert "resuming" not in err
    assert f"run the same command again to resume from the last checkpoint in {directory}" in err
    states = json.loads(open(os.path.join(directory, MANIFEST)).read())["search"]["states"]
    assert check_main([*args, "--json"]) == 1
    out, err = capsys.readouterr()
    assert f"resuming from the checkpoint in {directory}: {states} states after " in err and "in 1 sitting(s)" in err
    doc = json.loads(out)
    assert doc["stats"]["sittings"] == 2 and doc["violation"]["property"]
    assert not os.path.exists(directory)
    assert check_main([*args[:-3], "--checkpoint-every", "1000", "--max-states", "3000", "--no-progress"]) == 2
    assert f"no checkpoint recorded in {directory} yet" in capsys.readouterr().err
    shutil.rmtree(directory)
    assert check_main(["--checkpoint", directory, "--no-progress"]) == 2
    assert "--checkpoint is kept by the sweep-line search only" in capsys.readouterr().err
    os.makedirs(directory)
    open(os.path.join(directory, "x"), "w").close()
    assert check_main(["--sweep", "--checkpoint", directory, "--no-progress"]) == 2
    assert "holds no rmqsim checkpoint" in capsys.readouterr().err


def test_a_refused_checkpoint_is_not_announced_as_resumed(tmp_path, capsys):
    """"resuming" is said only once the checker accepted the checkpoint: not for another search's, nor for one in
    use (the message used to be printed from the manifest before the checker looked)."""
    directory = str(tmp_path / "ck")
    args = ["--messages", "1", "--sweep", "--checkpoint", directory, "--checkpoint-every", "0", "--no-progress"]
    assert check_main([*args, "--max-states", "200"]) == 2
    capsys.readouterr()
    assert check_main([*args, "--levels", "3"]) == 2
    err = capsys.readouterr().err
    assert "is of another search" in err and "resuming" not in err
    holder = Checkpoint(directory, _identity(tmp_path / "ck"))  # another search holds the directory
    try:
        assert check_main(args) == 2
        err = capsys.readouterr().err
        assert "is in use by another search" in err and "resuming" not in err
    finally:
        holder.close()
    assert check_main(args) == 0
    assert "rmqsim check: resuming from the checkpoint in" in capsys.readouterr().err


@pytest.mark.parametrize("workers", [1, 2])
def test_a_resumed_search_hears_where_it_takes_up_again(tmp_path, workers):
    """``on_resume`` hears the checkpoint's state count (one process's ``states``, the peers' columns summed) and
    time, once it is accepted; a new search hears nothing."""
    directory = str(tmp_path / "ck")
    heard = []
    first = check(M1C1, sweep=True, workers=workers, checkpoint=directory, checkpoint_every_s=0, max_states=1500,
                  on_resume=heard.append)
    assert first.stop == STOP_STATES and heard == []
    search = json.loads((tmp_path / "ck" / MANIFEST).read_text())["search"]
    states = search["states"] if workers == 1 else sum(search["lengths"])
    assert 0 < states <= first.states
    check(M1C1, sweep=True, workers=workers, checkpoint=directory, checkpoint_every_s=0, on_resume=heard.append)
    assert heard == [f"{states} states after {search['clock']['seconds']:.0f} s in 1 sitting(s)"]


def test_what_a_checkpoint_cannot_serve_is_refused(tmp_path, capsys):
    directory = str(tmp_path / "ck")
    with pytest.raises(ValueError, match="a checkpoint is kept by the sweep only"):
        check(M1C1, checkpoint=directory)
    args = ["--sweep", "--checkpoint", directory, "--no-progress"]
    assert check_main([*args, "--compare-symmetry"]) == 2
    assert "--checkpoint resumes one search: not with --compare-symmetry" in capsys.readouterr().err
    assert check_main([*args, "--checkpoint-every", "-1"]) == 2
    assert "--checkpoint-every must not be negative" in capsys.readouterr().err
    assert not os.path.exists(directory)


def test_an_unreadable_checkpoint_is_refused(tmp_path):
    directory = tmp_path / "ck"
    check(M1C1, sweep=True, checkpoint=str(directory), checkpoint_every_s=0, max_states=1)
    (directory / MANIFEST).write_text('{"identity": ')  # cut short
    with pytest.raises(CheckpointError, match=f"checkpoint {directory / MANIFEST} cannot be read"):
        check(M1C1, sweep=True, checkpoint=str(directory))


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_search_killed_mid_layer_resumes_to_the_same_result(tmp_path, workers):
    """kill -9 (a session that ends, a machine that goes): the last checkpoint is whole, the rest is redone."""
    directory = str(tmp_path / "ck")
    args = [sys.executable, "-m", "scenarios.check_cli", "--messages", "2", "--crashes", "1", "--put-failures", "0",
            "--sweep", "--workers", workers, "--checkpoint", directory, "--checkpoint-every", "1", "--no-progress",
            "--json"]
    env = {**os.environ, "PYTHONPATH": ROOT}
    killed = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    deadline = time.monotonic() + 60  # wall-clock ok: how long the test waits, not what it checks
    while not os.path.exists(os.path.join(directory, MANIFEST)) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.5)  # well into a later layer
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    at_kill = json.loads(open(os.path.join(directory, MANIFEST)).read())["search"]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)["stats"]
    whole = check(ModelConfig(messages=2, levels=2, max_retries=1, crashes=1, put_failures=0), sweep=True,
                  workers=int(workers))
    assert (stats["states"], stats["edges"], stats["generated"], stats["terminal_states"]) == \
        (whole.states, whole.edges, whole.graph.generated, whole.graph.terminal_states)
    assert stats["sittings"] == at_kill["clock"]["sittings"] + 1 >= 2
    assert not os.path.exists(directory)
