"""The loader's one-line warnings (#19.2): a level above the table is clamped as the broker does, and a drain
that cannot cover the longest configured delay is announced (its messages are reported as pending)."""

from __future__ import annotations

from scenarios.scenario import load_scenario_text, scenario_from_dict
from sim.run import run_scenario

BASE = """
name = "notes"
duration = "1s"
drain = "{drain}"

[[topic]]
name = "T"

[[producer]]
topic = "T"
messages = 1
{delay}

[[consumer]]
group = "G"
topic = "T"
{consumer}
"""


def _load(capsys, drain="1m", delay="", consumer=""):
    scenario = load_scenario_text(BASE.format(drain=drain, delay=delay, consumer=consumer), "notes.toml")
    return scenario, capsys.readouterr().err.splitlines()


def test_no_note_when_the_drain_covers_everything(capsys):
    scenario, err = _load(capsys, drain="1m", delay="delay_level = 3")
    assert scenario.notes == () and err == []


def test_a_level_above_the_table_is_clamped_with_a_note_naming_file_and_key(capsys):
    scenario, err = _load(capsys, drain="2h5m", delay="delay_levels = [19]")
    assert len(err) == 1
    assert err[0].startswith("warning: notes.toml: key 'producer[0].delay_levels' names level(s) [19]")
    assert "clamps them to level 18 (2h)" in err[0]
    assert scenario.notes == (err[0].removeprefix("warning: "),)


def test_a_short_drain_is_announced_in_one_line(capsys):
    _, err = _load(capsys, drain="30m", delay="delay_level = 18")
    assert err == ["warning: notes.toml: drain (30m) is shorter than the longest delay (2h, producer[0]: 2h delay): "
                   "messages due after the drain are reported as pending"]
    _, err = _load(capsys, drain="1m", delay='timer_delay = "90s"')
    assert len(err) == 1 and "(90s, producer[0]: 90s delay)" in err[0]


def test_the_retry_ladder_counts_toward_the_longest_delay(capsys):
    # fail_first = 3: retries through levels 3, 4, 5 (10s + 30s + 1m) after the message's own level 1 (1s).
    _, err = _load(capsys, drain="1m", delay="delay_level = 1", consumer="fail_first = 3")
    assert len(err) == 1 and "(101s, producer[0]: 1s delay + 100s of retries)" in err[0]
    _, err = _load(capsys, drain="2m", delay="delay_level = 1", consumer="fail_first = 3")
    assert err == []


def test_sweeps_validate_without_printing(capsys):
    import tomllib

    doc = tomllib.loads(BASE.format(drain="1m", delay="delay_level = 18", consumer=""))
    scenario = scenario_from_dict(doc, "sweep")
    assert len(scenario.notes) == 1 and capsys.readouterr().err == ""


def test_the_broker_clamps_the_level_it_was_given(capsys):
    scenario, _ = _load(capsys, drain="2h5m", delay="delay_levels = [19]")
    result = run_scenario(scenario)
    delivers = [e for e in result.history.events if e["kind"] == "deliver"]
    assert [e["level"] for e in delivers] == [18]
    assert result.summary["verdict"] == "holds"
