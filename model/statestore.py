"""Where the checker keeps what it has seen: 64-bit fingerprints, not states, and a packed BFS frontier.

Why: a state as nested tuples costs about 600 bytes; kept for every reached state, that caps the search
at a few million states in 2 GiB. Like TLC, the visited set holds only a 64-bit fingerprint per state
(with its id), 12 bytes a slot in two ``array`` columns with open addressing; only the frontier keeps
whole states, pickled in chunks (shared sub-tuples pickle once per chunk). A fingerprint collision
would merge two distinct states and could hide a violation; ``collision_probability`` estimates its
chance the way TLC reports it ("calculated, optimistic").

The fingerprint is Python's ``hash`` of the canonical state: states hold only ints and bools in tuples,
whose hash does not depend on ``PYTHONHASHSEED``, so the search is the same in every process.
"""

from __future__ import annotations

import pickle
import zlib
from array import array
from collections import deque

MAX_LOAD = 0.75
CHUNK = 4096


def fingerprint(state: tuple) -> int:
    """A non-zero 64-bit fingerprint (0 marks an empty slot)."""
    return hash(state) or 1


class FingerprintSet:
    """fingerprint -> state id, open addressing with linear probing over ``array`` columns."""

    def __init__(self, capacity: int = 1 << 16) -> None:
        self.mask = capacity - 1
        self.fps = array("q", bytes(8 * capacity))
        self.ids = array("i", bytes(4 * capacity))
        self.count = 0
        self.limit = int(capacity * MAX_LOAD)

    def __len__(self) -> int:
        return self.count

    @property
    def nbytes(self) -> int:
        return len(self.fps) * 12

    def get(self, fp: int) -> int:
        """The id stored for ``fp``, or -1."""
        fps, mask = self.fps, self.mask
        slot = fp & mask
        while True:
            v = fps[slot]
            if v == fp:
                return self.ids[slot]
            if v == 0:
                return -1
            slot = (slot + 1) & mask

    def get_or_add(self, fp: int, sid: int) -> int:
        """The id stored for ``fp``; when absent, store ``sid`` and return -1."""
        fps, mask = self.fps, self.mask
        slot = fp & mask
        while True:
            v = fps[slot]
            if v == fp:
                return self.ids[slot]
            if v == 0:
                fps[slot] = fp
                self.ids[slot] = sid
                self.count += 1
                if self.count > self.limit:
                    self._grow()
                return -1
            slot = (slot + 1) & mask

    def release(self) -> None:
        """Drop the table (the search is over)."""
        self.fps, self.ids = array("q"), array("i")

    def _grow(self) -> None:
        old_fps, old_ids = self.fps, self.ids
        capacity = len(old_fps) * 2
        self.mask = mask = capacity - 1
        self.fps = fps = array("q", bytes(8 * capacity))
        self.ids = ids = array("i", bytes(4 * capacity))
        self.limit = int(capacity * MAX_LOAD)
        for k, fp in enumerate(old_fps):
            if fp:
                slot = fp & mask
                while fps[slot]:
                    slot = (slot + 1) & mask
                fps[slot] = fp
                ids[slot] = old_ids[k]


def collision_probability(distinct: int, generated: int) -> float:
    """TLC's optimistic estimate: each of the (generated - distinct) look-ups of an already seen
    fingerprint, and each new one, could have hit another of ``distinct`` 64-bit values by chance."""
    return min(1.0, distinct * max(generated - distinct, 0) / 2.0**64)


class Frontier:
    """A FIFO of states in chunks of ``CHUNK``. Past ``loose`` states held as objects, each further full
    chunk is pickled and compressed into one bytes object (about 20 bytes a state instead of about
    600): small searches pay nothing for it, big ones keep their frontier small."""

    def __init__(self, chunk: int = CHUNK, loose: int = 64 * CHUNK) -> None:
        self.chunk = chunk
        self.loose = loose
        self.tail: list = []
        self.chunks: deque[list | bytes] = deque()
        self.loose_count = 0
        self.head: list = []
        self.pos = 0
        self.nbytes = 0

    def push(self, state) -> None:
        self.tail.append(state)
        if len(self.tail) >= self.chunk:
            if self.loose_count + self.chunk <= self.loose:
                self.loose_count += self.chunk
                self.chunks.append(self.tail)
            else:
                blob = zlib.compress(pickle.dumps(self.tail, protocol=pickle.HIGHEST_PROTOCOL), 1)
                self.nbytes += len(blob)
                self.chunks.append(blob)
            self.tail = []

    def pop(self):
        """The oldest state, or None when empty."""
        if self.pos >= len(self.head):
            if self.chunks:
                chunk = self.chunks.popleft()
                if isinstance(chunk, bytes):
                    self.nbytes -= len(chunk)
                    self.head = pickle.loads(zlib.decompress(chunk))
                else:
                    self.loose_count -= len(chunk)
                    self.head = chunk
            elif self.tail:
                self.head, self.tail = self.tail, []
            else:
                return None
            self.pos = 0
        state = self.head[self.pos]
        self.pos += 1
        return state
