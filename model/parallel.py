"""``check(..., workers=N)``: the acyclic BFS with its expensive half in N forked worker processes.

Why this shape: the search must find exactly what the serial one finds (same ids, parents, depths, statistics,
counterexample), so it stays level-synchronous and the parent keeps the one visited set. Per BFS level the
frontier is split into N contiguous slices; each worker expands its slice (successors, the rank check,
partial-order reduction, canonical form, fingerprint, terminal checks, and the safety and pending bit of each
successor it has not met earlier in the level) and sends back in parts of ``PART`` states, per successor only
(fingerprint, action, safety verdict, pending bit): about 14 bytes, no state.
The parent walks those results in frontier order doing what model/checker.py's loop does with a successor
(fingerprint table, columns, first violation, limits), then tells each worker which of its successors were new.
The new states stay in the worker that made them; before the next level the parent moves packed pieces
(statestore.pack) between workers so that the slices are again equal, forwarding bytes it never unpacks.

Memory: a worker holds its states packed (past ``LOOSE`` a level), about 5-9 bytes a state instead of a few
hundred as tuples: the successors it judged are packed once per part, right after they are made, and stay in
that blob until they are expanded; the commit only picks the new ones (a selection byte each, a blob cut
between two slices going to both); the slice is unpacked a blob at a time. The fingerprints met in a level are
an array table (``_Met``). What grows with the search is then the parent's columns (about 22 bytes a state).

A design that partitions states by fingerprint (each worker owns ``fp mod N``) would spare the parent's walk,
but hands out ids in an order that depends on N; this one keeps the serial numbering.

A search that stops in the middle of a level (a limit, a violation) sets an Event the workers look at before each
part: each finishes at most the part it is expanding and answers, so the parent drains and stops them at once
instead of waiting for the rest of the level; the result is the parent's alone, so it is the same.

Only for searches whose graph is proven acyclic (no edges kept) and that stop at the first violation; a rank
that does not drop raises ``_RankDidNotDrop`` at the state the serial search would, and ``check`` then
restarts serially with the edge store, as it does without workers.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from array import array
from collections import deque
from itertools import compress, islice
from multiprocessing.connection import wait

from . import por as _por
from .properties import check_safety, check_terminal, successor_safety
from .spec import ModelConfig, initial_state, is_pending, ranks_drop, successors
from .statestore import FingerprintSet, fingerprint, pack, unpack
from .symmetry import identity

PART = 1024  # expanded states per message from a worker
_RANK = 1  # flags of an expanded state: its successors do not all lower spec.progress_rank
_TERMINAL = 2  # no successor
_UNJUDGED = 2  # a successor's safety verdict: not computed (see ``_expand``'s ``met``); 0 safe, 1 violated


class _Job:
    """What every worker needs, fixed for one search (inherited through fork, never pickled). ``halt``: a
    multiprocessing Event the parent sets when the search stops in the middle of a level (a limit or a
    violation); a worker looks at it before each part, so that it stops expanding what nobody will read."""

    def __init__(self, cfg: ModelConfig, symmetry: bool, collapse: bool, reduce: bool, canon, invariants,
                 halt) -> None:
        self.cfg, self.symmetry, self.collapse, self.reduce = cfg, symmetry, collapse, reduce
        self.canon, self.invariants, self.halt = canon, invariants, halt


class _Met:
    """The fingerprints a worker produced earlier in this level: open addressing with linear probing in an
    ``array("q")`` (0 = empty; fingerprints are never 0), a power of two slots, at most half full.

    Why not a ``set``: a set of 64-bit ints costs about 74 bytes a fingerprint (a 40-byte int object and 34 bytes
    of table, measured), and a level of millions of successors makes that a worker's largest structure; this is
    16 to 32 bytes. ``_expand`` inlines the probe."""

    def __init__(self, capacity: int = 1 << 12) -> None:
        self.table = array("q", bytes(8 * capacity))
        self.mask = capacity - 1  # capacity is a power of two
        self.count = 0
        self.limit = capacity // 2

    def __len__(self) -> int:
        return self.count

    def __contains__(self, fp: int) -> bool:
        table, mask = self.table, self.mask
        slot = fp & mask
        while True:
            v = table[slot]
            if v == fp:
                return True
            if v == 0:
                return False
            slot = (slot + 1) & mask

    def add(self, fp: int) -> None:
        """Store ``fp`` (not stored yet)."""
        table, mask = self.table, self.mask
        slot = fp & mask
        while table[slot]:
            slot = (slot + 1) & mask
        table[slot] = fp
        self.count += 1
        if self.count > self.limit:
            self.grow()

    def grow(self) -> None:
        old = self.table
        capacity = 2 * (self.mask + 1)
        self.table = table = array("q", bytes(8 * capacity))
        self.mask = mask = capacity - 1
        self.limit = capacity // 2
        for fp in old:
            if fp:
                slot = fp & mask
                while table[slot]:
                    slot = (slot + 1) & mask
                table[slot] = fp


_JUDGED = bytes(1 if u != _UNJUDGED else 0 for u in range(256))  # bytes.translate: 1 where a state was kept


def _expand(job: _Job, slice_: list, safe_successor, aid_of: dict, actions: list, produced: list, met: _Met) -> tuple:
    """Expand the states of one slice, in order; the canonical states of the successors it judged go to
    ``produced`` (the others are ``_UNJUDGED``).

    ``met``: the fingerprints this worker produced earlier in this level. The parent walks those earlier successors
    first, so it finds such a state already known: its safety and pending bit are not computed (``_UNJUDGED``),
    and it is not kept.
    """
    table, tmask, met_count, met_limit = met.table, met.mask, met.count, met.limit
    cfg, symmetry, collapse, reduce = job.cfg, job.symmetry, job.collapse, job.reduce
    canon, invariants = job.canon, job.invariants
    no_canon = canon is identity
    incremental = invariants is check_safety
    counts, full_counts, flags = array("I"), array("I"), array("B")
    fps, aids, unsafe, pend = array("q"), array("I"), array("B"), array("B")
    bad_of: dict[int, tuple[str, str]] = {}  # successor index -> the safety violation
    terminal_bad: dict[int, tuple[str, str]] = {}  # state index -> the terminal or deadlock violation
    first_new_action = len(actions)
    keep = produced.append
    for t, state in enumerate(slice_):
        succ = successors(state, cfg, symmetry, collapse)
        full = len(succ)
        if not ranks_drop(state, succ):
            counts.append(0)
            full_counts.append(full)
            flags.append(_RANK)
            break  # the parent stops here (or earlier): nothing after it is needed
        if reduce:
            succ = _por.reduce(state, cfg, succ)
        counts.append(len(succ))
        full_counts.append(full)
        if not succ:
            flags.append(_TERMINAL)
            bad = check_terminal(state, cfg)
            if bad is not None:
                terminal_bad[t] = bad
            continue
        flags.append(0)
        state_msgs = state[4]
        state_pending = is_pending(state)
        # The parent expanded here was checked safe (the search stops at its first violation): safe_successor's premise.
        for action, nxt in succ:
            c = nxt if no_canon else canon(nxt)
            known = aid_of.get(id(action))
            if known is not None and known[0] is action:
                aids.append(known[1])
            else:
                la = len(actions)
                actions.append(action)
                aid_of[id(action)] = (action, la)
                aids.append(la)
            fp = hash(c) or 1  # statestore.fingerprint, inlined
            fps.append(fp)
            slot = fp & tmask  # _Met's probe, inlined
            while True:
                v = table[slot]
                if v == 0:
                    break
                if v == fp:
                    break
                slot = (slot + 1) & tmask
            if v:  # met earlier in this level: the parent knows it by the time it reaches this one
                pend.append(0)
                unsafe.append(_UNJUDGED)
                continue
            table[slot] = fp
            met_count += 1
            if met_count > met_limit:
                met.count = met_count
                met.grow()
                table, tmask, met_limit = met.table, met.mask, met.limit
            pend.append(state_pending if c[4] is state_msgs else is_pending(c))
            if incremental:
                bad = None if safe_successor(state, c) else check_safety(c, cfg)
            else:
                bad = invariants(c, cfg)
            if bad is None:
                unsafe.append(0)
            else:
                unsafe.append(1)
                bad_of[len(fps) - 1] = bad
            keep(c)
    met.count = met_count
    return (counts, full_counts, flags, terminal_bad, fps, aids, unsafe, bad_of, pend, actions[first_new_action:])


def _serve(conn, job: _Job) -> None:
    """A worker's loop: ``expand`` a slice, ``commit`` which successors were new and hand pieces on, ``stop``.
    A Python error is sent to the parent as ("error", traceback), which raises it."""
    try:
        _loop(conn, job)
    except Exception:  # noqa: BLE001 - not swallowed: the parent raises it with this traceback
        import traceback

        conn.send(("error", traceback.format_exc()))


def _states(items: deque):
    """The states of a slice's items, in order, taking each item off ``items`` when it is read: a list of states,
    or ``(blob, selection)``: the states ``pack`` packed in ``blob``, those whose byte in ``selection`` is 1."""
    while items:
        item = items.popleft()
        if type(item) is list:
            yield from item
        else:
            blob, selection = item
            yield from unpack(blob) if selection is None else compress(unpack(blob), selection)


class _Router:
    """Hands a worker's new states on, in id order, to the worker that expands them next: ``routes`` are
    (end, worker) over the new states' indices, ascending, covering them all. The new states of a part come as
    a list (``loose``) or as its packed blob and which of its states are new (``packed``, never unpacked here);
    the items are then a list of states, or ``(blob, selection)``, a blob that two routes share going to both
    with its own selection each."""

    def __init__(self, routes: list[tuple[int, int]]) -> None:
        self.routes = routes
        self.r = 0  # the route the next state takes
        self.pos = 0  # the next state's index among the new states
        self.items: list[tuple[int, object]] = []  # (worker, item), in order

    def _take(self, want: int) -> tuple[int, int]:
        """How many of ``want`` next states stay on the current route, and its worker."""
        while self.r < len(self.routes) and self.routes[self.r][0] <= self.pos:
            self.r += 1  # ended (or empty) routes
        if self.r == len(self.routes):
            raise ValueError(f"new state {self.pos} is on no route: {self.routes}")
        end, worker = self.routes[self.r]
        return min(want, end - self.pos), worker

    def loose(self, states: list) -> None:
        while states:
            take, worker = self._take(len(states))
            if take == len(states):
                self.items.append((worker, states))
                states = []
            else:
                self.items.append((worker, states[:take]))
                states = states[take:]
            self.pos += take

    def packed(self, blob: bytes, selection: bytes) -> None:
        left = selection.count(1)
        start = 0
        while left:
            take, worker = self._take(left)
            if take == left:
                cut = len(selection)
            else:
                cut = start
                for _ in range(take):
                    cut = selection.index(1, cut) + 1
            self.items.append((worker, (blob, bytes(start) + selection[start:cut] + bytes(len(selection) - cut))))
            self.pos += take
            left -= take
            start = cut

    def sent(self, me: int, blob_states: int) -> tuple[list, list]:
        """(this worker's items, [(worker, item)] for the others): the lists of states handed on are packed first, in
        blobs of at most ``blob_states``."""
        kept, pieces = [], []
        loose: list = []
        for at, (worker, item) in enumerate(self.items):
            if worker == me:
                kept.append(item)
                continue
            if type(item) is not list:
                pieces.append((worker, item))
                continue
            loose.extend(item)
            if at + 1 < len(self.items) and self.items[at + 1][0] == worker and type(self.items[at + 1][1]) is list:
                continue  # the next item goes on with this list
            for lo in range(0, len(loose), blob_states):
                pieces.append((worker, (pack(loose[lo:lo + blob_states]), None)))
            loose = []
        return kept, pieces


BLOB = 4096  # states per packed blob handed on (statestore.CHUNK: the bigger, the fewer bytes a state)
# Successors a worker keeps unpacked per level before it packs them: packing costs 4-8 us a state (some 10 % of a
# worker's time when every state is packed), a loose state about 180 bytes. 1 << 17 holds the largest m2/c1 level
# (164 322 states, half a worker) loose: about 25 MiB more at a worker's peak, bounded by this count on any search.
LOOSE = 1 << 17


def _loop(conn, job: _Job) -> None:
    """Past ``LOOSE`` states, every state a worker holds between two messages is packed (statestore.pack) once:
    the successors it judged, a blob per part, stay in that blob until the next level expands them; the
    commit only picks which of them are new (a selection byte each). The slice is unpacked a blob at a time."""
    safe_successor = successor_safety(job.cfg)
    aid_of: dict = {}
    actions: list = []
    produced: list[tuple[list | bytes, bytes]] = []  # per part: (the judged successors, loose or packed; judged)
    kept: list = []  # this worker's part of the next level (new states in id order), as _states' items
    me = -1  # this worker in its routes (no worker's index)
    expanded = 0  # states this worker expanded, over the whole search (reported at the stop)
    met_before = 0  # fingerprints the last level's _Met held
    halted = job.halt.is_set
    while True:
        message = conn.recv()
        kind = message[0]
        if kind == "expand":
            _, before, after, size = message  # size: the states of this slice
            states = _states(deque([*before, *kept, *after]))
            kept = before = after = []
            produced = []
            loose = 0  # judged successors kept unpacked in this level
            # Sized for as many fingerprints as the last level met: BFS levels change size slowly, and each doubling
            # rehashes every fingerprint met so far (1.5 % of a worker's time on m2/c1 when every level began at 4096).
            met = _Met(max(1 << 12, 1 << (2 * met_before).bit_length()))
            # In parts, so that the parent walks the first ones while this worker computes the rest (and packs).
            for lo in range(0, max(size, 1), PART):
                if halted():  # the search stopped in this level: the rest of the slice is not read
                    conn.send((True, None))
                    break
                slice_, made = list(islice(states, PART)), []
                part = _expand(job, slice_, safe_successor, aid_of, actions, made, met)
                expanded += len(part[0])
                last = lo + PART >= size or bool(len(part[2]) and part[2][-1] & _RANK)
                conn.send((last, part))
                judged = part[6].tobytes().translate(_JUDGED)
                if loose + len(made) <= LOOSE:
                    loose += len(made)
                    produced.append((made, judged))
                else:
                    loose = LOOSE + 1  # from here on, this level packs
                    produced.append((pack(made), judged))
                del slice_, made
                if last:
                    break
            met_before = len(met)
            del states, met
        elif kind == "commit":
            _, mask, own, pieces = message  # own: (lo, hi) kept here; pieces: [(worker, lo, hi)] handed on
            spans = sorted([(own[0], own[1], me)] + [(lo, hi, k) for k, lo, hi in pieces])
            router = _Router([(hi, k) for lo, hi, k in spans if lo < hi])
            at = 0
            for states, judged in produced:
                n = len(judged)
                selection = bytes(compress(mask[at:at + n], judged))
                at += n
                if type(states) is list:
                    router.loose(list(compress(states, selection)))
                else:
                    router.packed(states, selection)
            if at != len(mask) or router.pos != sum(hi - lo for lo, hi, _ in spans):
                raise ValueError(f"commit: {len(mask)} mask bytes for {at} successors, "
                                 f"{router.pos} new states for {spans}")
            produced = []
            kept, handed = router.sent(me, BLOB)
            del router
            conn.send(handed)
        else:  # stop: report what this process cost and did
            import resource

            conn.send((time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # wall-clock ok
                       expanded))
            return


def _received(conn):
    """The worker's reply, or its error raised here."""
    reply = conn.recv()
    if type(reply) is tuple and reply and type(reply[0]) is str and reply[0] == "error":
        raise RuntimeError(f"a --workers process failed:\n{reply[1]}")
    return reply


class _Inbox:
    """The workers' parts of one level, read as they come (multiprocessing.connection.wait), handed out in
    worker order: while the parent walks worker 0's parts, worker 1's are read into memory, so no worker waits
    on a full pipe."""

    def __init__(self, conns: list) -> None:
        self.conns = conns
        self.queues: list[deque] = [deque() for _ in conns]
        self.done = [False] * len(conns)

    def start(self) -> None:
        self.done = [False] * len(self.conns)

    def parts(self, k: int):
        queue = self.queues[k]
        while True:
            while not queue:
                self._pump()
            last, part = queue.popleft()
            yield part
            if last:
                return

    def drain(self) -> None:
        """Read what the workers still send of this level (the search stopped in the middle of it and set the
        halt): at most the part each is expanding, then its last message, ``(True, None)`` if it had not ended."""
        while not all(self.done):
            self._pump()
        for queue in self.queues:
            queue.clear()

    def _pump(self) -> None:
        open_ = [c for c, done in zip(self.conns, self.done, strict=True) if not done]
        for conn in wait(open_):
            k = self.conns.index(conn)
            message = _received(conn)
            self.queues[k].append(message)
            if message[0]:
                self.done[k] = True


def reap(procs: list, conns: list) -> None:
    """End a search's processes (those still alive: stopped by an error) and close its pipes."""
    for proc in procs:
        if proc.is_alive():
            proc.kill()  # only the processes this search started
            proc.join()
    for conn in conns:
        conn.close()


def _rss_mb_of(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def _split(total: int, n: int) -> list[int]:
    """Boundaries of n contiguous slices of ``total`` items, as equal as can be."""
    return [total * k // n for k in range(n + 1)]


def explore(cfg: ModelConfig, *, workers: int, symmetry: bool, fairness: bool, max_states: int | None,
            memory_mb: float | None, max_seconds: float | None, progress, invariants, collapse_ticks: bool,
            por: bool, retire: bool, compact: bool):
    """model/checker.py's ``_explore`` with ``store_edges=False`` and ``explore_after_violation=0``, on workers."""
    from .checker import (
        STOP_VIOLATION,
        Violation,
        _acyclic_search,
        _finish,
        _RankDidNotDrop,
        limit_reached,
        rss_mb,
    )

    g, result, canon, collapse, reduce = _acyclic_search(cfg, symmetry, fairness, collapse_ticks, por, retire, compact)
    result.workers = workers
    start = time.perf_counter()  # wall-clock ok: statistics and the time limit only
    cpu_start = time.process_time()  # wall-clock ok: statistics only
    seen = FingerprintSet()
    parent, parent_action, depth, pending, terminal = g.parent, g.parent_action, g.depth, g.pending, g.terminal
    action_fair_id = g.action_fair_id

    def fail(prop: str, kind: str, why: str, sid: int) -> None:
        result.violation = Violation(prop, kind, why, sid, g.path_to(sid))
        result.stop = STOP_VIOLATION

    s0 = canon(initial_state(cfg))
    seen.get_or_add(fingerprint(s0), 0)
    parent.append(-1)
    parent_action.append(0xFFFF)
    depth.append(0)
    pending.append(1 if is_pending(s0) else 0)
    terminal.append(0)
    bad = invariants(s0, cfg)
    if bad is not None:
        fail(bad[0], "safety", bad[1], 0)

    context = multiprocessing.get_context("fork")
    job = _Job(cfg, symmetry, collapse, reduce, canon, invariants, context.Event())
    conns, procs = [], []
    worker_cpu = 0.0
    worker_peak_mb = 0.0
    worker_expanded = 0
    try:
        for _ in range(workers):
            mine, theirs = context.Pipe()
            proc = context.Process(target=_serve, args=(theirs, job), daemon=True)
            proc.start()
            theirs.close()
            conns.append(mine)
            procs.append(proc)
        amaps: list[list[int]] = [[] for _ in range(workers)]  # per worker: its action index -> the graph's id
        wactions: list[list] = [[] for _ in range(workers)]
        incoming: list[tuple[list, list]] = [([(pack([s0]), None)] if k == 0 else [], []) for k in range(workers)]
        sizes = [1] + [0] * (workers - 1)  # the states each worker expands in this level
        fps_, slots, capacity, grow_at = seen.fps, seen.slots, seen.capacity, seen.limit
        depth_append = depth.append
        i = 0
        level = 0
        generated = edge_count = pruned = 0
        check_every = 2048
        next_check = check_every
        stop = result.violation is not None
        inbox = _Inbox(conns)
        while not stop:
            for k, conn in enumerate(conns):
                conn.send(("expand", incoming[k][0], incoming[k][1], sizes[k]))
            inbox.start()
            next_depth = level + 1
            masks: list[list[bytearray]] = [[] for _ in range(workers)]
            made = []  # new states per worker, in id order
            for k in range(workers):  # in worker order: slice k holds smaller ids than slice k+1
                amap, wact = amaps[k], wactions[k]
                before = len(parent)
                for part in inbox.parts(k):
                    counts, full_counts, flags, terminal_bad, fps, aids, unsafe, bad_of, pend, new_actions = part
                    wact.extend(new_actions)
                    amap.extend([-1] * len(new_actions))
                    mask = bytearray(len(fps))
                    masks[k].append(mask)
                    u = 0
                    for t in range(len(counts)):
                        if flags[t] & _RANK:
                            raise _RankDidNotDrop
                        n = counts[t]
                        generated += full_counts[t]
                        pruned += full_counts[t] - n
                        if not n:
                            terminal[i] = 1
                            bad = terminal_bad.get(t)
                            if bad is not None:
                                fail(bad[0], "deadlock" if bad[0] == "deadlock" else "terminal", bad[1], i)
                                stop = True
                                break
                        keys: set = set()
                        base = u
                        for u in range(base, base + n):
                            la = aids[u]
                            aid = amap[la]
                            if aid < 0:
                                aid = amap[la] = g.action_id(wact[la])
                            fp = fps[u]
                            slot = fp % capacity  # FingerprintSet.get_or_add's probe, inlined (as the serial loop)
                            while True:
                                v = slots[slot]
                                if v == 0:
                                    j = -1
                                    break
                                if fps_[v - 1] == fp:
                                    j = v - 1
                                    break
                                slot += 1
                                if slot == capacity:
                                    slot = 0
                            if j < 0:
                                j = len(parent)
                                fps_.append(fp)  # FingerprintSet.insert, inlined (ids are dense, the slot was empty)
                                slots[slot] = j + 1
                                if j >= grow_at:  # the table grows: let it free the old slots before it fills the new ones
                                    slots = None
                                    seen.grow()
                                    slots, capacity, grow_at = seen.slots, seen.capacity, seen.limit
                                parent.append(i)
                                parent_action.append(aid)
                                depth_append(next_depth)
                                pending.append(pend[u])
                                terminal.append(0)
                                mask[u] = 1
                                if unsafe[u]:
                                    if unsafe[u] == _UNJUDGED:
                                        raise AssertionError(f"state {j} was not judged by its worker")
                                    b = bad_of[u]
                                    fail(b[0], "safety", b[1], j)
                                    edge_count += 1
                                    stop = True
                                    break
                            key = j << 16 | action_fair_id[aid]
                            if key in keys:
                                continue
                            keys.add(key)
                            edge_count += 1
                        else:
                            u = base + n
                            i += 1
                            if len(parent) >= next_check:
                                next_check = len(parent) + check_every
                                if progress is not None:
                                    progress(len(parent), level, len(parent) - i)
                                mem = rss_mb()
                                result.peak_rss_mb = max(result.peak_rss_mb, mem)
                                result.store_mb = max(result.store_mb, (seen.nbytes + g.nbytes()) / 2**20)
                                total_mb = mem + sum(_rss_mb_of(p.pid) for p in procs) if memory_mb is not None else mem
                                limit = limit_reached(len(parent), total_mb, start, max_states, memory_mb, max_seconds)
                                if limit is not None:
                                    result.stop = limit
                                    stop = True
                                    break
                            continue
                        stop = True  # a violation inside the successors
                        break
                    if stop:
                        break
                if stop:
                    break
                made.append(len(parent) - before)
            if stop:
                job.halt.set()
                inbox.drain()
                break
            if not sum(made):
                break  # the next level is empty: the search is complete
            # Hand the new states on so that every worker expands an equal contiguous slice of the next level.
            total = sum(made)
            bounds = _split(total, workers)
            offsets = [sum(made[:k]) for k in range(workers + 1)]
            for k, conn in enumerate(conns):
                lo_k, hi_k = offsets[k], offsets[k + 1]
                own = (max(bounds[k], lo_k) - lo_k, max(min(bounds[k + 1], hi_k) - lo_k, 0))
                pieces = []
                for w in range(workers):
                    if w == k:
                        continue
                    lo, hi = max(bounds[w], lo_k), min(bounds[w + 1], hi_k)
                    if lo < hi:
                        pieces.append((w, lo - lo_k, hi - lo_k))
                conn.send(("commit", b"".join(masks[k]), own, pieces))
            incoming = [([], []) for _ in range(workers)]
            sizes = [bounds[k + 1] - bounds[k] for k in range(workers)]
            for k, conn in enumerate(conns):
                for w, blob in _received(conn):
                    incoming[w][0 if k < w else 1].append(blob)
            level += 1
        g.generated = generated
        g.edge_count = edge_count
        g.por_pruned = pruned
        for conn in conns:
            conn.send(("stop",))
        for conn in conns:
            cpu, peak, expanded = _received(conn)
            worker_cpu += cpu
            worker_peak_mb = max(worker_peak_mb, peak)
            worker_expanded += expanded
        for proc in procs:
            proc.join()
    finally:
        reap(procs, conns)
    _finish(result, seen, canon, symmetry, invariants, start, cpu_start, worker_cpu)
    result.worker_peak_rss_mb = worker_peak_mb
    result.worker_cpu_seconds = worker_cpu
    result.worker_expanded = worker_expanded
    return result
