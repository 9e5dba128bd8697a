"""Sweep-line search: fingerprints of one progress layer in memory, not of every state reached.

Why: the breadth-first search keeps a fingerprint of every state it reached (12-16 bytes) and a parent
pointer and action (6 bytes), about 21 bytes a state; m3/c1's 300-350 million states need 7 GB. But every
edge of an acyclic search lowers ``spec.progress_rank``, and a coarse, monotone part of it can be read on
the representatives themselves: ``sweep_key`` (budgets left, down or up, and the message flags and dead
letters gained so far). The sweep-line method (Christensen, Kristensen and Mailund, TACAS 2001) explores the
states layer by layer, highest key first; an edge never leads to a layer already done, so a done layer's
fingerprints are dropped. Only the layer being expanded holds fingerprints: what its states reach in a lower
layer is appended to that layer's file, duplicates included, and deduplicated when that layer's turn comes
(delayed duplicate detection, as in external-memory BFS). Parent pointers are on disk too (``DiskColumn``),
read back only to rebuild a counterexample. Measured on m2/c1: at most 345 895 of its 2 677 145 fingerprints
held (12.9 %), peak 67 MiB against BFS's 158 MiB, for about 1.5x its time (packing what goes to a lower layer,
duplicates too, and judging every such copy's safety where it is generated).

Why the key never rises along an edge (and the search checks it on every successor, raising
``SweepKeyRose`` -- a mistake costs a restart as a breadth-first search, never a verdict): the crash and fault
budgets only fall; the persist budget only falls (model/retire.py sets it to 0 once no crash can come, which
no step undoes); a restart (down -> up) keeps the budgets, a crash spends one; a sent message, its done,
dead and duplicated flags and the dead-letter queue are never taken back, by any step, by the symmetry
renaming (it permutes the records) or by retire (it forgets offsets and processed copies, never a record).

What differs from the breadth-first search: the same states, edges, terminal states and verdicts on a
complete search (tests/model/test_sweep.py), but states are numbered in sweep order, a counterexample is a
path from the initial state, not necessarily a shortest one, and ``depth`` is the longest path by which a
state was first reached.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from array import array
from collections.abc import Callable

from .checkpoint import Checkpoint, decode_actions, encode_actions
from .properties import check_safety, check_terminal, successor_safety
from .spec import Action, ModelConfig, State, initial_state
from .statestore import CHUNK, FingerprintSet, Frontier, pack, unpack

FLUSH_EVERY = 1 << 16  # parent pointers buffered in memory before they go to the file
SPILL_CHUNK = 1024  # entries (or states) a layer packs to its file at once: the objects a waiting layer holds
TRIM_AT = 1 << 16  # expanded states whose ids and depths the layer being expanded forgets at once (half at least)
_HEAD = 8  # bytes of a frame's length in a layer file
CURRENT_LOOSE = 32 * CHUNK  # states the layer being expanded keeps as objects in its frontier (they come back
# soon); past that its frontier is packed to its file too


class SweepKeyRose(Exception):
    """An edge to a layer above its source's: the key is not monotone here, the search restarts as BFS."""


def sweep_key(s: State) -> tuple[int, int, int, int, int]:
    """The layer of a representative: compared as a tuple, it never rises along an edge (see the module)."""
    gained = len(s[8])
    for m in s[4]:
        gained += (m[0] < 0) + m[1] + m[2] + m[3]
    return (s[1], s[2], s[3], 0 if s[0] else 1, -gained)


