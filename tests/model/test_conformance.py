"""The real store and the abstract model, driven side by side: they must agree after every step.

Hypothesis picks the model's actions (sends, ticks, consumption with success or failure, send-backs,
commits, persist points, put failures, crashes and restarts); ``sim.model_mapping`` performs each one
on a real ``BrokerController`` and maps the store's state back to the model's ``Observation``. The
scheduler is the store's: what it delivers during a tick is replayed in the model, which must allow
it. The first disagreement (schedule queues, cursors and offset tables, delivered copies, consume
offsets, retry counts, DLQ contents) fails with the steps so far.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from model.spec import (
    AWAIT_RESUBMIT,
    AWAIT_SEND_BACK,
    CONSUME_SUCCESS,
    CONSUMER_FILE,
    CRASH_KINDS,
    DELAY_FILE,
    ERA_4,
    RECONSUME_LATER,
    SITE_PUT,
    SITE_SCHEDULE_DELIVER,
    SITE_SCHEDULE_REBUILD,
    SITE_SEND_BACK,
    TOPIC_NAMES,
    Action,
    ModelConfig,
    client_offset,
    initial_state,
    observe,
    successors,
)
from sim.model_mapping import StoreUnderModel, msg_key

CONFORMANCE_SETTINGS = settings(max_examples=60, stateful_step_count=50, deadline=None,
                                suppress_health_check=[HealthCheck.too_slow])


class ModelVersusStore(RuleBasedStateMachine):
    cfg = ModelConfig(messages=3, levels=3, max_retries=1, crashes=2, put_failures=4, persist_points=8)

    def __init__(self) -> None:
        super().__init__()
        self.store = StoreUnderModel(self.cfg)
        self.state = initial_state(self.cfg)
        self.steps: list[str] = []
        self.up_since_ms = 0

    # --- helpers ---------------------------------------------------------------------------------------
    def take(self, verb: str, **match) -> Action:
        """Apply the model's successor labelled ``verb`` with these arguments; the model must allow it."""
        for action, nxt in successors(self.state, self.cfg):
            if action.verb == verb and all(action.arg(k) == v for k, v in match.items()):
                self.state = nxt
                self.steps.append(action.text())
                return action
        allowed = [a.text() for a, _ in successors(self.state, self.cfg)]
        raise AssertionError(f"the store did {verb} {match}, which the model does not allow here; allowed: "
                             f"{allowed}\nsteps so far:\n  " + "\n  ".join(self.steps))

    def can_fail(self) -> bool:
        return self.cfg.put_failures is None or self.state.faults > 0

    def urgent(self) -> bool:
        return any(stage == AWAIT_SEND_BACK for _t, _o, stage in self.state.pq)

    def idle(self) -> bool:
        return self.state.up and not self.urgent()

    # --- rules -----------------------------------------------------------------------------------------
    @precondition(lambda self: self.idle() and any(m.level >= 0 for m in self.state.msgs))
    @rule(pick=st.integers(0, 11), fail=st.booleans())
    def send(self, pick: int, fail: bool) -> None:
        unsent = [i for i, m in enumerate(self.state.msgs) if m.level >= 0]
        i = unsent[pick % len(unsent)]
        fail = fail and self.can_fail()
        ok = self.store.send(i, self.state.msgs[i].level, fail=fail)
        assert ok == (not fail)
        if fail:
            self.take("fault", site=SITE_PUT, msg=i)
        else:
            self.take("send", msg=i)

    @precondition(lambda self: self.idle())
    @rule(fail=st.sampled_from([None, None, SITE_SCHEDULE_DELIVER, SITE_SCHEDULE_REBUILD]))
    def tick(self, fail: str | None) -> None:
        if fail is not None and (not self.can_fail() or (fail == SITE_SCHEDULE_REBUILD and self.cfg.era != ERA_4)):
            fail = None
        events = self.store.tick(fail)
        if any(a.verb == "tick" for a, _ in successors(self.state, self.cfg)):
            self.take("tick")
        else:
            self.steps.append("(a second passes)")
        for event in events:
            if event.verb == "fault":
                self.take("fault", site=event.site, level=event.level)
            else:
                action = self.take("deliver", level=event.level)
                assert (msg_key(action.arg("msg")), action.arg("r"), action.arg("to")) == (event.msg, event.r,
                                                                                        event.to), (action, event)
        if not any(e.verb == "fault" for e in events) and self.store.mono_ms - self.up_since_ms > 1000:
            # promptness: a broker that has polled for a second has delivered every due head unit
            for li, lv in enumerate(self.state.levels):
                head = lv.entries[lv.cursor] if lv.cursor < len(lv.entries) else None
                assert head is None or head.wait > 0, f"level {li + 1}: due unit {lv.cursor} not delivered"

    @precondition(lambda self: self.idle() and any(tp.pull < len(tp.entries) for tp in self.state.topics))
    @rule(pick=st.integers(0, 1), ok=st.booleans())
    def consume(self, pick: int, ok: bool) -> None:
        ready = [t for t, tp in enumerate(self.state.topics) if tp.pull < len(tp.entries)]
        t = ready[pick % len(ready)]
        offset = self.state.topics[t].pull
        msg = self.store.pull(t, offset, client_offset(self.state, t, self.cfg))
        action = self.take("consume", topic=TOPIC_NAMES[t], offset=offset,
                           status=CONSUME_SUCCESS if ok else RECONSUME_LATER)
        assert (msg.uniq_key, msg.reconsume_times) == (msg_key(action.arg("msg")), action.arg("r"))
        if not ok:
            self.store.hold(t, offset, msg)

    @precondition(lambda self: self.idle() and any(s == AWAIT_RESUBMIT for _t, _o, s in self.state.pq))
    @rule(pick=st.integers(0, 5), ok=st.booleans())
    def consume_again(self, pick: int, ok: bool) -> None:
        """The client's local resubmission after a failed send-back (no broker involved)."""
        waiting = [(t, o) for t, o, s in self.state.pq if s == AWAIT_RESUBMIT]
        t, o = waiting[pick % len(waiting)]
        self.take("consume", topic=TOPIC_NAMES[t], offset=o, status=CONSUME_SUCCESS if ok else RECONSUME_LATER)
        if ok:
            self.store.release(t, o)

    @precondition(lambda self: self.state.up and self.urgent())
    @rule(fail=st.booleans())
    def send_back(self, fail: bool) -> None:
        t, o, _ = next(item for item in self.state.pq if item[2] == AWAIT_SEND_BACK)
        fail = fail and self.can_fail()
        ok = self.store.send_back(self.store.held[(t, o)], fail=fail)
        assert ok == (not fail)
        if fail:
            self.take("fault", site=SITE_SEND_BACK, topic=TOPIC_NAMES[t], offset=o)
            if "commit_on_failed_send_back" in self.cfg.mutants:
                self.store.release(t, o)
        else:
            self.store.release(t, o)
            verbs = {a.verb for a, _ in successors(self.state, self.cfg)}
            self.take("dlq" if "dlq" in verbs else "send_back", topic=TOPIC_NAMES[t], offset=o)

    @precondition(lambda self: self.idle())
    @rule(t=st.integers(0, 1))
    def offset_commit(self, t: int) -> None:
        offset = client_offset(self.state, t, self.cfg)
        if not any(a.verb == "offset_commit" and a.arg("topic") == TOPIC_NAMES[t]
                   for a, _ in successors(self.state, self.cfg)):
            return
        self.store.commit(t, offset)
        self.take("offset_commit", topic=TOPIC_NAMES[t], offset=offset)

    @precondition(lambda self: self.idle() and self.state.persists > 0)
    @rule(file=st.sampled_from([DELAY_FILE, CONSUMER_FILE]))
    def persist(self, file: str) -> None:
        if not any(a.verb == "persist" and a.arg("file") == file for a, _ in successors(self.state, self.cfg)):
            return
        self.store.persist(file)
        self.take("persist", file=file)

    @precondition(lambda self: self.idle() and self.state.crashes > 0)
    @rule(kind=st.sampled_from(CRASH_KINDS))
    def crash(self, kind: str) -> None:
        self.store.crash(kind)
        self.take("crash", kind=kind)

    @precondition(lambda self: not self.state.up)
    @rule()
    def restart(self) -> None:
        self.store.restart()
        self.up_since_ms = self.store.mono_ms
        self.take("restart")

    # --- the comparison --------------------------------------------------------------------------------
    @invariant()
    def store_agrees_with_model(self) -> None:
        if not self.state.up:
            return
        want, got = observe(self.state), self.store.observe()
        if want != got:
            lines = [f"store and model disagree after {len(self.steps)} steps:"]
            for name, a, b in (("levels", want.levels, got.levels), ("topics", want.topics, got.topics),
                               ("dlq", want.dlq, got.dlq)):
                if a != b:
                    lines.append(f"  {name}: model {a}\n  {' ' * len(name)}  store {b}")
            lines.append("steps:\n  " + "\n  ".join(self.steps))
            raise AssertionError("\n".join(lines))


