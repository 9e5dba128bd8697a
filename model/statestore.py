"""Where the checker keeps what it has seen: 64-bit fingerprints, not states, and a packed BFS frontier.

Why: a state as nested tuples costs about 600 bytes; kept for every reached state, that caps the search
at a few million states in 2 GiB. Like TLC, the visited set holds only a 64-bit fingerprint per state
(8 bytes in a column by state id, and a 4-byte slot of an open-addressing table at least half full); only the frontier
keeps whole states, packed in chunks (``pack``: each distinct part once per chunk). A fingerprint collision
would merge two distinct states and could hide a violation; ``collision_probability`` estimates its
chance the way TLC reports it ("calculated, optimistic").

The fingerprint is Python's ``hash`` of the canonical state: states hold only ints and bools in tuples,
whose hash does not depend on ``PYTHONHASHSEED``, so the search is the same in every process.
"""

from __future__ import annotations

import io
import pickle
import zlib
from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable
from functools import partial
from itertools import repeat

MAX_LOAD = 0.75
CHUNK = 4096


def fingerprint(state: tuple) -> int:
    """A non-zero 64-bit fingerprint (0 marks an empty slot)."""
    return hash(state) or 1


class FingerprintSet:
    """fingerprint -> state id. State ids are dense (0, 1, 2, ...), so the fingerprints are a column indexed
    by id (8 bytes a state) and the hash table holds only ``id + 1`` (4 bytes a slot, 0 = empty), open
    addressing with linear probing over ``fingerprint mod capacity``.

    The table grows by half when it is three quarters full, so it is never less than half full after the
    first growth: at most 8 bytes of slots a state (doubling would leave it a third full, 10.7 bytes), and
    with the column and the checker's parent id (4) and action (2), at most 22 bytes a state.
    """

    def __init__(self, capacity: int = 1 << 16) -> None:
        self.capacity = capacity
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
        slots, fps, capacity = self.slots, self.fps, self.capacity
        slot = fp % capacity
        while True:
            v = slots[slot]
            if v == 0:
                return -1
            if fps[v - 1] == fp:
                return v - 1
            slot += 1
            if slot == capacity:
                slot = 0

    def empty_slot(self, fp: int) -> int:
        """The empty slot where ``fp`` would go (for ``insert``), or -1 when it is already there."""
        slots, fps, capacity = self.slots, self.fps, self.capacity
        slot = fp % capacity
        while True:
            v = slots[slot]
            if v == 0:
                return slot
            if fps[v - 1] == fp:
                return -1
            slot += 1
            if slot == capacity:
                slot = 0

    def get_or_add(self, fp: int, sid: int) -> int:
        """The id stored for ``fp``; when absent, store it under ``sid`` (the next id) and return -1."""
        slots, fps, capacity = self.slots, self.fps, self.capacity
        slot = fp % capacity
        while True:
            v = slots[slot]
            if v == 0:
                if sid != len(fps):
                    raise ValueError(f"state ids are dense: expected {len(fps)}, not {sid}")
                fps.append(fp)
                slots[slot] = sid + 1
                if len(fps) > self.limit:
                    slots = None  # let grow free the old table before it fills the new one
                    self.grow()
                return -1
            if fps[v - 1] == fp:
                return v - 1
            slot += 1
            if slot == capacity:
                slot = 0

    def insert(self, slot: int, fp: int, sid: int) -> bool:
        """Store ``fp`` under ``sid`` (the next id) in ``slot``, the empty slot its probe ended at (the checker
        inlines the probe of ``get_or_add``); True when the table grew (its slots and capacity changed)."""
        fps = self.fps
        if sid != len(fps):
            raise ValueError(f"state ids are dense: expected {len(fps)}, not {sid}")
        if self.slots[slot] != 0:
            raise ValueError(f"slot {slot} is taken")
        fps.append(fp)
        self.slots[slot] = sid + 1
        if len(fps) > self.limit:
            self.grow()
            return True
        return False

    def release(self) -> None:
        """Drop the table (the search is over)."""
        self.slots, self.fps = array("I"), array("q")

    def grow(self) -> None:
        """Half as many slots again, every fingerprint re-placed: ``insert`` calls it past ``limit`` (the checkers'
        inlined inserts too, with their own reference to the old slots dropped first)."""
        capacity = max(self.capacity + self.capacity // 2, self.capacity + 2)
        if capacity > 0xFFFFFFFF:
            raise OverflowError("more than 2**32 - 2 states: the table keeps 32-bit ids")
        self.slots = None  # free the old table before the new one is filled
        self.capacity = capacity
        self.slots = slots = array("I", bytes(4 * capacity))
        self.limit = int(capacity * MAX_LOAD)
        for sid, fp in enumerate(self.fps):
            slot = fp % capacity
            while slots[slot]:
                slot += 1
                if slot == capacity:
                    slot = 0
            slots[slot] = sid + 1


class Depths:
    """BFS depth by state id, kept as the first id of each depth: a few bytes a depth, not 2 bytes a state.

    Why it is exact: the checker hands out ids in BFS order, so the depth never decreases with the id; the
    depth of id ``i`` is the last depth whose first id is at most ``i``. Reads like the ``array`` it replaces
    (``len``, ``[i]``, ``append``, iteration); an ``append`` that would lower the depth is refused.
    """

    def __init__(self) -> None:
        self.starts = array("Q")  # starts[d]: the first id at depth d (empty depths repeat the next start)
        self.count = 0

    def __len__(self) -> int:
        return self.count

    @property
    def nbytes(self) -> int:
        return len(self.starts) * 8

    def append(self, depth: int) -> None:
        if depth < len(self.starts) - 1:
            raise ValueError(f"depths come in BFS order: {depth} after {len(self.starts) - 1}")
        while len(self.starts) <= depth:
            self.starts.append(self.count)
        self.count += 1

    def __getitem__(self, i: int) -> int:
        if i < 0:
            i += self.count
        if not 0 <= i < self.count:
            raise IndexError("depth index out of range")
        return bisect_right(self.starts, i) - 1

    def __iter__(self):
        for d in range(len(self.starts)):
            end = self.starts[d + 1] if d + 1 < len(self.starts) else self.count
            yield from repeat(d, end - self.starts[d])

    def max(self) -> int:
        """The deepest depth reached (0 when empty)."""
        return len(self.starts) - 1 if self.count else 0


def collision_probability(distinct: int, generated: int, held: int | None = None) -> float:
    """TLC's optimistic estimate: each of the (generated - distinct) look-ups of an already seen
    fingerprint, and each new one, could have hit another of ``distinct`` 64-bit values by chance.

    ``held``: the most fingerprints one look-up is compared with, when a search never holds them all. A sweep
    compares a state only with its own layer's (model/sweep.py), so summed over layers TLC's terms are at most
    ``held`` (its largest layer) times the repeated look-ups; TLC's global formula would over-count by
    ``distinct / held``. Split among peers (model/sweep_workers.py) a layer's look-ups meet half its fingerprints
    each, which share the owner's bit: the same sum."""
    return min(1.0, (distinct if held is None else min(held, distinct)) * max(generated - distinct, 0) / 2.0**64)


class _PlainPickler(pickle.Pickler):
    """Pickles a tuple subclass (a named tuple) as ``tuple.__new__(cls, values)``: loading it runs no Python
    code, where the named tuple's own ``__reduce_ex__`` and ``__new__`` do."""

    def reducer_override(self, obj):
        if isinstance(obj, tuple):
            return tuple.__new__, (type(obj), tuple(obj))
        return NotImplemented


def _pickled(obj: object) -> bytes:
    out = io.BytesIO()
    _PlainPickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return out.getvalue()


def pack(states: list) -> bytes:
    """A chunk of states as bytes: per field (column), each distinct value once, and the states as rows of
    indices into them.

    Why not ``pickle.dumps(states)``: unpickling builds every named tuple with its Python ``__new__``, and the
    checker's states share most of their parts: model/retire.py's representatives reuse a few thousand part
    objects, and the small parts (message records, process queue, dead letters) take few values. So each
    column is reduced to its distinct objects (by identity, then by value: a column holds values of one kind,
    so equal values are interchangeable), only those are pickled, as plain tuples (``_PlainPickler``), and the rows
    are arrays of ints, built and read without a Python loop over the states. A column of flags or small ints
    alone (``up`` and the budgets) is its values as bytes: no dictionaries (0.8 us a state less on m2/c1 chunks of
    1024). Chunks whose states are not tuples of one type and one length are pickled as they are.
    """
    kinds = set(map(type, states))
    widths = set(map(len, states)) if all(issubclass(k, tuple) for k in kinds) else ()
    if len(kinds) != 1 or len(widths) != 1 or 0 in widths:
        return zlib.compress(pickle.dumps((None, states), protocol=pickle.HIGHEST_PROTOCOL), 1)
    kinds_of_states = kinds.pop()
    fields: list = []
    rows = []
    for column in zip(*states, strict=True):
        kinds = set(map(type, column))
        if len(kinds) == 1 and (kinds <= {bool, int}):  # a flag or a small budget: its values as bytes
            try:
                rows.append((kinds.pop() is bool, bytes(column)))
                continue
            except ValueError:  # an int outside 0..255
                pass
        ids = list(map(id, column))
        by_id = dict(zip(ids, column, strict=True))  # ``states`` keeps every object alive: ids are unique
        by_value = dict.fromkeys(by_id.values())
        first = len(fields)
        number = dict(zip(by_value, range(first, first + len(by_value)), strict=True))
        fields.extend(by_value)
        number_of_id = dict(zip(by_id, map(number.__getitem__, by_id.values()), strict=True))
        rows.append(array("I", map(number_of_id.__getitem__, ids)))
    return zlib.compress(_pickled((kinds_of_states, fields, rows)), 1)


_FLAG = (False, True).__getitem__


def _column(at, row) -> Iterable:
    """A column's values from its row: indices into the fields, or (flags?, the values as bytes)."""
    if type(row) is tuple:
        flags, raw = row
        return map(_FLAG, raw) if flags else raw
    return map(at, row)


def unpack(blob: bytes) -> list:
    """The states ``pack`` packed, in order (equal to them, of the same types all the way down)."""
    table = pickle.loads(zlib.decompress(blob))
    if table[0] is None:
        return table[1]
    kind, fields, rows = table
    at = fields.__getitem__
    return list(map(partial(tuple.__new__, kind), zip(*[_column(at, row) for row in rows], strict=True)))


class Frontier:
    """A FIFO of states in chunks of ``CHUNK``. Past ``loose`` states held as objects, each further full
    chunk is packed (``pack``) and compressed into one bytes object (about 20 bytes a state instead of about
    600): small searches pay nothing for it, big ones keep their frontier small. ``loose`` is 32 chunks (131 072
    states, some 25 MiB): packing and unpacking cost about 6 us a state, a tenth of the checker's time on m2/c1
    when 8 chunks kept nearly every state packed."""

    def __init__(self, chunk: int = CHUNK, loose: int = 32 * CHUNK) -> None:
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
                self.chunks.append(self._stored(pack(self.tail)))
            self.tail = []

    def _stored(self, blob: bytes):
        """Where a packed chunk is kept (here: in memory, the blob itself)."""
        self.nbytes += len(blob)
        return blob

    def _loaded(self, chunk) -> list:
        """The states of a chunk ``_stored`` kept."""
        self.nbytes -= len(chunk)
        return unpack(chunk)

    def pop(self):
        """The oldest state, or None when empty."""
        if self.pos >= len(self.head):
            if self.chunks:
                chunk = self.chunks.popleft()
                if isinstance(chunk, list):
                    self.loose_count -= len(chunk)
                    self.head = chunk
                else:
                    self.head = self._loaded(chunk)
            elif self.tail:
                self.head, self.tail = self.tail, []
            else:
                return None
            self.pos = 0
        state = self.head[self.pos]
        self.pos += 1
        return state