class DiskColumn:
    """An append-only column of fixed-width ints in a file, read back by index (``array``'s ``append``, ``len`` and
    ``[i]``): a search's parent pointers cost disk, not memory. ``path``: a named file (a checkpoint's), cut to
    ``length`` entries; else a temporary one."""

    def __init__(self, typecode: str, path: str | None = None, length: int = 0) -> None:
        self.typecode = typecode
        self.itemsize = array(typecode).itemsize
        if path is None:
            self.file = tempfile.TemporaryFile(prefix="rmqsim-sweep-")
        else:
            self.file = open(path, "r+b" if os.path.exists(path) else "w+b")  # noqa: SIM115 - closed by close()
            self.file.truncate(length * self.itemsize)
        self.flushed = length
        self.buffer = array(typecode)

    def append(self, value: int) -> None:
        self.buffer.append(value)
        if len(self.buffer) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        """Write the buffer out (os.pwrite, not the file object's buffered write: ``__getitem__`` reads the OS
        file with os.pread, here or in another process that shares the descriptor)."""
        os.pwrite(self.file.fileno(), self.buffer.tobytes(), self.flushed * self.itemsize)
        self.flushed += len(self.buffer)
        self.buffer = array(self.typecode)

    def __len__(self) -> int:
        return self.flushed + len(self.buffer)

    def __getitem__(self, i: int) -> int:
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("column index out of range")
        if i >= self.flushed:
            return self.buffer[i - self.flushed]
        one = array(self.typecode)
        one.frombytes(os.pread(self.file.fileno(), self.itemsize, i * self.itemsize))
        return one[0]

    @property
    def nbytes(self) -> int:
        """Bytes held in memory (the file is not counted)."""
        return len(self.buffer) * self.itemsize

    def close(self) -> None:
        self.file.close()


class _SpillingFrontier(Frontier):
    """The FIFO of the layer being expanded: past ``CURRENT_LOOSE`` states held as objects, each packed chunk goes
    to a file, not to memory."""

    def __init__(self) -> None:
        super().__init__(SPILL_CHUNK, CURRENT_LOOSE)
        self.file = None
        self.spilled = 0  # bytes written (the file is never rewound: it is dropped with the layer)

    def _stored(self, blob: bytes) -> tuple[int, int]:
        if self.file is None:
            self.file = tempfile.TemporaryFile(prefix="rmqsim-sweep-")
        os.pwrite(self.file.fileno(), blob, self.spilled)
        self.spilled += len(blob)
        return self.spilled - len(blob), len(blob)

    def _loaded(self, chunk: tuple[int, int]) -> list:
        offset, length = chunk
        return unpack(os.pread(self.file.fileno(), length, offset))

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def encode_entries(entries: list[tuple]) -> bytes:
    """Layer entries (state, fingerprint, parent id, action id, depth) as one blob: the states packed, the rest
    as columns."""
    states, fps, parents, aids, depths = zip(*entries, strict=True)
    return pickle.dumps((pack(list(states)), array("q", fps).tobytes(), array("i", parents).tobytes(),
                         array("H", aids).tobytes(), array("H", depths).tobytes()), protocol=pickle.HIGHEST_PROTOCOL)


def decode_entries(blob: bytes) -> list[tuple]:
    """``encode_entries`` read back."""
    packed, *raws = pickle.loads(blob)
    columns = [array("q"), array("i"), array("H"), array("H")]
    for column, raw in zip(columns, raws, strict=True):
        column.frombytes(raw)
    return list(zip(unpack(packed), *columns, strict=True))


class LayerFile:
    """What one writer sent to one layer (of one owner): length-prefixed frames of ``encode_entries`` appended to a
    named file, ``SPILL_CHUNK`` entries at a time."""

    __slots__ = ("path", "entries")

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries: list[tuple] = []

    def append(self, entry: tuple) -> None:
        self.entries.append(entry)
        if len(self.entries) >= SPILL_CHUNK:
            self.spill()

    def spill(self) -> None:
        if not self.entries:
            return
        blob = encode_entries(self.entries)
        with open(self.path, "ab") as f:
            f.write(len(blob).to_bytes(_HEAD, "little") + blob)
        self.entries = []


