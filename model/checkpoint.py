"""Checkpoints of a sweep-line search, so that a search of hours runs over several sittings (like TLC's
``-checkpoint`` and ``-recover``).

Why at the end of a layer only: there, everything the search holds is already in append-only files of its
directory (the entries waiting in lower layers, the parent pointers and actions) except the layer keys, a few
counters and the action tables. A checkpoint is those and the length of each file, in ``checkpoint.json``,
written after the files are synced and renamed into place, so that a kill or a power loss at any instant leaves
the last checkpoint whole. Resuming truncates each file to its recorded length and deletes what the checkpoint
does not list (what a later, unfinished layer wrote), so the search goes on from that layer's end as it would
have: the same states, ids and counterexample.

A checkpoint made by another search is refused (``CheckpointError``): another configuration, reductions or number
of peers, or another source of the search (``model_source``: every module the checker imports, since the states,
their fingerprints, the layers, the ids and the files all come from them; not the history invariants, which a
search never runs, so that fixing one does not throw away hours of a search).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time

from .spec import Action

MARKER = "rmqsim-checkpoint"  # an empty file that makes a directory one the search may clear (and its lock)
MANIFEST = "checkpoint.json"


class CheckpointError(ValueError):
    """A directory that cannot hold or give back this search's checkpoint, and why."""


# The modules model/checker.py imports, directly or not (a test keeps the list in step with the imports).
SEARCH_MODULES = ("checker", "checkpoint", "liveness", "parallel", "por", "properties", "retire", "spec",
                  "statestore", "sweep", "sweep_workers", "symmetry")


def model_source_digest() -> str:
    """A digest of the search's source: a checkpoint of other code is not resumed."""
    digest = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for name in SEARCH_MODULES:
        with open(os.path.join(here, name + ".py"), "rb") as f:
            digest.update(name.encode() + b"\0" + f.read())
    return digest.hexdigest()[:16]


def encode_actions(actions: list[Action]) -> list:
    """An action table as JSON values (what ``decode_actions`` reads back, equal)."""
    return [[a.verb, [[k, v] for k, v in a.args]] for a in actions]


def decode_actions(rows: list) -> list[Action]:
    return [Action(verb, tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in args)) for verb, args in rows]


class Checkpoint:
    """A search's directory: its data files, and the last checkpoint of them (``saved``, None for a new search).

    ``every_s``: a layer's end records a checkpoint once this many seconds passed since the last one (0: at
    every layer's end)."""

    def __init__(self, directory: str, identity: dict, every_s: float = 60.0) -> None:
        self.directory = directory
        self.identity = identity
        self.every_s = every_s
        self.saved: dict | None = None
        self.started = self.last_save = time.perf_counter()  # wall-clock ok: when to checkpoint, and statistics
        self.cpu_started = time.process_time()  # wall-clock ok: statistics only
        self._lock = None
        try:
            self._open()
        except CheckpointError:
            if self._lock is not None:
                self._lock.close()
            raise
        # what the earlier sittings took (a search's time and CPU are the sums over its sittings)
        self.earlier = (self.saved or {}).get("clock", {"seconds": 0.0, "cpu_seconds": 0.0, "sittings": 0})

    def path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def describe(self) -> str | None:
        """Where a resumed search takes up again ("N states after T s in K sitting(s)"), None for a new one."""
        if self.saved is None:
            return None
        states = self.saved["states"] if "states" in self.saved else sum(self.saved["lengths"])  # peers: per owner
        clock = self.saved["clock"]
        return f"{states} states after {clock['seconds']:.0f} s in {clock['sittings']} sitting(s)"

    def _open(self) -> None:
        os.makedirs(self.directory, exist_ok=True)
        names = set(os.listdir(self.directory))
        if names and MARKER not in names:
            raise CheckpointError(f"checkpoint directory {self.directory} is not empty and holds no rmqsim checkpoint "
                                  f"(no {MARKER} file): give an empty or a new directory")
        self._lock = open(self.path(MARKER), "a")  # noqa: SIM115 - closed by close(), or with the process
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CheckpointError(f"checkpoint directory {self.directory} is in use by another search (it holds the "
                                  f"lock on {MARKER}): wait for it, or stop it") from None
        if MANIFEST not in names:  # a new search (or one stopped before its first checkpoint): start afresh
            self._keep(set())
            return
        try:
            with open(self.path(MANIFEST), encoding="utf-8") as f:
                saved = json.load(f)
        except (OSError, ValueError) as error:
            raise CheckpointError(f"checkpoint {self.path(MANIFEST)} cannot be read: {error}") from None
        differ = [f"{k}: {saved['identity'].get(k)!r} there, {v!r} here" for k, v in self.identity.items()
                  if saved["identity"].get(k) != v]
        if differ:
            raise CheckpointError(f"checkpoint {self.directory} is of another search ({'; '.join(differ)}): resume it "
                                  f"with what made it, or give another directory")
        for name, length in saved["files"].items():
            path = self.path(name)
            size = os.path.getsize(path) if os.path.exists(path) else -1
            if size < length:
                raise CheckpointError(f"checkpoint {self.directory} is damaged: {name} holds {max(size, 0)} bytes, "
                                      f"the checkpoint recorded {length}")
            if size > length:  # written after the checkpoint: the search writes it again
                os.truncate(path, length)
        self._keep(set(saved["files"]))
        self.saved = saved["search"]

    def _keep(self, names: set[str]) -> None:
        """Delete the data files not in ``names`` (written after the last checkpoint, or of layers done since)."""
        for name in os.listdir(self.directory):
            if name not in names and name not in (MARKER, MANIFEST):
                os.unlink(self.path(name))

    def due(self) -> bool:
        return time.perf_counter() - self.last_save >= self.every_s  # wall-clock ok: when, never what

    def save(self, search: dict, names: list[str], worker_cpu_s: float = 0.0) -> None:
        """Record ``search`` (JSON values) and the files ``names`` as they are now, with the time and CPU spent so far
        (``worker_cpu_s``: the peers' in this sitting); then the files of layers done since the last checkpoint go."""
        now = time.perf_counter()  # wall-clock ok: statistics only
        search["clock"] = {"seconds": self.earlier["seconds"] + now - self.started,
                           "cpu_seconds": self.earlier["cpu_seconds"] + time.process_time() - self.cpu_started
                           + worker_cpu_s,  # wall-clock ok: statistics only
                           "sittings": self.earlier["sittings"] + 1}
        files = {}
        for name in names:
            fd = os.open(self.path(name), os.O_RDONLY)
            try:
                os.fsync(fd)
                files[name] = os.fstat(fd).st_size
            finally:
                os.close(fd)
        doc = {"identity": self.identity, "files": files, "search": search}
        temporary = self.path(MANIFEST + ".new")
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(doc, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, self.path(MANIFEST))
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)  # the rename itself
        finally:
            os.close(fd)
        self._keep(set(files))
        self.last_save = time.perf_counter()  # wall-clock ok: when, never what

    def close(self) -> None:
        """Let another search open the directory (the lock goes with the process anyway, even on kill -9)."""
        self._lock.close()

    def discard(self) -> None:
        """The search is over (a verdict): nothing left to resume."""
        self.close()
        shutil.rmtree(self.directory, ignore_errors=True)
