"""``check(..., sweep=True, workers=N)``: the sweep-line search (model/sweep.py) on N forked peer processes.

Why peers and not model/parallel.py's parent-and-slices: a sweep sends most successors to lower layers, and
those need no decision from anyone (they are judged, packed and written where they are generated), so a parent
that walks every successor would be the bottleneck. Here each peer *owns* the states whose fingerprint maps to it
(``owner``): it alone holds their fingerprints, deduplicates them and numbers them. A successor in a lower layer
goes to a file named for (layer, writer, owner) in a shared directory, read by the owner when that layer opens.
A successor in the layer being expanded that another peer owns stays where it was made: its fingerprint, parent
and action go to the owner as a question, and the owner's answer (an id, or -1 for a state it has) decides
whether the asking peer expands it.

Determinism: the peers work in rounds (bulk-synchronous): each expands at most ``ROUND`` states, then the parent
hands every peer the questions asked of it and the answers to its own, in peer order, with the next round.
What a peer does depends only on what it was handed, in that order, so a search with N peers finds the same
states, ids and counterexample every time; with another N the ids and the counterexample may differ, the
states, edges, terminal states and verdicts do not (tests/model/test_sweep_workers.py checks them against BFS).

Ids: a peer numbers the states it owns 0, 1, 2, ...; the search's id is ``local * N + rank``, where rank is
the peer's index counted from the initial state's owner, so that the initial state is id 0. Parent pointers and
actions stay in each peer's ``DiskColumn`` (files opened before the fork, so the parent reads them back through
its own descriptors once the peers have flushed them), only to rebuild a counterexample.

A stop (a violation, a limit) takes effect at the end of a round; among the peers that met a violation in that
round, the first in peer order gives the counterexample. An edge that raises the sweep key or does not lower the
progress rank stops every peer, and the parent raises what the serial sweep would (``check`` then restarts).
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import time
from array import array
from collections import deque
from collections.abc import Callable

from .checker import _RankDidNotDrop, expand, limit_reached, rss_mb
from .checkpoint import Checkpoint, decode_actions, encode_actions
from .parallel import reap
from .properties import check_safety, check_terminal, successor_safety
from .spec import ModelConfig, State, initial_state
from .statestore import FingerprintSet
from .sweep import (
    TRIM_AT,
    DiskColumn,
    LayerFile,
    LayerReader,
    SweepDepth,
    SweepKeyRose,
    _SpillingFrontier,
    layer_name,
    sweep_key,
)

ROUND = 4096  # states a peer expands between two exchanges


def owner(fp: int, peers: int) -> int:
    """The peer that holds ``fp``: from its high bits (the fingerprint table uses ``fp mod capacity``)."""
    return (fp >> 40) % peers


def action_code(local_aid: int, peer: int, peers: int) -> int:
    """What the columns hold for an action: its id in ``peer``'s table, and the peer (``_peer_action`` reads it),
    in the 16 bits of a column entry (0xFFFF marks the initial state's missing action)."""
    code = local_aid * peers + peer
    if code >= 0xFFFF:
        raise OverflowError(f"action {local_aid} of peer {peer}: too many distinct actions for 16-bit action codes")
    return code


def _peer_action(tables: list[list], code: int):
    """The action an ``action_code`` names, from the peers' action tables."""
    return tables[code % len(tables)][code // len(tables)]


class _Peer:
    """One owner's part of the sweep: the layer being expanded's fingerprints, frontier, ids and depths for the
    states it owns, and its outgoing files. ``round`` is model/sweep.py's inner loop, with a successor that another
    peer owns asked of that peer instead of looked up in the table."""

    def __init__(self, job: dict, me: int, parent: DiskColumn, parent_action: DiskColumn) -> None:
        self.job = job
        self.cfg: ModelConfig = job["cfg"]
        self.peers, self.me = job["peers"], me
        self.rank = (me - job["first_owner"]) % self.peers
        self.parent, self.parent_action = parent, parent_action
        self.g = job["graph"]
        self.outgoing: dict[tuple, dict[int, LayerFile]] = {}  # key -> owner -> file
        self.new_keys: set = set()
        self.key: tuple | None = None
        # id(action) -> (action, fairness class, action_code): the code travels with the state and is what the
        # columns hold.
        self.aid_of: dict[int, tuple] = {}
        self.safe_successor = successor_safety(self.cfg)
        self.stats = {"generated": 0, "pruned": 0, "edges": 0, "terminal": 0, "expanded": 0, "deepest": 0}
        self.violation: tuple | None = None  # (id, prop, kind, why) of the first one this peer met
        self.seen: FingerprintSet | None = None
        self.waiting = 0  # entries this peer sent to lower layers, less those it read back (a sum over peers)
        saved = job["saved"]
        if saved is not None:  # resumed from a checkpoint: this peer's action table, counters, as they were
            mine = saved["peers"][me]
            for action in decode_actions(mine["actions"]):
                self.g.action_id(action)
            self.stats.update(mine["stats"])
            self.waiting = mine["waiting"]

    def saved(self) -> dict:
        """What a checkpoint keeps of this peer, once everything it sent down is in the layer files."""
        for by_owner in self.outgoing.values():
            for out in by_owner.values():
                out.spill()
        self.parent.flush()
        self.parent_action.flush()
        return {"actions": encode_actions(self.g.actions), "stats": self.stats, "waiting": self.waiting}

    # --- lower layers ---
    def send_down(self, key: tuple, entry: tuple) -> None:
        fp = entry[1]
        to = owner(fp, self.peers)
        by_owner = self.outgoing.get(key)
        if by_owner is None:
            by_owner = self.outgoing[key] = {}
            self.new_keys.add(key)
        out = by_owner.get(to)
        if out is None:
            out = by_owner[to] = LayerFile(os.path.join(self.job["dir"], f"{layer_name(key)}-{self.me}-{to}"))
        out.append(entry)
        self.waiting += 1

    def flush_layer(self, key: tuple) -> None:
        """Write out what this peer holds for ``key`` (every owner's part): the owners read it next."""
        for out in self.outgoing.pop(key, {}).values():
            out.spill()

    def open(self, key: tuple) -> None:
        if self.seen is not None:
            self.seen.release()
            self.frontier.close()
            self.incoming.close()
        self.key = key
        self.seen = FingerprintSet(1 << 14)
        self.frontier = _SpillingFrontier()
        self.ids, self.depths, self.popped = array("I"), array("H"), 0
        self.asked: list[deque] = [deque() for _ in range(self.peers)]  # per owner: batches of (state, depth) asked
        name = layer_name(key)
        self.incoming = LayerReader([os.path.join(self.job["dir"], f"{name}-{w}-{self.me}") for w in range(self.peers)],
                                    remove=not self.job["checkpointed"])

    def accept(self, state: State, fp: int, slot: int, from_id: int, aid: int, at_depth: int) -> int:
        local = len(self.parent)
        self.seen.insert(slot, fp, len(self.seen))
        self.parent.append(from_id)
        self.parent_action.append(aid)
        self.ids.append(local * self.peers + self.rank)
        self.depths.append(at_depth)
        if at_depth > self.stats["deepest"]:
            self.stats["deepest"] = at_depth
        self.frontier.push(state)
        return local * self.peers + self.rank

    def _take(self, entries: list[tuple]) -> None:
        """Entries for this owner's layer being expanded: the new ones accepted, in order."""
        seen = self.seen
        for state, fp, from_id, aid, at_depth in entries:
            slot = seen.empty_slot(fp)
            if slot >= 0:
                sid = self.accept(state, fp, slot, from_id, aid, at_depth)
                if from_id < 0:  # the initial state: judged once it has its id
                    bad = self.job["invariants"](state, self.cfg)
                    if bad is not None:
                        self._fail(bad[0], "safety", bad[1], sid)

    def _fail(self, prop: str, kind: str, why: str, sid: int) -> None:
        if self.violation is None:
            self.violation = (sid, prop, kind, why)

    def _answered(self, answers: list[bytes | None]) -> None:
        """The owners' answers to this peer's last questions, in owner order: each state they accepted (a
        non-negative id) joins this peer's frontier, under the owner's id."""
        for o, raw in enumerate(answers):
            if raw is None:
                continue
            gids = array("i")
            gids.frombytes(raw)
            for gid, (state, at_depth) in zip(gids, self.asked[o].popleft(), strict=True):
                if gid >= 0:
                    self.ids.append(gid)
                    self.depths.append(at_depth)
                    if at_depth > self.stats["deepest"]:
                        self.stats["deepest"] = at_depth
                    self.frontier.push(state)

    def _answer(self, raw: bytes) -> bytes:
        """Questions from one peer (fingerprint, parent id, action id of its states that this peer owns): the id
        of each new one (its parent pointer written here, in this peer's columns), -1 for one seen already."""
        questions = array("q")
        questions.frombytes(raw)
        seen, parent, parent_action = self.seen, self.parent, self.parent_action
        peers, rank = self.peers, self.rank
        gids = array("i")
        for i in range(0, len(questions), 3):
            fp = questions[i]
            slot = seen.empty_slot(fp)
            if slot < 0:
                gids.append(-1)
                continue
            local = len(parent)
            seen.insert(slot, fp, len(seen))
            parent.append(questions[i + 1])
            parent_action.append(questions[i + 2])
            gids.append(local * peers + rank)
        return gids.tobytes()

    def round(self, questions: list[bytes], answers: list[bytes | None]) -> tuple[list, list, bool]:
        """Take the owners' answers and the other peers' questions (both in peer order), expand at most ``ROUND``
        states; return this peer's questions (per owner), its answers (per asker) and whether it has nothing left
        in this layer.

        A successor in this layer that another peer owns is not sent: its fingerprint, parent and action are
        (24 bytes), and the state waits here for the owner's answer (one round) -- moving and packing states took
        a fifth of a peer's time."""
        self._answered(answers)
        replies = [self._answer(raw) if raw is not None else None for raw in questions]
        job, cfg, g, key, peers, me = self.job, self.cfg, self.g, self.key, self.peers, self.me
        asking = [array("q") for _ in range(peers)]
        asked: list[list[tuple]] = [[] for _ in range(peers)]
        canon, symmetric, collapse, reduce = job["canon"], job["symmetric"], job["collapse"], job["reduce"]
        invariants = job["invariants"]
        incremental_safety = invariants is check_safety
        safe_successor, aid_of, stats = self.safe_successor, self.aid_of, self.stats
        seen, ids, depths, frontier = self.seen, self.ids, self.depths, self.frontier
        expanded = 0
        while expanded < ROUND and self.violation is None:
            state = frontier.pop()
            if state is None:
                entries = self.incoming.read()
                if entries is None:
                    break
                self.waiting -= len(entries)
                self._take(entries)
                continue
            popped = self.popped
            if popped >= TRIM_AT and popped + popped >= len(ids):
                del ids[:popped]
                del depths[:popped]
                popped = 0
            sid, at_depth = ids[popped], depths[popped]
            self.popped = popped + 1
            expanded += 1
            succ, full = expand(state, cfg, symmetric, collapse, reduce)
            stats["generated"] += full
            stats["pruned"] += full - len(succ)
            if not succ:
                stats["terminal"] += 1
                bad = check_terminal(state, cfg)
                if bad is not None:
                    self._fail(bad[0], "deadlock" if bad[0] == "deadlock" else "terminal", bad[1], sid)
                    break
            safe_parent = incremental_safety
            state_msgs, state_dlq = state[4], state[8]
            keys: set = set()
            for action, nxt in succ:
                c = canon(nxt)
                known = aid_of.get(id(action))
                if known is not None and known[0] is action:
                    fair, aid = known[1], known[2]
                else:
                    local_aid = g.action_id(action)
                    fair, aid = g.action_fair_id[local_aid], action_code(local_aid, me, peers)
                    aid_of[id(action)] = (action, fair, aid)
                fp = hash(c) or 1
                edge = fp << 16 | fair
                new = edge not in keys
                if new:
                    keys.add(edge)
                    stats["edges"] += 1
                if c[4] is state_msgs and c[8] is state_dlq and c[0] is state[0] and c[1] == state[1] \
                        and c[2] == state[2] and c[3] == state[3]:
                    ckey = key
                else:
                    ckey = sweep_key(c)
                    if ckey > key:
                        raise SweepKeyRose(f"{action.text()} leads from layer {key} to layer {ckey}")
                to = (fp >> 40) % peers  # owner(fp, peers), inlined
                slot = -1
                if ckey == key and to == me:
                    slot = seen.empty_slot(fp)
                    if slot < 0:
                        continue
                elif not new:
                    continue  # the same target again by an action of the same fairness class: already sent
                bad = (None if safe_successor(state, c) else check_safety(c, cfg)) if safe_parent else invariants(c, cfg)
                if bad is None:
                    if slot >= 0:
                        self.accept(c, fp, slot, sid, aid, at_depth + 1)
                    elif ckey == key:
                        asking[to].extend((fp, sid, aid))
                        asked[to].append((c, at_depth + 1))
                    else:
                        self.send_down(ckey, (c, fp, sid, aid, at_depth + 1))
                    continue
                # a violation: accepted here at once (owned or not: the search stops), its path is the trace's
                if slot >= 0:
                    new_id = self.accept(c, fp, slot, sid, aid, at_depth + 1)
                else:
                    new_id = self._accept_unowned(sid, aid, at_depth + 1)
                self._fail(bad[0], "safety", bad[1], new_id)
                break
        stats["expanded"] += expanded
        for o, batch in enumerate(asked):
            if batch:
                self.asked[o].append(batch)  # answered, in this order, a round or two from now
        done = self.violation is None and expanded < ROUND and not any(self.asked)
        return [q.tobytes() if q else None for q in asking], replies, done

    def _accept_unowned(self, from_id: int, aid: int, at_depth: int) -> int:
        """A violating state this peer does not own, or in a lower layer: an id for its path, nothing more."""
        local = len(self.parent)
        self.parent.append(from_id)
        self.parent_action.append(aid)
        if at_depth > self.stats["deepest"]:
            self.stats["deepest"] = at_depth
        return local * self.peers + self.rank


def _serve(conn, job: dict, me: int, parent: DiskColumn, parent_action: DiskColumn) -> None:
    """A peer's loop: ``flush`` a lower layer, ``open`` it, ``round`` after round, ``finish``. An error is sent to
    the parent, which raises it."""
    try:
        peer = _Peer(job, me, parent, parent_action)
        s0, fp0 = job["s0"], job["fp0"]
        if owner(fp0, peer.peers) == me and job["saved"] is None:
            peer.send_down(sweep_key(s0), (s0, fp0, -1, 0xFFFF, 0))
        conn.send(("keys", peer.new_keys))
        peer.new_keys = set()
        while True:
            msg = conn.recv()
            if msg[0] == "round":
                questions, answers, done = peer.round(msg[1], msg[2])
                conn.send(("round", questions, answers, done, peer.new_keys, len(peer.parent), peer.violation,
                           len(peer.seen), peer.stats["deepest"], rss_mb(),
                           peer.waiting + len(peer.ids) - peer.popped))
                peer.new_keys = set()
            elif msg[0] == "checkpoint":
                conn.send(("saved", len(parent), peer.saved(), time.process_time()))  # wall-clock ok: statistics
            elif msg[0] == "flush":
                peer.flush_layer(msg[1])
                conn.send(("flushed",))
            elif msg[0] == "open":
                peer.open(msg[1])
                conn.send(("opened",))
            else:  # finish
                parent.flush()
                parent_action.flush()
                cpu = time.process_time()  # wall-clock ok: statistics only
                peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                conn.send(("finished", len(parent), peer.g.actions, peer.stats, cpu, peak_mb))
                return
    except (_RankDidNotDrop, SweepKeyRose) as stop:  # the parent raises it again: check() starts over
        conn.send(("stop", "rank" if isinstance(stop, _RankDidNotDrop) else "key", str(stop)))
    except Exception:  # noqa: BLE001 - not swallowed: the parent raises it with this traceback
        import traceback

        conn.send(("error", traceback.format_exc()))


class _PeerColumn:
    """The search's parent (or action) column, read from the peers' files by id (``local * N + rank``)."""

    def __init__(self, columns: list[DiskColumn], ranks: list[int], translate=None) -> None:
        self.columns, self.by_rank, self.translate = columns, {r: w for w, r in enumerate(ranks)}, translate

    def __len__(self) -> int:
        return sum(len(c) for c in self.columns)

    def __getitem__(self, i: int) -> int:
        peers = len(self.columns)
        w = self.by_rank[i % peers]
        value = self.columns[w][i // peers]
        return self.translate(value) if self.translate is not None else value


def _received(conn) -> tuple:
    reply = conn.recv()
    if reply[0] == "error":
        raise RuntimeError(f"a --sweep --workers process failed:\n{reply[1]}")
    if reply[0] == "stop":
        raise (_RankDidNotDrop() if reply[1] == "rank" else SweepKeyRose(reply[2]))
    return reply


def _save(checkpoint: Checkpoint, conns: list, keys: set, counters: dict) -> None:
    """A checkpoint between two layers: every peer's part (its columns and what it sent down are in its files), the
    layer keys left, and the files of those layers and the columns."""
    for conn in conns:
        conn.send(("checkpoint",))
    lengths, peers, cpu = [], [], 0.0
    for conn in conns:
        _, length, peer, peer_cpu = _received(conn)
        lengths.append(length)
        peers.append(peer)
        cpu += peer_cpu
    left = {layer_name(key) for key in keys}
    names = [name for name in os.listdir(checkpoint.directory)
             if name.startswith(("parent-", "action-")) or name.rsplit("-", 2)[0] in left]
    checkpoint.save({"keys": [list(key) for key in keys], "lengths": lengths, "peers": peers, **counters}, names, cpu)


def sweep_on_peers(cfg: ModelConfig, g, result, canon: Callable[[State], State], *, workers: int, symmetric: bool,
                   collapse: bool, reduce: bool, invariants, max_states: int | None, memory_mb: float | None,
                   max_seconds: float | None, progress: Callable[[int, int, int], None] | None, start: float,
                   fail: Callable[[str, str, str, int], bool], directory: str,
                   checkpoint: Checkpoint | None = None) -> float:
    """model/sweep.py's ``sweep`` on ``workers`` peers, its files in ``directory`` (``checkpoint``'s, if any): fills
    ``g`` and ``result`` the same way; returns the peers' CPU seconds."""
    s0 = canon(initial_state(cfg))
    fp0 = hash(s0) or 1
    first = owner(fp0, workers)
    saved = checkpoint.saved if checkpoint is not None else None
    job = {"cfg": cfg, "peers": workers, "first_owner": first, "graph": g, "dir": directory, "s0": s0, "fp0": fp0,
           "canon": canon, "symmetric": symmetric, "collapse": collapse, "reduce": reduce, "invariants": invariants,
           "saved": saved, "checkpointed": checkpoint is not None}
    lengths = saved["lengths"] if saved else [0] * workers
    parents = [DiskColumn("i", os.path.join(directory, f"parent-{w}"), lengths[w]) for w in range(workers)]
    actions = [DiskColumn("H", os.path.join(directory, f"action-{w}"), lengths[w]) for w in range(workers)]
    context = multiprocessing.get_context("fork")
    conns, procs = [], []
    worker_cpu = 0.0
    try:
        for w in range(workers):
            mine, theirs = context.Pipe()
            proc = context.Process(target=_serve, args=(theirs, job, w, parents[w], actions[w]), daemon=True)
            proc.start()
            theirs.close()
            conns.append(mine)
            procs.append(proc)
        keys: set = set()
        for conn in conns:
            keys |= _received(conn)[1]
        counts = list(lengths)
        violation = None
        peak_held = deepest = opened = 0
        if saved:
            keys = {tuple(key) for key in saved["keys"]}
            peak_held, deepest, opened = saved["peak_held"], saved["deepest"], saved["opened"]
            result.peak_rss_mb, result.worker_peak_rss_mb = saved["peak_rss_mb"], saved["worker_peak_rss_mb"]
        stop = False
        check_every = 2048
        next_check = check_every
        while keys and not stop:
            if checkpoint is not None and checkpoint.due():
                _save(checkpoint, conns, keys, dict(peak_held=peak_held, deepest=deepest, opened=opened,
                                                    peak_rss_mb=result.peak_rss_mb,
                                                    worker_peak_rss_mb=result.worker_peak_rss_mb))
            key = max(keys)
            keys.discard(key)
            opened += 1
            for verb in ("flush", "open"):
                for conn in conns:
                    conn.send((verb, key))
                for conn in conns:
                    _received(conn)
            questions: list[list] = [[None] * workers for _ in range(workers)]  # [owner][asker]
            answers: list[list] = [[None] * workers for _ in range(workers)]  # [asker][owner]
            while True:
                for w, conn in enumerate(conns):
                    conn.send(("round", questions[w], answers[w]))
                all_done = True
                held = waiting = 0
                worker_mb = 0.0
                for w, conn in enumerate(conns):
                    _, asks, replies, done, new_keys, count, bad, seen_len, peer_deepest, peer_mb, peer_waiting = \
                        _received(conn)
                    for o in range(workers):
                        questions[o][w] = asks[o]
                        answers[o][w] = replies[o]
                    all_done = all_done and done
                    keys |= new_keys
                    counts[w] = count
                    held += seen_len
                    waiting += peer_waiting
                    worker_mb += peer_mb
                    result.worker_peak_rss_mb = max(result.worker_peak_rss_mb, peer_mb)
                    deepest = max(deepest, peer_deepest)
                    if bad is not None and violation is None:
                        violation = bad
                peak_held = max(peak_held, held)
                total = sum(counts)
                if violation is not None:
                    stop = True
                    break
                if total >= next_check:
                    next_check = total + check_every
                    if progress is not None:
                        progress(total, deepest, waiting)
                    mem = rss_mb()
                    result.peak_rss_mb = max(result.peak_rss_mb, mem)
                    limit = limit_reached(total, mem + worker_mb, start, max_states, memory_mb, max_seconds)
                    if limit is not None:
                        result.stop = limit
                        stop = True
                        break
                if all_done:
                    break
        stats: dict = {}
        peer_actions = []
        for conn in conns:
            conn.send(("finish",))
        for w, conn in enumerate(conns):
            _, length, table, peer_stats, cpu, peer_mb = _received(conn)
            parents[w].flushed = actions[w].flushed = length
            peer_actions.append(table)
            for name, value in peer_stats.items():
                stats[name] = max(stats.get(name, 0), value) if name == "deepest" else stats.get(name, 0) + value
            worker_cpu += cpu
            result.worker_peak_rss_mb = max(result.worker_peak_rss_mb, peer_mb)
        for proc in procs:
            proc.join()
    finally:
        reap(procs, conns)
    ranks = [(w - first) % workers for w in range(workers)]
    g.parent = _PeerColumn(parents, ranks)
    g.parent_action = _PeerColumn(actions, ranks,
                                  lambda code: g.action_id(_peer_action(peer_actions, code)))
    g.depth = SweepDepth()
    g.depth.deepest = stats["deepest"]
    g.generated, g.edge_count, g.por_pruned = stats["generated"], stats["edges"], stats["pruned"]
    g.terminal_count = stats["terminal"]
    result.workers = workers
    result.worker_expanded = stats["expanded"]
    result.sweep_layers = opened
    result.sweep_peak_states = peak_held
    if violation is not None:
        sid, prop, kind, why = violation
        fail(prop, kind, why, sid)
    return worker_cpu