class LayerReader:
    """A layer's entries read back: every writer's file for it, in the order given, ``SPILL_CHUNK`` entries at a
    time (a file's last ones alone), whatever the frames: a checkpoint spills partial frames, and the order in which
    a layer takes its entries, so its ids, must not depend on when that happened. ``remove``: a file read to its end
    is deleted at once (without a checkpoint; with one, the next checkpoint deletes it)."""

    def __init__(self, paths: list[str], remove: bool = True) -> None:
        self.paths = [p for p in paths if os.path.exists(p)]
        self.remove = remove
        self.file = None
        self.held: list[tuple] = []  # read from the current file, not handed out yet

    def read(self) -> list[tuple] | None:
        while True:
            if self.file is None:
                if not self.paths:
                    return None
                self.file = open(self.paths[0], "rb")  # noqa: SIM115 - closed when read to its end
            while len(self.held) < SPILL_CHUNK and (head := self.file.read(_HEAD)):
                self.held.extend(decode_entries(self.file.read(int.from_bytes(head, "little"))))
            if self.held:
                entries, self.held = self.held[:SPILL_CHUNK], self.held[SPILL_CHUNK:]
                return entries
            self.file.close()
            path = self.paths.pop(0)
            if self.remove:
                os.unlink(path)
            self.file = None

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
        if self.remove:
            for path in self.paths:
                os.unlink(path)


def layer_name(key: tuple) -> str:
    """A layer's key as a file name (``{name}-{writer}-{owner}`` are the layer's files)."""
    return "_".join(str(k) for k in key)


class Layer:
    """One key's layer. While below the one being expanded it holds no fingerprint: what reaches it is appended to
    its file as entries (state, fingerprint, parent id, action id, depth), duplicates included (delayed duplicate
    detection, as in external-memory BFS). Once expanded, ``seen`` holds its fingerprints and ``frontier`` (with
    ``ids`` and ``depths`` in FIFO order) the states it accepted and has not expanded yet."""

    __slots__ = ("out", "reader", "pending", "seen", "frontier", "ids", "depths", "popped")

    def __init__(self, path: str, pending: int = 0) -> None:
        self.out = LayerFile(path)
        self.reader: LayerReader | None = None
        self.pending = pending  # entries appended and not yet read back
        self.seen: FingerprintSet | None = None
        self.frontier: _SpillingFrontier | None = None
        self.ids = array("I")
        self.depths = array("H")
        self.popped = 0

    def append(self, state: State, fp: int, parent_id: int, aid: int, at_depth: int) -> None:
        self.out.append((state, fp, parent_id, aid, at_depth))
        self.pending += 1

    def read_chunk(self) -> list[tuple] | None:
        """The oldest entries not read yet, or None."""
        entries = self.reader.read()
        if entries is not None:
            self.pending -= len(entries)
        return entries

    def open(self, remove: bool = True) -> None:
        """Make it the layer being expanded (nothing is appended to it from now on)."""
        self.out.spill()
        self.reader = LayerReader([self.out.path], remove)
        self.seen = FingerprintSet(1 << 14)
        self.frontier = _SpillingFrontier()

    def nbytes(self) -> int:
        held = len(self.ids) * 4 + len(self.depths) * 2
        if self.seen is not None:
            held += self.seen.nbytes + self.frontier.nbytes
        return held

    def close(self) -> None:
        if self.seen is not None:
            self.seen.release()
            self.frontier.close()
            self.reader.close()


class SweepDepth:
    """``StateGraph.depth``'s reading for a sweep: the longest path by which a state was first reached."""

    def __init__(self) -> None:
        self.deepest = 0
        self.nbytes = 0

    def max(self) -> int:
        return self.deepest