TestCleanModelMatchesStore = ModelVersusStore.TestCase
TestCleanModelMatchesStore.settings = CONFORMANCE_SETTINGS
TestCleanModelMatchesStore.pytestmark = [pytest.mark.slow]


class _QuickClean(ModelVersusStore):
    """The same comparison on a third of the examples: the default tier's share of the one above."""


TestCleanModelMatchesStoreQuick = _QuickClean.TestCase
TestCleanModelMatchesStoreQuick.settings = settings(CONFORMANCE_SETTINGS, max_examples=20)


class ModelVersusStore498(ModelVersusStore):
    cfg = ModelConfig(messages=2, levels=2, max_retries=1, crashes=1, put_failures=3, persist_points=4,
                      era=ERA_4)


TestEra498ModelMatchesStore = ModelVersusStore498.TestCase
TestEra498ModelMatchesStore.settings = settings(CONFORMANCE_SETTINGS, max_examples=12)

# The store's mutants, with the model's switch of the same name: the buggy store still follows the
# buggy model (the consumer-side mutants live in the test's own consumer, so they are left out).
STORE_MUTANTS = ["skip_failed_delivery", "offset_from_task_start", "no_persist_at_shutdown", "persist_before_load",
                 "dlq_keeps_delay", "dlq_threshold_gt", "retry_level_2_plus_r"]
