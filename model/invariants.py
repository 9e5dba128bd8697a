"""The invariants of DESIGN.md, as pure functions over a run's history (no store, no simulator).

Each checker returns ``{"holds", "checked", "violations": [{"msg_id", "explanation", "events"}]}``;
a violation names the message, quotes its events and says in one sentence what went wrong.
``RunContext`` carries the few facts a history does not: groups, delay levels, phase times.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

CONSUME_SUCCESS = "CONSUME_SUCCESS"
MAX_QUOTED_EVENTS = 8
MAX_VIOLATIONS = 50
SEND_BACK_TO_DLQ_MS = 1000  # a dead letter is stored in the same step as its send-back; allow scheduling slack
POLL_SLACK_MS = 100 + 10 + 1  # a level's 100 ms poll, the async handler's 10 ms, one reput round
SETTLE_AFTER_FAULT_MS = 15_000  # lateness is judged only for messages due this long after the last fault


@dataclass(frozen=True)
class GroupInfo:
    group: str
    topic: str
    model: str  # CLUSTERING or BROADCASTING
    client_ids: tuple[str, ...]
    max_reconsume_times: int  # -1 already resolved to 16
    tags: frozenset[str] | None = None  # None: "*"


@dataclass(frozen=True)
class RunContext:
    groups: tuple[GroupInfo, ...]
    delay_level_ms: dict[int, int]
    drain_start_ms: int
    end_ms: int
    timer_precision_ms: int = 1000
    duplicate_window_ms: int = 22_000  # persist windows: delay offsets + broker offsets + client offsets + slack
    extra: dict = field(default_factory=dict)

    @property
    def max_delay_level(self) -> int:
        return max(self.delay_level_ms) if self.delay_level_ms else 0

    def level_delay_ms(self, level: int) -> int:
        return self.delay_level_ms[min(max(level, 1), self.max_delay_level)]


def _verdict(checked: int, violations: list[dict]) -> dict:
    return {"holds": not violations, "checked": checked, "violations": violations[:MAX_VIOLATIONS],
            "violation_count": len(violations)}


def _quote(events: list[dict]) -> list[dict]:
    if len(events) <= MAX_QUOTED_EVENTS:
        return events
    return events[: MAX_QUOTED_EVENTS // 2] + events[-MAX_QUOTED_EVENTS // 2 :]


class _Index:
    """The history sorted by message and by kind, built once for all checkers."""

    def __init__(self, events: list[dict]) -> None:
        self.events = events
        self.by_msg: dict[str, list[dict]] = defaultdict(list)
        self.by_kind: dict[str, list[dict]] = defaultdict(list)
        for e in events:
            self.by_kind[e["kind"]].append(e)
            msg_id = e.get("msg_id")
            if msg_id is not None:
                self.by_msg[msg_id].append(e)
        self.sent_ok = [e for e in self.by_kind["send"] if e["status"] == "SEND_OK"]
        self.drain_t = next((e["t_ms"] for e in self.by_kind["drain"]), None)
        self.clock_steps = [e for e in self.by_kind["fault"] if e.get("site") == "clock"]
        self.broker_crashes = [e for e in self.by_kind["crash"] if e["target"] == "broker"]
        self.restarts = [e for e in self.by_kind["restart"] if e["target"] == "broker" and e.get("ok")]
        self.power_crashes = [c for c in self.broker_crashes if c.get("crash_kind") == "power"]
        self.torn_timer_slots = self._torn_timer_slots()
        self.cut_by_truncation = {m for e in self.by_kind["cq_truncate"] for m in e.get("cut_msg_ids", ()) if m} | {
            m for e in self.by_kind["store_rollback"] for m in e["lost_msg_ids"]} | self._unindexed_after_power_failure()

    def _unindexed_after_power_failure(self) -> set[str]:
        """Copies a recovery could not index: after a power failure a consume queue may hold stale units that
        point where new copies now lie (CQ recovery checks units only against the commit log's end), and a new
        copy at such a queue offset is skipped as "built repeatedly" (#495, ROCKETMQ.md 2.6)."""
        if not self.power_crashes:
            return set()
        first_power = self.power_crashes[0]["seq"]
        return {e["msg_id"] for e in self.by_kind["cq_unindexed"] if e["seq"] > first_power and e["msg_id"]}

    def _torn_timer_slots(self) -> list[tuple[int, int]]:
        """(slot_ms, seq of the power failure) for each torn timer-log unit a recovery after one relinked."""
        slots = []
        for t in self.by_kind["timer_torn_unit"]:
            crash = next((c for c in reversed(self.broker_crashes) if c["seq"] < t["seq"]), None)
            if crash is not None and crash.get("crash_kind") == "power":
                slots.append((t["slot_ms"], crash["seq"]))
        return slots

    def read_through_a_stale_reference(self, deliver: dict, ctx: RunContext) -> bool:
        """A timer delivery found in the chain of another (earlier) slot after a power failure: the wheel and the
        timer log kept references into what the failure cut, and new units or messages now lie there; RocketMQ
        never compares a unit with the slot it was read from (#10668 family)."""
        slot_ms = deliver.get("slot_ms")
        if slot_ms is None or slot_ms < 0 or slot_ms == deliver["due_ms"] - ctx.timer_precision_ms:  # -1: due at once
            return False
        return any(c["seq"] < deliver["seq"] for c in self.power_crashes)

    def quote(self, msg_id: str) -> list[dict]:
        return _quote(self.by_msg.get(msg_id, []))

    def lost_to_a_fault(self, msg_id: str, group: str | None = None) -> bool:
        """The fault itself destroyed a copy: a power failure (ASYNC_FLUSH), a cut queue, a rolled-back store;
        or, after a power failure, the group's offset already stood past where the message was stored."""
        return (msg_id in self.cut_by_truncation or self.lost_to_power_failure(msg_id)
                or self.behind_a_torn_timer_unit(msg_id)
                or (group is not None and self.below_a_committed_offset(msg_id, group)))

    def behind_a_torn_timer_unit(self, msg_id: str) -> bool:
        """A power failure tore the timer log's last unit; its head passed the recovery check and relinked the
        slot its torn bytes name (RocketMQ's recoverAndRevise does the same), so the units that slot held
        before are unreachable. Covers the timer copies stored before that failure and due in that slot."""
        return any(e["kind"] == "store" and e.get("timer_out_ms") == slot_ms and e["seq"] < power_seq
                   for e in self.by_msg.get(msg_id, []) for slot_ms, power_seq in self.torn_timer_slots)

    def below_a_committed_offset(self, msg_id: str, group: str) -> bool:
        """#8239 (ASYNC_FLUSH): consumers had committed offsets of unflushed messages; the power failure cut
        the queue back, new messages reused those offsets, and the consumers' offsets pass over them. A commit
        counts until the broker is back: the consumer goes on with what it pulled before the failure."""
        for store in self.by_msg.get(msg_id, []):
            if store["kind"] != "store":
                continue
            for crash in self.power_crashes:
                if store["seq"] < crash["seq"]:
                    continue
                back = next((r["seq"] for r in self.restarts if r["seq"] > crash["seq"]), store["seq"])
                committed = [c["offset"] for c in self.by_kind["offset_commit"] if c["seq"] < back
                             and c["group"] == group and c["topic"] == store["topic"]
                             and c["queue_id"] == store["queue_id"]]
                if committed and store["queue_offset"] < max(committed):
                    return True
        return False

    def lost_to_power_failure(self, msg_id: str) -> bool:
        """Some copy of the message was not durable at a power failure (ASYNC_FLUSH): it ended past the flushed
        end of the commit log, so the recovery cut it off or kept it torn (a sector-wise prefix whose properties
        are zeros passes the recovery check: only the body has a CRC)."""
        for crash in self.power_crashes:
            restart = next((r for r in self.restarts if r["seq"] > crash["seq"]), None)
            durable = crash.get("commit_log_durable", restart["commit_log_end"] if restart else None)
            if durable is None:
                continue
            for e in self.by_msg.get(msg_id, []):
                if e["kind"] == "store" and e["seq"] < crash["seq"] and e["phy_offset"] + e.get("size", 1) > durable:
                    return True
        return False


def _subscribed(group: GroupInfo, send: dict, tags_of: dict[str, str | None]) -> bool:
    if send["topic"] != group.topic:
        return False
    return group.tags is None or tags_of.get(send["msg_id"]) in group.tags


# --- no_loss -------------------------------------------------------------------------------------------------
def check_no_loss(ix: _Index, ctx: RunContext) -> dict:
    violations = []
    checked = 0
    for send in ix.sent_ok:
        msg_id = send["msg_id"]
        events = ix.by_msg[msg_id]
        for g in ctx.groups:
            if not _subscribed(g, send, ctx.extra.get("tags_of", {})):
                continue
            checked += 1
            consumes = [e for e in events if e["kind"] == "consume" and e["group"] == g.group]
            if g.model == "BROADCASTING":
                # Every instance must have had it; a failed attempt is dropped by design (no retry).
                missing = sorted(set(g.client_ids) - {e["client_id"] for e in consumes})
                if missing and not ix.lost_to_a_fault(msg_id, g.group):
                    violations.append({"msg_id": msg_id, "group": g.group, "events": ix.quote(msg_id),
                                       "explanation": f"sent with SEND_OK but broadcasting instance(s) "
                                                      f"{', '.join(missing)} of {g.group} never received it"})
                continue
            done = any(e["status"] == CONSUME_SUCCESS for e in consumes) or any(
                e["kind"] == "dlq" and e["group"] == g.group for e in events)
            if not done and not ix.lost_to_a_fault(msg_id, g.group):
                last = events[-1]["kind"] if events else "nothing"
                violations.append({"msg_id": msg_id, "group": g.group, "events": ix.quote(msg_id),
                                   "explanation": f"sent with SEND_OK but by the end of the drain {g.group} neither "
                                                  f"consumed it successfully nor dead-lettered it "
                                                  f"({len(consumes)} attempt(s); its last event was '{last}')"})
    return _verdict(checked, violations)


# --- at_least_once_redelivery --------------------------------------------------------------------------------
def check_at_least_once_redelivery(ix: _Index, ctx: RunContext) -> dict:
    violations = []
    checked = 0
    clustering = {g.group for g in ctx.groups if g.model == "CLUSTERING"}
    crashes = {e["target"]: [] for e in ix.by_kind["crash"]}
    for e in ix.by_kind["crash"]:
        crashes[e["target"]].append(e)
    commits: dict[tuple, list[dict]] = defaultdict(list)  # (group, topic, queue_id) -> offset commits
    for e in ix.by_kind["offset_commit"]:
        commits[(e["group"], e["topic"], e["queue_id"])].append(e)
    for msg_id, events in ix.by_msg.items():
        consumes = [e for e in events if e["kind"] == "consume" and e["group"] in clustering]
        for i, attempt in enumerate(consumes):
            group = attempt["group"]
            later = [c for c in consumes[i + 1:] if c["group"] == group]
            dead = any(e["kind"] == "dlq" and e["group"] == group and e["seq"] > attempt["seq"] for e in events)
            if attempt["status"] != CONSUME_SUCCESS:
                checked += 1
                if not later and not dead:
                    violations.append({"msg_id": msg_id, "group": group, "events": ix.quote(msg_id),
                                       "explanation": f"consume attempt {attempt['reconsume_times']} in {group} failed "
                                                      f"at t={attempt['t_ms']} ms but the message was never "
                                                      f"delivered to {group} again nor dead-lettered"})
                continue
            # A success whose offset the dying consumer never committed must be consumed again.
            owner = attempt["client_id"].split("@")[0]
            crash = next((c for c in crashes.get(owner, []) if c["seq"] > attempt["seq"]), None)
            if crash is None:
                continue
            key = (group, attempt["queue_topic"], attempt["queue_id"])
            committed = any(c["seq"] < crash["seq"] and c["seq"] > attempt["seq"] and c["offset"] > attempt["queue_offset"]
                            and c.get("client_id", attempt["client_id"]) == attempt["client_id"]
                            for c in commits.get(key, []))
            if committed:
                continue
            checked += 1
            if not later and not dead:
                violations.append({"msg_id": msg_id, "group": group, "events": ix.quote(msg_id),
                                   "explanation": f"{owner} consumed it at t={attempt['t_ms']} ms and crashed before "
                                                  f"committing its offset, but {group} never got it again"})
    return _verdict(checked, violations)


# --- no_early_delivery ---------------------------------------------------------------------------------------
def check_no_early_delivery(ix: _Index, ctx: RunContext) -> dict:
    violations = []
    delivers = ix.by_kind["deliver"]
    for d in delivers:
        early_ms = d["due_ms"] - d["broker_ms"]
        if early_ms <= 0:
            continue
        if d["level"] != "timer" and early_ms > ctx.level_delay_ms(d["level"]):
            continue  # correctDeliverTimestamp: the deliver time lay more than one level-delay ahead (clock stepped)
        if ix.read_through_a_stale_reference(d, ctx):
            continue
        what = "timer message" if d["level"] == "timer" else f"level-{d['level']} message"
        violations.append({"msg_id": d["msg_id"], "events": ix.quote(d["msg_id"]),
                           "explanation": f"the {what} reached {d['topic']} at broker time {d['broker_ms']}, "
                                          f"{early_ms} ms before it was due ({d['due_ms']})"})
    return _verdict(len(delivers), violations)


# --- per_level_order -----------------------------------------------------------------------------------------
def check_per_level_order(ix: _Index, ctx: RunContext) -> dict:
    violations = []
    checked = 0
    last: dict[int, tuple[int, str]] = {}
    seen: set[tuple[int, int, str]] = set()
    for e in ix.events:
        if e["kind"] in ("restart",) and e["target"] == "broker":
            last.clear()  # a new broker: its levels start again from their persisted offsets
            continue
        if e["kind"] != "deliver" or e["level"] == "timer" or e.get("schedule_queue_offset", -1) < 0:
            continue
        key = (e["level"], e["schedule_queue_offset"], e["msg_id"])
        if key in seen:
            continue  # a repeated delivery (duplicate), not a first one
        seen.add(key)
        checked += 1
        previous = last.get(e["level"])
        if previous is not None and e["schedule_queue_offset"] < previous[0]:
            violations.append({"msg_id": e["msg_id"], "events": ix.quote(e["msg_id"]) + ix.quote(previous[1])[:2],
                               "explanation": f"level {e['level']} delivered queue offset {e['schedule_queue_offset']} "
                                              f"after offset {previous[0]} ({previous[1]}): out of the level's order"})
        last[e["level"]] = (e["schedule_queue_offset"], e["msg_id"])
    return _verdict(checked, violations)


# --- dlq_after_max_retries -----------------------------------------------------------------------------------
def _dead_lettered_by_fallback(events: list[dict], group: str, dead: dict, limit: int) -> bool:
    """The DLQ copy came from the client's producer fallback for attempt limit-1: a send-back's event comes
    right after the store it caused, so the first one after the DLQ copy tells which path stored it."""
    cause = next((b for b in events if b["kind"] == "send_back" and b["group"] == group and b["seq"] > dead["seq"]),
                 None)
    return (dead["reconsume_times"] == limit and cause is not None and cause.get("path") == "producer-fallback"
            and cause["result"] == "ok" and cause["reconsume_times"] == limit - 1)


def _repeat_after_a_crash(ix: _Index, consumes: list[dict], again: dict) -> bool:
    """A crash forked the retry chain: some attempt up to ``again``'s was consumed again after it (an offset not
    yet persisted), and the copy's own send-back started a second chain; ``again`` belongs to that one. The
    repeats are counted by the duplicates invariant, they are not retries beyond the DLQ."""
    crashes = [e["seq"] for e in ix.by_kind["crash"]]
    before = [c for c in consumes if c["seq"] <= again["seq"] and c["reconsume_times"] <= again["reconsume_times"]]
    if any(a["reconsume_times"] == b["reconsume_times"] and any(a["seq"] < s < b["seq"] for s in crashes)
           for i, a in enumerate(before) for b in before[i + 1:]):
        return True
    # Or the crash came before any consume: a delivery it rewound stored a copy up to ``again``'s a second time.
    copies = [e for e in ix.by_msg[again["msg_id"]] if e["kind"] == "store" and e["seq"] < again["seq"]
              and e["topic"] not in ("SCHEDULE_TOPIC_XXXX", "rmq_sys_wheel_timer")
              and e["reconsume_times"] <= again["reconsume_times"]]
    return any((a["topic"], a["reconsume_times"]) == (b["topic"], b["reconsume_times"])
               and any(a["seq"] < s < b["seq"] for s in crashes) for i, a in enumerate(copies) for b in copies[i + 1:])


def check_dlq_after_max_retries(ix: _Index, ctx: RunContext) -> dict:
    violations = []
    checked = 0
    groups = {g.group: g for g in ctx.groups if g.model == "CLUSTERING"}
    for msg_id, events in ix.by_msg.items():
        for group, g in groups.items():
            limit = g.max_reconsume_times
            consumes = [e for e in events if e["kind"] == "consume" and e["group"] == group]
            dlqs = [e for e in events if e["kind"] == "dlq" and e["group"] == group]
            if not consumes and not dlqs:
                continue
            checked += 1
            too_many = [c for c in consumes if c["reconsume_times"] > limit]
            if too_many:
                c = too_many[0]
                violations.append({"msg_id": msg_id, "group": group, "events": ix.quote(msg_id),
                                   "explanation": f"{group} was given retry {c['reconsume_times']} although at most "
                                                  f"{limit} retries are allowed before the DLQ"})
                continue
            for dead in dlqs:
                # The normal path dead-letters the (limit+1)th failure; the producer fallback after a failed
                # send-back stores RECONSUME_TIME r+1 and the broker dead-letters it when r+1 >= limit: one
                # attempt earlier (ROCKETMQ.md 4.3).
                last_rt = limit - 1 if _dead_lettered_by_fallback(events, group, dead, limit) else limit
                last_fail = [c for c in consumes if c["seq"] < dead["seq"] and c["status"] != CONSUME_SUCCESS
                             and c["reconsume_times"] == last_rt]
                if dead["reconsume_times"] != last_rt + 1 or not last_fail:
                    violations.append({"msg_id": msg_id, "group": group, "events": ix.quote(msg_id),
                                       "explanation": f"dead-lettered with reconsumeTimes {dead['reconsume_times']} "
                                                      f"after {len([c for c in consumes if c['seq'] < dead['seq']])} "
                                                      f"attempt(s); expected exactly {limit + 1} failed attempts and "
                                                      f"reconsumeTimes {limit + 1}"})
                    break
                backs = [b for b in events if b["kind"] == "send_back" and b["group"] == group
                         and b["seq"] < dead["seq"] and b["seq"] > last_fail[-1]["seq"]]
                since = dead["t_ms"] - (backs[-1]["t_ms"] if backs else last_fail[-1]["t_ms"])
                if since > SEND_BACK_TO_DLQ_MS:
                    violations.append({"msg_id": msg_id, "group": group, "events": ix.quote(msg_id),
                                       "explanation": f"reached %DLQ%{group} {since} ms after its last send-back: it "
                                                      f"took another delay on the way (DELAY kept, #2724)"})
                    break
                after = [c for c in consumes if c["seq"] > dead["seq"] and not _repeat_after_a_crash(ix, consumes, c)]
                if after:
                    violations.append({"msg_id": msg_id, "group": group, "events": ix.quote(msg_id),
                                       "explanation": f"delivered to {group} as retry {after[0]['reconsume_times']} "
                                                      f"after it was dead-lettered"})
                    break
    return _verdict(checked, violations)


# --- retry_schedule ------------------------------------------------------------------------------------------
def check_retry_schedule(ix: _Index, ctx: RunContext) -> dict:
    violations = []
    checked = 0
    step_times = [e["t_ms"] for e in ix.clock_steps if e.get("by_ms", 0) < 0]
    for msg_id, events in ix.by_msg.items():
        copies_seen: set[tuple] = set()
        for i, c in enumerate(events):
            if c["kind"] != "consume":
                continue
            copy = (c["group"], c.get("queue_topic", c["topic"]), c["queue_id"], c["queue_offset"])
            if copy in copies_seen:
                continue  # the same stored copy again: a client-local retry (send-back failed) or a re-pull
            copies_seen.add(copy)
            if c["reconsume_times"] < 1:
                continue
            k = c["reconsume_times"]
            backs = [b for b in events[:i] if b["kind"] == "send_back" and b["group"] == c["group"]
                     and b["reconsume_times"] == k - 1 and b["result"] == "ok"]
            if not backs:
                continue
            sent_back = backs[0]  # the earliest copy comes back first: the most lenient pairing with duplicates
            if any(sent_back["t_ms"] <= t <= c["t_ms"] for t in step_times):
                continue  # a backwards clock step in between: correctDeliverTimestamp may deliver early
            checked += 1
            level = min(3 + (k - 1), ctx.max_delay_level)
            need = ctx.level_delay_ms(level)
            waited = c["t_ms"] - sent_back["t_ms"]
            if waited < need:
                violations.append({"msg_id": msg_id, "group": c["group"], "events": ix.quote(msg_id),
                                   "explanation": f"retry {k} came {waited} ms after its send-back; level {level} "
                                                  f"({need} ms) had not elapsed"})
    return _verdict(checked, violations)


# --- bounded_lateness ----------------------------------------------------------------------------------------
def check_bounded_lateness(ix: _Index, ctx: RunContext) -> dict:
    """In the drain, a message due well after the last fault is delivered within one poll of its due time.

    Lateness is measured on the simulator's monotonic clock from the scheduled copy's store time, so a
    broker clock that jumps (and a scheduler that does not correct for it) shows up as lateness."""
    violations = []
    checked = 0
    drain = ix.drain_t if ix.drain_t is not None else ctx.drain_start_ms
    fault_times = [e["t_ms"] for e in ix.by_kind["crash"]] + [e["t_ms"] for e in ix.by_kind["restart"]] + [
        e["t_ms"] for e in ix.by_kind["fault"] if e.get("action") != "fail"]
    settled = max([drain, *[t + SETTLE_AFTER_FAULT_MS for t in fault_times]])
    per_level: dict[str, int] = {}
    schedule_stores: dict[str, list[dict]] = defaultdict(list)
    for e in ix.by_kind["store"]:
        if e["topic"] in ("SCHEDULE_TOPIC_XXXX", "rmq_sys_wheel_timer"):
            schedule_stores[e["msg_id"]].append(e)
    delivered: set[tuple[str, object]] = set()
    for d in ix.by_kind["deliver"]:
        stores = [s for s in schedule_stores.get(d["msg_id"], []) if s["seq"] < d["seq"]]
        if not stores:
            continue
        store = stores[-1]
        if d["level"] == "timer":
            due_mono = store["t_ms"] + max(0, d["due_ms"] - store["broker_ms"])
            bound = ctx.timer_precision_ms + POLL_SLACK_MS
        else:
            due_mono = store["t_ms"] + ctx.level_delay_ms(d["level"])
            bound = POLL_SLACK_MS
        delivered.add((d["msg_id"], d["level"]))
        if due_mono < settled:
            continue
        checked += 1
        late = d["t_ms"] - due_mono
        key = str(d["level"])
        per_level[key] = max(per_level.get(key, late), late)
        if late > bound:
            violations.append({"msg_id": d["msg_id"], "events": ix.quote(d["msg_id"]),
                               "explanation": f"due at t={due_mono} ms in the drain but delivered {late} ms late "
                                              f"(bound {bound} ms from the polling intervals)"})
    # Liveness: a message due in the settled drain that never came back at all.
    for msg_id, stores in schedule_stores.items():
        last = stores[-1]
        if last["topic"] != "SCHEDULE_TOPIC_XXXX":
            continue
        level = last["queue_id"] + 1
        due_mono = last["t_ms"] + ctx.level_delay_ms(level)
        if settled <= due_mono <= ctx.end_ms - 1000 and (msg_id, level) not in delivered:
            checked += 1
            violations.append({"msg_id": msg_id, "events": ix.quote(msg_id),
                               "explanation": f"due at t={due_mono} ms in the drain but never delivered"})
    verdict = _verdict(checked, violations)
    verdict["max_lateness_ms_by_level"] = dict(sorted(per_level.items(), key=lambda kv: str(kv[0])))
    return verdict


# --- duplicates ----------------------------------------------------------------------------------------------
def _slot_unfinished(deliver: dict, shutdown: dict, ctx: RunContext) -> bool:
    """A timer slot whose puts were still running at a graceful shutdown: the checkpointed read time stays at
    the slot, so RocketMQ reads the whole slot again after the restart (its finished puts become duplicates)."""
    read_ms = shutdown.get("timer_read_ms")
    return deliver["level"] == "timer" and read_ms is not None and deliver["due_ms"] - ctx.timer_precision_ms >= read_ms


def check_duplicates(ix: _Index, ctx: RunContext) -> dict:
    """Duplicates are expected after crashes, bounded by the persist windows; a graceful restart makes none."""
    violations = []
    first: dict[tuple, dict] = {}
    count = 0
    broadcast = {g.group for g in ctx.groups if g.model == "BROADCASTING"}
    crash_times = [e["t_ms"] for e in ix.by_kind["crash"] if e.get("crash_kind") != "shutdown"]
    # Config files are not fsynced (before develop #9705): after a power failure the offset files may be
    # empty or old, and any amount of redelivery is RocketMQ's documented behaviour, not a bounded window.
    power_times = [e["t_ms"] for e in ix.power_crashes]
    graceful = [e for e in ix.by_kind["crash"] if e.get("crash_kind") == "shutdown"]
    for e in ix.events:
        if e["kind"] == "consume" and e["status"] == CONSUME_SUCCESS:
            group = e["group"] + ("/" + e["client_id"] if e["group"] in broadcast else "")
            key = ("consume", group, e["msg_id"])
        elif e["kind"] == "deliver":
            key = ("deliver", e["level"], e.get("schedule_queue_offset"), e["msg_id"])
        else:
            continue
        if key not in first:
            first[key] = e
            continue
        count += key[0] == "consume"
        original = first[key]
        window = [t for t in crash_times if original["t_ms"] <= t <= e["t_ms"]]
        explained = any(t - original["t_ms"] <= ctx.duplicate_window_ms for t in window) or any(
            original["t_ms"] <= t <= e["t_ms"] for t in power_times)
        if key[0] == "deliver" and not window and any(
                original["t_ms"] <= g["t_ms"] <= e["t_ms"] and not _slot_unfinished(original, g, ctx) for g in graceful):
            violations.append({"msg_id": e["msg_id"], "events": ix.quote(e["msg_id"]),
                               "explanation": f"delivered from level {e['level']} again after a graceful restart "
                                              f"(first at t={original['t_ms']} ms): the shutdown did not persist "
                                              + ("a read time past its finished slot" if e["level"] == "timer"
                                                 else "the delay offsets")})
        elif window and not explained:
            violations.append({"msg_id": e["msg_id"], "events": ix.quote(e["msg_id"]),
                               "explanation": f"{key[0]} repeated at t={e['t_ms']} ms although the first one "
                                              f"(t={original['t_ms']} ms) was more than {ctx.duplicate_window_ms} ms "
                                              f"before the crash: outside every persist window"})
    verdict = _verdict(len(first), violations)
    verdict["duplicates"] = count
    return verdict


CHECKS = {
    "no_loss": check_no_loss,
    "at_least_once_redelivery": check_at_least_once_redelivery,
    "no_early_delivery": check_no_early_delivery,
    "per_level_order": check_per_level_order,
    "dlq_after_max_retries": check_dlq_after_max_retries,
    "retry_schedule": check_retry_schedule,
    "bounded_lateness": check_bounded_lateness,
    "duplicates": check_duplicates,
}


def check_events(events: list[dict], ctx: RunContext, only: list[str] | None = None) -> dict:
    ix = _Index(events)
    return {name: fn(ix, ctx) for name, fn in CHECKS.items() if only is None or name in only}
