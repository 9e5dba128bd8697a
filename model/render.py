"""A model path as a history in the simulator's schema, so the history invariants can judge it too.

Why: the model's properties (model/properties.py) and the history invariants (model/invariants.py)
formalise the same promises twice. Rendering every counterexample and many random complete paths of
the model as histories and running ``check_events`` on them makes each oracle test the other: a
counterexample no invariant flags, or a clean path one flags, is a bug in one of the two.

Time: a ``tick`` is ``TICK_MS`` (delay level l waits l ticks, so its delay is l * TICK_MS); every other
action takes ``STEP_MS``. A crash takes down the broker and its consumer session (one ``crash`` event
for each, and one ``restart`` each when the broker comes back). The broker commits the consumer's
offset when a pull carries it and on ``offset_commit``: each change is an ``offset_commit`` event.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from .invariants import GroupInfo, RunContext, check_events
from .spec import (
    CONSUME_SUCCESS,
    DELAY_FILE,
    DLQ_TOPIC,
    GROUP,
    SCHEDULE_TOPIC,
    TOPIC,
    TOPIC_NAMES,
    Action,
    ModelConfig,
    State,
    initial_state,
    successors,
)
from .stats import RESUME_AFTER_BROKER_RESTART_MS

TICK_MS = 1000
STEP_MS = 1
DUPLICATE_WINDOW_MS = 22_000  # the history's persist windows (RunContext's default)
PERSIST_GAP_MS = DUPLICATE_WINDOW_MS + 1  # a delay-offset persist point: the flush interval elapsed
OWNER = "consumer-0"
CLIENT_ID = f"{OWNER}@{GROUP}"

# The history invariant(s) that must flag a counterexample of each model property (any one of them).
FLAGGED_BY: dict[str, tuple[str, ...]] = {
    "delay_offset_covers_delivered": ("no_loss",),
    "consumer_offset_covers_acked": ("no_loss", "at_least_once_redelivery"),
    "reconsume_times_bounded": ("dlq_after_max_retries",),
    "dlq_after_max_retries": ("dlq_after_max_retries",),
    "retry_schedule": ("retry_schedule",),
    "bounded_redelivery": ("duplicates",),
    "no_pending_and_dead": ("dlq_after_max_retries",),
    "no_loss": ("no_loss",),
    "deadlock": ("no_loss",),
    "liveness": ("no_loss",),
}

# Progress first, the environment's choices never: how a path is completed to its end.
_PREFERENCE = ("restart", "dlq", "send_back", "deliver", "consume", "send", "offset_commit", "tick")


def _msg_id(i: int) -> str:
    return f"m{i}"


def _consumed_since_persist(s: State) -> bool:
    """Some copy was consumed (or sent back) past what consumerOffset.json covers: a crash repeats it."""
    return any(c.acked for tp in s.topics for c in tp.entries[tp.cper:])


class _Renderer:
    def __init__(self, cfg: ModelConfig) -> None:
        self.cfg = cfg
        self.events: list[dict] = []
        self.t = 0
        self.phy = 0
        self.stored_at: dict[tuple[int, int], int] = {}  # (level index, queue offset) -> store time

    def emit(self, kind: str, **fields) -> None:
        self.events.append({"seq": len(self.events), "t_ms": self.t, "kind": kind, **fields})

    def store(self, topic: str, queue_id: int, queue_offset: int, msg: int, r: int) -> None:
        self.emit("store", msg_id=_msg_id(msg), topic=topic, queue_id=queue_id, queue_offset=queue_offset,
                  phy_offset=self.phy, size=1, reconsume_times=r, broker_ms=self.t)
        self.phy += 1

    def appends(self, before: State, after: State) -> None:
        """A ``store`` event for every append the action made (and ``dlq`` for a dead letter)."""
        for li, (a, b) in enumerate(zip(before.levels, after.levels, strict=True)):
            for o in range(len(a.entries), len(b.entries)):
                e = b.entries[o]
                self.stored_at[(li, o)] = self.t
                self.store(SCHEDULE_TOPIC, li, o, e.msg, e.r)
        for t, (a, b) in enumerate(zip(before.topics, after.topics, strict=True)):
            for o in range(len(a.entries), len(b.entries)):
                c = b.entries[o]
                self.store(TOPIC_NAMES[t], 0, o, c.msg, c.r)
        for o in range(len(before.dlq), len(after.dlq)):
            m, r = after.dlq[o]
            self.store(DLQ_TOPIC, 0, o, m, r)
            self.emit("dlq", group=GROUP, msg_id=_msg_id(m), reconsume_times=r)

    def commits(self, before: State, after: State) -> None:
        for t, (a, b) in enumerate(zip(before.topics, after.topics, strict=True)):
            if b.cmem != a.cmem and after.up:
                self.emit("offset_commit", group=GROUP, client_id=CLIENT_ID, topic=TOPIC_NAMES[t], queue_id=0,
                          offset=b.cmem)

    def step(self, action: Action, before: State, after: State) -> None:
        verb = action.verb
        if verb == "tick":
            self.t += TICK_MS * (action.arg("ticks") or 1)  # a collapsed tick jumps several
            return
        self.t += STEP_MS
        arg = action.arg
        if verb == "send":
            msg, level = arg("msg"), arg("level")
            self.emit("send", msg_id=_msg_id(msg), topic=TOPIC, queue_id=0, delay_level=level,
                      deliver_ms=self.t + level * TICK_MS if level else None, status="SEND_OK")
            self.appends(before, after)  # causes before effects, as the simulator records them (#18)
        elif verb == "deliver":
            li = arg("level") - 1
            o = before.levels[li].cursor
            e = before.levels[li].entries[o]
            dest = TOPIC_NAMES[e.dest]
            self.emit("deliver", msg_id=_msg_id(e.msg), level=li + 1, due_ms=self.stored_at[(li, o)]
                      + self.cfg.delay(li + 1) * TICK_MS, topic=dest, queue_id=0, broker_ms=self.t,
                      schedule_queue_offset=o)
            self.appends(before, after)
        elif verb == "consume":
            t = TOPIC_NAMES.index(arg("topic"))
            self.emit("consume", group=GROUP, client_id=CLIENT_ID, msg_id=_msg_id(arg("msg")),
                      topic=TOPIC if t == 0 else TOPIC_NAMES[t], queue_topic=TOPIC_NAMES[t], queue_id=0,
                      queue_offset=arg("offset"), reconsume_times=arg("r"), status=arg("status"))
            self.commits(before, after)
        elif verb in ("send_back", "dlq"):
            r = arg("r") if verb == "send_back" else arg("r") - 1
            # delay_level is the client's request, as the simulator records it: 0 lets the broker choose
            # 3 + r (or whatever a mutant makes of it), which the history invariants must not take on trust
            self.emit("send_back", group=GROUP, msg_id=_msg_id(arg("msg")), reconsume_times=r, delay_level=0,
                      result="ok", path="broker")
            self.appends(before, after)
        elif verb == "fault":
            site = arg("site")
            # the request the fault was injected into comes first, as the simulator records it (#18)
            if arg("topic") is not None:  # a failed send-back: the client retries it locally
                t = TOPIC_NAMES.index(arg("topic"))
                e = before.topics[t].entries[arg("offset")]
                self.emit("send_back", group=GROUP, msg_id=_msg_id(e.msg), reconsume_times=e.r,
                          delay_level=0, result="failed", path="broker")
            elif site == "commitlog.put":
                self.emit("send", msg_id=_msg_id(arg("msg")), topic=TOPIC, queue_id=-1,
                          delay_level=before.msgs[arg("msg")].level, deliver_ms=None, status="FAILED: put failure")
            self.emit("fault", site=site, action="fail")
        elif verb == "offset_commit":
            self.commits(before, after)
        elif verb == "persist":
            if arg("file") == DELAY_FILE and not _consumed_since_persist(before):
                # The model's persist point stands for the periodic flush: what it covered was delivered
                # more than one persist window before any later crash. Time is free in the model, so the
                # gap is rendered only where no legitimate duplicate (a consumed copy the persisted consumer
                # offset does not cover) would fall outside its window.
                self.t += PERSIST_GAP_MS
            self.emit("persist", file=arg("file"))
        elif verb == "crash":
            kind = "shutdown" if arg("kind") == "graceful" else "process"
            self.emit("crash", target="broker", crash_kind=kind, site="model")
            self.emit("crash", target=OWNER, crash_kind=kind)
        elif verb == "restart":
            self.emit("restart", target="broker", ok=True, commit_log_end=self.phy)
            self.emit("restart", target=OWNER)
        else:  # pragma: no cover - a new verb must be rendered before it is checked
            raise ValueError(f"no rendering for action {action.text()}")


def render(cfg: ModelConfig, path: Iterable[tuple[Action, State, State]]) -> tuple[list[dict], RunContext]:
    """The history of a path of (action, state before, state after) steps, and the context to judge it."""
    r = _Renderer(cfg)
    for action, before, after in path:
        r.step(action, before, after)
    end = r.t + TICK_MS
    if any(e["kind"] == "restart" for e in r.events):
        # the path is complete: nothing more happens. The drain reaches past the clients' heartbeat after the
        # restart, so that what they never consumed is judged lost, not pending (the model's pulls do not wait)
        end += RESUME_AFTER_BROKER_RESTART_MS[cfg.era]
    ctx = RunContext(groups=(GroupInfo(GROUP, TOPIC, "CLUSTERING", (CLIENT_ID,), cfg.max_retries),),
                     delay_level_ms={level: cfg.delay(level) * TICK_MS for level in range(1, cfg.levels + 1)},
                     drain_start_ms=end, end_ms=end, duplicate_window_ms=DUPLICATE_WINDOW_MS, era=cfg.era)
    return r.events, ctx


def complete(cfg: ModelConfig, state: State, limit: int = 2000) -> list[tuple[Action, State, State]]:
    """Steps from ``state`` to a state where no progress is possible, taking progress actions only (no
    faults, crashes, persists or failed consumes)."""
    steps = []
    for _ in range(limit):
        moves = [(a, n) for a, n in successors(state, cfg) if a.verb in _PREFERENCE
                 and not (a.verb == "consume" and a.arg("status") != CONSUME_SUCCESS)]
        if not moves:
            return steps
        action, nxt = min(moves, key=lambda m: _PREFERENCE.index(m[0].verb))
        steps.append((action, state, nxt))
        state = nxt
    raise AssertionError("completion did not end")


def random_path(cfg: ModelConfig, rng: random.Random, limit: int = 400) -> list[tuple[Action, State, State]]:
    """A random run from the initial state to its end (then completed by progress actions if still going)."""
    state = initial_state(cfg)
    steps = []
    for _ in range(limit):
        moves = successors(state, cfg)
        if not moves:
            return steps
        action, nxt = moves[rng.randrange(len(moves))]
        steps.append((action, state, nxt))
        state = nxt
    return steps + complete(cfg, state)


def judge(cfg: ModelConfig, path: list[tuple[Action, State, State]]) -> dict:
    """The history invariants' verdicts on the rendered path."""
    events, ctx = render(cfg, path)
    return check_events(events, ctx)