def sweep(cfg: ModelConfig, g, result, canon: Callable[[State], State], *, symmetric: bool, collapse: bool,
          reduce: bool, invariants, max_states: int | None, memory_mb: float | None, max_seconds: float | None,
          progress: Callable[[int, int, int], None] | None, start: float,
          fail: Callable[[str, str, str, int], bool], directory: str, checkpoint: Checkpoint | None = None) -> None:
    """Explore from the initial state in sweep order, filling ``g``'s columns and ``result`` (the checker's
    StateGraph and CheckResult); ``fail`` records the first violation (True: stop). Raises the checker's
    ``_RankDidNotDrop`` at an edge that does not lower ``spec.progress_rank``, ``SweepKeyRose`` at one that raises
    ``sweep_key``. Its files are in ``directory``; with ``checkpoint`` (whose directory it is), a layer's end records a
    checkpoint when one is due, and the search resumes from the last one (model/checkpoint.py).

    A state gets its id (and its parent pointer) when its layer accepts it: at once in the layer being expanded,
    else when that layer is expanded and reads it back first. Its safety is judged where it is generated (every
    copy sent to a lower layer is judged; a violating one is accepted at once). Edges are merged per source by the
    target's fingerprint and the action's fairness class, as BFS merges them by target id."""
    from .checker import expand, limit_reached, rss_mb

    saved = checkpoint.saved if checkpoint is not None else None
    states = saved["states"] if saved else 0
    g.parent = DiskColumn("i", os.path.join(directory, "parent"), states)
    g.parent_action = DiskColumn("H", os.path.join(directory, "action"), states)
    g.depth = depth = SweepDepth()
    parent, parent_action = g.parent, g.parent_action
    layers: dict[tuple, Layer] = {}

    def path_of(key) -> str:
        return os.path.join(directory, f"{layer_name(key)}-0-0")  # one writer, one owner

    aid_of: dict[int, tuple[Action, int]] = {}
    incremental_safety = invariants is check_safety
    safe_successor = successor_safety(cfg)
    counters = {"generated": 0, "pruned": 0, "edges": 0, "terminal": 0, "opened": 0, "deepest": 0,
                "peak_held": 1, "held_mb": 0.0}  # peak_held: the most fingerprints held at once
    if saved:
        counters.update(saved["counters"])
        for action in decode_actions(saved["actions"]):
            g.action_id(action)
        for key, pending in saved["layers"]:
            layers[tuple(key)] = Layer(path_of(key), pending)
        result.peak_rss_mb = saved["peak_rss_mb"]
    generated, pruned, edge_count, terminal = (counters[k] for k in ("generated", "pruned", "edges", "terminal"))
    opened, depth.deepest, peak_held, held_mb = (counters[k] for k in ("opened", "deepest", "peak_held", "held_mb"))

    def layer_of(key: tuple) -> Layer:
        nonlocal opened
        layer = layers.get(key)
        if layer is None:
            layer = layers[key] = Layer(path_of(key))
            opened += 1
        return layer

    def accept(layer: Layer, state: State, fp: int, slot: int, from_id: int, aid: int, at_depth: int) -> int:
        """Give ``state`` the next id in ``layer`` (being expanded; ``slot`` the empty slot its probe ended at)."""
        new_id = len(parent)
        layer.seen.insert(slot, fp, len(layer.seen))
        parent.append(from_id)
        parent_action.append(aid)
        layer.ids.append(new_id)
        layer.depths.append(at_depth)
        if at_depth > depth.deepest:
            depth.deepest = at_depth
        layer.frontier.push(state)
        return new_id

    def save() -> None:
        """A checkpoint at a layer's end: what waits in the lower layers is in their files. Every layer left has a
        file: it was made by an append (now spilled) or resumed from one, and is dropped once read to its end."""
        for layer in layers.values():
            layer.out.spill()
        names = ["parent", "action"] + [os.path.basename(layer.out.path) for layer in layers.values()]
        parent.flush()
        parent_action.flush()
        counters.update(generated=generated, pruned=pruned, edges=edge_count, terminal=terminal, opened=opened,
                        deepest=depth.deepest, peak_held=peak_held, held_mb=held_mb)
        checkpoint.save({"states": len(parent), "counters": counters, "actions": encode_actions(g.actions),
                         "layers": [[list(k), layer.pending] for k, layer in layers.items()],
                         "peak_rss_mb": result.peak_rss_mb}, names)

    initial_bad = None
    if not saved:
        s0 = canon(initial_state(cfg))
        layer_of(sweep_key(s0)).append(s0, hash(s0) or 1, -1, 0xFFFF, 0)
        initial_bad = invariants(s0, cfg)  # judged once it has its id, 0
    stop = False
    check_every = 2048
    next_check = check_every
    while layers and not stop:
        if checkpoint is not None and checkpoint.due():
            save()
        key = max(layers)
        layer = layers[key]
        layer.open(remove=checkpoint is None)
        seen, ids, depths, frontier = layer.seen, layer.ids, layer.depths, layer.frontier
        while not stop:
            state = frontier.pop()
            if state is None:
                entries = layer.read_chunk()  # what the layers above sent here, duplicates included
                if entries is None:
                    break
                for state, fp, from_id, aid, at_depth in entries:
                    slot = seen.empty_slot(fp)
                    if slot >= 0:
                        accept(layer, state, fp, slot, from_id, aid, at_depth)
                if len(seen) > peak_held:
                    peak_held = len(seen)
                if initial_bad is not None:
                    stop = fail(initial_bad[0], "safety", initial_bad[1], 0)
                continue
            popped = layer.popped
            if popped >= TRIM_AT and popped + popped >= len(ids):  # drop the expanded states' ids and depths
                del ids[:popped]
                del depths[:popped]
                popped = 0
            sid, at_depth = ids[popped], depths[popped]
            layer.popped = popped + 1
            succ, full = expand(state, cfg, symmetric, collapse, reduce)
            generated += full
            pruned += full - len(succ)
            if not succ:
                terminal += 1
                bad = check_terminal(state, cfg)
                if bad is not None and fail(bad[0], "deadlock" if bad[0] == "deadlock" else "terminal", bad[1], sid):
                    stop = True
                    break
            safe_parent = incremental_safety and result.violation is None
            state_msgs, state_dlq = state[4], state[8]
            keys: set = set()
            for action, nxt in succ:
                c = canon(nxt)
                known = aid_of.get(id(action))
                if known is not None and known[0] is action:
                    aid = known[1]
                else:
                    aid = g.action_id(action)
                    aid_of[id(action)] = (action, aid)
                fp = hash(c) or 1
                edge = fp << 16 | g.action_fair_id[aid]
                new = edge not in keys
                if new:
                    keys.add(edge)
                    edge_count += 1
                if c[4] is state_msgs and c[8] is state_dlq and c[0] is state[0] and c[1] == state[1] \
                        and c[2] == state[2] and c[3] == state[3]:
                    ckey = key  # nothing the key reads changed
                else:
                    ckey = sweep_key(c)
                    if ckey > key:
                        raise SweepKeyRose(f"{action.text()} leads from layer {key} to layer {ckey}")
                if ckey == key:
                    fps, slots, capacity = seen.fps, seen.slots, seen.capacity
                    slot = fp % capacity  # seen.empty_slot(fp), inlined: the hottest path
                    while True:
                        v = slots[slot]
                        if v == 0:
                            break
                        if fps[v - 1] == fp:
                            slot = -1
                            break
                        slot += 1
                        if slot == capacity:
                            slot = 0
                    slots = None  # accept may grow the table: let it free the old slots
                    if slot < 0:
                        continue
                elif not new:
                    continue  # the same target again by an action of the same fairness class: already sent
                if safe_parent:
                    bad = None if safe_successor(state, c) else check_safety(c, cfg)
                else:
                    bad = invariants(c, cfg)
                if ckey == key:
                    new_id = accept(layer, c, fp, slot, sid, aid, at_depth + 1)
                elif bad is None:
                    layer_of(ckey).append(c, fp, sid, aid, at_depth + 1)
                    continue
                else:  # a violation below: accepted at once, its path is what the trace needs
                    new_id = len(parent)
                    parent.append(sid)
                    parent_action.append(aid)
                if bad is not None and fail(bad[0], "safety", bad[1], new_id):
                    stop = True
                    break
            if len(seen) > peak_held:
                peak_held = len(seen)
            if len(parent) >= next_check:
                next_check = len(parent) + check_every
                held_mb = max(held_mb, (sum(lv.nbytes() for lv in layers.values()) + parent.nbytes
                                        + parent_action.nbytes) / 2**20)
                if progress is not None:
                    progress(len(parent), depth.deepest,
                             sum(lv.pending + len(lv.ids) - lv.popped for lv in layers.values()))
                mem = rss_mb()
                result.peak_rss_mb = max(result.peak_rss_mb, mem)
                limit = limit_reached(len(parent), mem, start, max_states, memory_mb, max_seconds)
                if limit is not None:
                    if result.violation is None:
                        result.stop = limit
                    stop = True
        if not stop:
            del layers[key]
            layer.close()
    for layer in layers.values():
        layer.close()
    result.store_mb = held_mb
    g.generated = generated
    g.edge_count = edge_count
    g.por_pruned = pruned
    g.terminal_count = terminal
    result.sweep_layers = opened
    result.sweep_peak_states = peak_held
