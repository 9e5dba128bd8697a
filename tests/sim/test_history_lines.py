"""``History.to_jsonl`` encodes the events as one list and cuts it between events: it must give exactly the lines
one encode per event gives (the history's hash and every pinned seed depend on them)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from sim.history import History

BOUNDARY = '},{"seq":'


def one_encode_per_event(events: list[dict]) -> str:
    return "".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n" for e in events)


def history_of(events: list[dict]) -> History:
    history = History()
    history.events = events
    return history


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(alphabet=st.sampled_from('ab{}[],:"\\seq\n')),
                    st.sampled_from([BOUNDARY, '"' + BOUNDARY, "}\n{"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.lists(st.fixed_dictionaries({"seq": inner}, optional={"x": inner}), max_size=3),  # nested dicts led by seq
    st.dictionaries(st.sampled_from(["seq", "a", 'k"},{"seq":']), inner, max_size=3)), max_leaves=8)


@given(st.lists(st.dictionaries(st.sampled_from(["t_ms", "kind", "file", 'x},{"seq":']), values, max_size=4),
                max_size=6))
def test_the_lines_are_those_of_one_encode_per_event(bodies):
    events = [{"seq": i, **body} for i, body in enumerate(bodies)]
    assert history_of(events).to_jsonl() == one_encode_per_event(events)


def test_a_nested_list_of_dicts_led_by_seq_is_not_cut():
    """The one case where the cut would be wrong: the count sees the extra boundary and each event is encoded alone."""
    events = [{"seq": 0, "kind": "x", "inner": [{"seq": 1}, {"seq": 2}]}, {"seq": 1, "kind": "y"}]
    assert history_of(events).to_jsonl() == one_encode_per_event(events)
    assert history_of(events).to_jsonl().count("\n") == 2


def test_an_empty_history_has_no_lines():
    assert history_of([]).to_jsonl() == ""