def violated(verdicts: dict) -> list[str]:
    return [name for name, v in verdicts.items() if not v["holds"]]


def counterexample_path(violation, cfg: ModelConfig) -> list[tuple[Action, State, State]]:
    """A violation's trace (and lasso loop) as steps, completed by progress actions unless it is a lasso."""
    state = initial_state(cfg)
    steps = []
    for step in list(violation.steps) + list(violation.cycle_steps):
        steps.append((step.action, state, step.state))
        state = step.state
    if not violation.cycle_steps:
        steps += complete(cfg, state)
    return steps


def cross_check(violation, cfg: ModelConfig, max_states: int = 20_000) -> tuple[list[str], bool]:
    """(history invariants the rendered counterexample violates, whether one of them is the expected one).

    The trace is completed by progress actions; when that history shows nothing (a property about a
    hidden variable, e.g. an offset that passed a message still held in memory), the continuations
    of the violating state are searched (depth first, each state once) for one whose history the
    expected invariant flags: the model's early warning must lead to an observable failure."""
    wanted = FLAGGED_BY.get(violation.prop, ())
    path = counterexample_path(violation, cfg)
    flagged = violated(judge(cfg, path))
    if any(name in flagged for name in wanted) or violation.cycle_steps:
        return flagged, any(name in flagged for name in wanted)
    prefix = path[:len(violation.steps)]
    state = prefix[-1][2] if prefix else initial_state(cfg)
    seen = {state}
    stack = [(state, [])]
    while stack and len(seen) < max_states:
        s, tail = stack.pop()
        moves = successors(s, cfg)
        if not moves:
            found = violated(judge(cfg, prefix + tail))
            if any(name in found for name in wanted):
                return found, True
            continue
        for action, nxt in reversed(moves):
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, tail + [(action, s, nxt)]))
    return flagged, False


__all__ = ["FLAGGED_BY", "complete", "counterexample_path", "cross_check", "judge", "random_path",
           "render", "violated"]
