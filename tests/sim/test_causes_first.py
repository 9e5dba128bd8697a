"""history.jsonl records causes before effects (#18): over every built-in, no effect precedes its cause.

A pair (cause kind, effect kind, match) says: when an effect and one or more matching causes are recorded
in the same virtual millisecond, a cause comes first. Causes in other milliseconds are not this test's
business (they are necessarily earlier), nor are effects without a cause in their millisecond (a timer
roll re-puts a copy by itself, an expired message is sent back by the expiry, not by a consume).
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from scenarios.catalogue import builtin_names

from ..shared_runs import builtin_params, builtin_run


def _same_msg(cause: dict, effect: dict) -> bool:
    return cause["msg_id"] == effect["msg_id"]


def _consume_moved_commit(consume: dict, commit: dict) -> bool:
    return ((consume["group"], consume["queue_topic"], consume["queue_id"], consume["queue_offset"] + 1)
            == (commit["group"], commit["topic"], commit["queue_id"], commit["offset"]))


PAIRS = [
    # a producer's send stores its copy (in its topic, SCHEDULE_TOPIC_XXXX or the timer topic)
    ("send", "store", _same_msg),
    # a send-back stores the retry copy (or the DLQ copy, and then the dlq event)
    ("send_back", "store", _same_msg),
    ("send_back", "dlq", _same_msg),
    # a due message's delivery stores it in its real topic (or in %DLQ% through the 4.9.8 fallback)
    ("deliver", "store", _same_msg),
    ("deliver", "dlq", _same_msg),
    # a failed attempt is sent back after its consume result; a consume result moves the group's offset
    ("consume", "send_back", lambda c, e: _same_msg(c, e) and c["group"] == e["group"]),
    ("consume", "offset_commit", _consume_moved_commit),
    # an injected fault, then the log lines it explains
    ("fault", "log", lambda c, e: c["site"] == e["fault_site"]),
]


def effects_before_causes(events: list[dict]) -> list[str]:
    """Every effect recorded before all the matching causes of its millisecond, as readable lines."""
    by_ms: dict[int, list[dict]] = defaultdict(list)
    for event in events:
        by_ms[event["t_ms"]].append(event)
    found = []
    for same_ms in by_ms.values():
        kinds = defaultdict(list)
        for event in same_ms:
            kinds[event["kind"]].append(event)
        for cause_kind, effect_kind, match in PAIRS:
            for effect in kinds.get(effect_kind, ()):
                causes = [c for c in kinds.get(cause_kind, ()) if match(c, effect)]
                if causes and min(c["seq"] for c in causes) > effect["seq"]:
                    found.append(f"{effect_kind} seq {effect['seq']} before its {cause_kind} seq "
                                 f"{min(c['seq'] for c in causes)} at t={effect['t_ms']}")
    return found


def test_the_check_finds_an_effect_before_its_cause():
    """The order the simulator recorded before #18: the store of a copy, then the send that made it."""
    store = {"seq": 0, "t_ms": 5, "kind": "store", "msg_id": "A"}
    send = {"seq": 1, "t_ms": 5, "kind": "send", "msg_id": "A"}
    assert effects_before_causes([store, send]) == ["store seq 0 before its send seq 1 at t=5"]
    assert effects_before_causes([dict(send, seq=0), dict(store, seq=1)]) == []
    assert effects_before_causes([store, dict(send, t_ms=4)]) == []  # another millisecond: not a pair


@pytest.mark.parametrize("name", builtin_params(builtin_names()))
def test_no_effect_precedes_its_cause(name):
    events = builtin_run(name).history.events  # checking a run does not change its history
    assert [e["seq"] for e in events] == list(range(len(events)))
    found = effects_before_causes(events)
    assert not found, found[:5]
    kinds = {e["kind"] for e in events}
    assert {"send", "store"} <= kinds  # the pairs had something to judge