for _name in STORE_MUTANTS:
    _machine = type(f"ModelVersusStore_{_name}", (ModelVersusStore,), {
        "cfg": ModelConfig(messages=2, levels=3, max_retries=1, crashes=1, put_failures=2, persist_points=4,
                           mutants=frozenset({_name}))})
    _case = _machine.TestCase
    _case.settings = settings(CONFORMANCE_SETTINGS, max_examples=6)
    globals()[f"TestMutant_{_name}_ModelMatchesStore"] = _case
del _name, _machine, _case
_drop = type("ModelVersusStore_drop_on_exception", (ModelVersusStore498,), {
    "cfg": ModelConfig(messages=2, levels=2, max_retries=1, crashes=1, put_failures=3, persist_points=4,
                       era=ERA_4, mutants=frozenset({"drop_on_exception"}))})
TestMutant_drop_on_exception_ModelMatchesStore = _drop.TestCase
TestMutant_drop_on_exception_ModelMatchesStore.settings = settings(CONFORMANCE_SETTINGS, max_examples=6)


class _StoreWithAnotherRetryRule(ModelVersusStore):
    """A clean model against a store whose retry level is 2 + r: the comparison must notice."""

    cfg = ModelConfig(messages=1, levels=3, max_retries=1, crashes=0, put_failures=0, persist_points=0)

    def __init__(self) -> None:
        super().__init__()
        self.store = StoreUnderModel(ModelConfig(messages=1, levels=3, max_retries=1, crashes=0, put_failures=0,
                                                 persist_points=0, mutants=frozenset({"retry_level_2_plus_r"})))


def test_the_comparison_fails_when_the_store_behaves_differently():
    quick = settings(max_examples=400, stateful_step_count=30, deadline=None, database=None,
                     phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    with pytest.raises(AssertionError, match="disagree|does not allow"):
        run_state_machine_as_test(_StoreWithAnotherRetryRule, settings=quick)


def _replay_skipped_put_then_not_due() -> None:
    """The counterexample Hypothesis found (1 500 examples) for #9249: level 3's failed put of m0 is skipped and
    the next poll finds m1 not due; 5.x's not-due branch then writes the cursor into the offset table."""
    machine = type("SkipFailedDelivery", (ModelVersusStore,), {"cfg": ModelConfig(
        messages=2, levels=3, max_retries=1, crashes=1, put_failures=2, persist_points=4,
        mutants=frozenset({"skip_failed_delivery"}))})
    state = machine()
    steps = [("crash", {"kind": "process"}), ("restart", {}), ("send", {"fail": False, "pick": 0}),
             ("tick", {"fail": None}), ("consume", {"ok": False, "pick": 0}), ("send_back", {"fail": False}),
             ("offset_commit", {"t": 0}), ("send", {"fail": False, "pick": 0}), ("tick", {"fail": None}),
             ("tick", {"fail": None}), ("consume", {"ok": False, "pick": 0}), ("send_back", {"fail": False}),
             ("tick", {"fail": "schedule.deliver_put"}), ("tick", {"fail": None})]
    state.store_agrees_with_model()
    for name, args in steps:
        getattr(state, name)(**args)
        state.store_agrees_with_model()
    state.teardown()


def test_a_skipped_put_then_a_unit_not_yet_due(monkeypatch):
    import model.spec as spec

    _replay_skipped_put_then_not_due()
    monkeypatch.setattr(spec, "_not_due_table", lambda lv, cfg: lv.table)  # the model before the fix
    with pytest.raises(AssertionError, match="disagree"):
        _replay_skipped_put_then_not_due()
