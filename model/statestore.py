"""Where the checker keeps what it has seen: 64-bit fingerprints, not states, and a packed BFS frontier.

Why: a state as nested tuples costs about 600 bytes; kept for every reached state, that caps the search
at a few million states in 2 GiB. Like TLC, the visited set holds only a 64-bit fingerprint per state
(8 bytes in a column by state id, and a 4-byte slot of an open-addressing table); only the frontier
keeps whole states, pickled in chunks (shared sub-tuples pickle once per chunk). A fingerprint collision
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
    """fingerprint -> state id. State ids are dense (0, 1, 2, ...), so the fingerprints are a column indexed
    by id (8 bytes a state) and the hash table holds only ``id + 1`` (4 bytes a slot, 0 = empty), open
    addressing with linear probing."""

    def __init__(self, capacity: int = 1 << 16) -> None:
        self.mask = capacity - 1
        self.slots = array("I", bytes(4 * capacity))
        self.fps = array("q")  # fps[id]
        self.limit = int(capacity * MAX_LOAD)

    def __len__(self) -> int:
        return len(self.fps)

    @property
    def nbytes(self) -> int:
        return len(self.slots) * 4 + len(self.fps) * 8

    def get(self, fp: int) -> int:
        """The id stored for ``fp``, or -1."""
        slots, fps, mask = self.slots, self.fps, self.mask
        slot = fp & mask
        while True:
            v = slots[slot]
            if v == 0:
                return -1
            if fps[v - 1] == fp:
                return v - 1
            slot = (slot + 1) & mask

    def get_or_add(self, fp: int, sid: int) -> int:
        """The id stored for ``fp``; when absent, store it under ``sid`` (the next id) and return -1."""
        slots, fps, mask = self.slots, self.fps, self.mask
        slot = fp & mask
        while True:
            v = slots[slot]
            if v == 0:
                if sid != len(fps):
                    raise ValueError(f"state ids are dense: expected {len(fps)}, not {sid}")
                fps.append(fp)
                slots[slot] = sid + 1
                if len(fps) > self.limit:
                    self._grow()
                return -1
            if fps[v - 1] == fp:
                return v - 1
            slot = (slot + 1) & mask

    def release(self) -> None:
        """Drop the table (the search is over)."""
        self.slots, self.fps = array("I"), array("q")

    def _grow(self) -> None:
        capacity = len(self.slots) * 2
        self.slots = None  # free the old table before the new one is filled
        self.mask = mask = capacity - 1
        self.slots = slots = array("I", bytes(4 * capacity))
        self.limit = int(capacity * MAX_LOAD)
        for sid, fp in enumerate(self.fps):
            slot = fp & mask
            while slots[slot]:
                slot = (slot + 1) & mask
            slots[slot] = sid + 1


def collision_probability(distinct: int, generated: int) -> float:
    """TLC's optimistic estimate: each of the (generated - distinct) look-ups of an already seen
    fingerprint, and each new one, could have hit another of ``distinct`` 64-bit values by chance."""
    return min(1.0, distinct * max(generated - distinct, 0) / 2.0**64)


class Frontier:
    """A FIFO of states in chunks of ``CHUNK``. Past ``loose`` states held as objects, each further full
    chunk is pickled and compressed into one bytes object (about 20 bytes a state instead of about
    600): small searches pay nothing for it, big ones keep their frontier small."""

    def __init__(self, chunk: int = CHUNK, loose: int = 8 * CHUNK) -> None:
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
