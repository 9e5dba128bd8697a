"""``rmqsim lessons``: each lesson tells a true story. Its bug run is caught by the lesson's invariant and its
fixed run holds, the message it follows is in both runs, the claims the texts make are in the data, and the
page shows both journeys, the question and a hidden answer."""

from __future__ import annotations

import re
from functools import cache

import pytest
from matplotlib.figure import Figure

from model.invariants import CHECKS
from model.journey import journey, message_ids
from reports.lesson_page import plot_message
from scenarios.catalogue import builtin_names
from scenarios.cli import main
from scenarios.lessons import LESSONS, by_name, run_lesson, write_lesson
from scenarios.scenario import load_scenario_file
from sim.run import run_scenario
from store.mutants import CATALOGUE, FIDELITY_ONLY


@cache
def runs(name: str):
    return run_lesson(by_name()[name])


def own_hops(events: list[dict], msg_id: str):
    return [h for h in journey(events, msg_id) if not h.context]


def test_the_catalogue_is_six_to_ten_distinct_lessons_over_real_bugs_and_built_ins():
    assert 6 <= len(LESSONS) <= 10
    assert len(by_name()) == len(LESSONS)
    assert len({lesson.mutant for lesson in LESSONS}) == len(LESSONS)
    for lesson in LESSONS:
        assert lesson.mutant in CATALOGUE and lesson.mutant not in FIDELITY_ONLY
        assert lesson.scenario in builtin_names()
        assert lesson.invariant in CHECKS
        assert lesson.question.strip() and lesson.answer.strip() and lesson.idea


# The default tier tells the stories of the lessons whose runs its other tests read anyway (runs are cached per
# lesson); every other lesson (two runs each, seconds for some) in the slow tier, which also writes every page.
# Each lesson's bug is a mutant whose pinned catch tests/model/test_mutants_caught.py keeps.
DEFAULT_LESSONS = {"retry-ladder", "clock-step", "consumer-offsets"}


@pytest.mark.parametrize("name", [lesson.name if lesson.name in DEFAULT_LESSONS
                                  else pytest.param(lesson.name, marks=pytest.mark.slow) for lesson in LESSONS])
def test_the_bug_is_caught_on_a_message_the_fixed_run_delivers_differently(name):
    lesson_runs = runs(name)
    assert lesson_runs.sound, (lesson_runs.bug.summary["invariants"][by_name()[name].invariant]["holds"],
                               lesson_runs.fixed.summary["verdict"])
    msg_id = lesson_runs.msg_id
    assert msg_id in message_ids(lesson_runs.fixed.history.events)
    assert _hops(lesson_runs.bug.history.events, msg_id) != _hops(lesson_runs.fixed.history.events, msg_id)


def _hops(events: list[dict], msg_id: str) -> list[tuple]:
    """What the two journeys are compared on: each hop's kind, place and broker time."""
    return [(h.kind, h.event.get("topic"), h.event.get("queue_id"), h.event.get("broker_ms"))
            for h in own_hops(events, msg_id)]


def _levels_of_retry_copies(events: list[dict], msg_id: str) -> list[int]:
    return [h.event["queue_id"] + 1 for h in own_hops(events, msg_id)
            if h.kind == "store" and h.event["topic"] == "SCHEDULE_TOPIC_XXXX"]


def test_the_retry_ladder_lesson_shows_three_retries_fixed_and_a_fourth_with_the_bug():
    lesson_runs = runs("retry-ladder")
    assert _levels_of_retry_copies(lesson_runs.fixed.history.events, lesson_runs.msg_id) == [3, 4, 5]
    assert _levels_of_retry_copies(lesson_runs.bug.history.events, lesson_runs.msg_id) == [3, 4, 5, 6]
    consumes = [h for h in own_hops(lesson_runs.fixed.history.events, lesson_runs.msg_id) if h.kind == "consume"]
    dead = [h for h in own_hops(lesson_runs.fixed.history.events, lesson_runs.msg_id) if h.kind == "dlq"]
    assert len(consumes) == 4 and dead[0].event["reconsume_times"] == 4  # the answer's numbers


def test_the_clock_step_lesson_delivers_at_the_step_after_40_of_60_seconds():
    lesson_runs = runs("clock-step")
    fixed = own_hops(lesson_runs.fixed.history.events, lesson_runs.msg_id)
    send = next(h for h in fixed if h.kind == "send")
    deliver = next(h for h in fixed if h.kind == "deliver")
    assert send.event["delay_level"] == 5 and send.t_ms == 0 and deliver.t_ms == 40_000  # "40 s of its 60 s"
    assert not any(h.kind == "deliver" for h in own_hops(lesson_runs.bug.history.events, lesson_runs.msg_id))


def test_the_consumer_offset_lesson_commits_past_the_message_before_it_was_consumed():
    lesson_runs = runs("consumer-offsets")
    commits = [h for h in journey(lesson_runs.bug.history.events, lesson_runs.msg_id) if h.kind == "offset_commit"]
    assert commits and commits[0].extra["before_consume"]
    assert len(lesson_runs.bug.summary["invariants"]["no_loss"]["violations"]) == 8  # "the eight messages"


def test_the_plot_draws_the_followed_message_red_with_the_bug_and_plain_as_fixed():
    lesson_runs = runs("retry-ladder")
    labels = {}
    for label, result, why in (("bug", lesson_runs.bug, lesson_runs.why), ("fixed", lesson_runs.fixed, None)):
        ax = Figure().add_subplot()
        lanes = plot_message(result.history.events, result.summary, lesson_runs.msg_id, "dlq_after_max_retries",
                             why, ax=ax)
        assert [lane.msg_id for lane in lanes] == [lesson_runs.msg_id]
        labels[label] = [t.get_text() for t in ax.get_yticklabels()]
    assert labels["bug"][0].startswith("\u2717") and not labels["fixed"][0].startswith("\u2717")


def test_a_page_has_both_journeys_the_question_and_the_answer_hidden_and_its_commands_reproduce(tmp_path):
    lesson = by_name()["retry-ladder"]
    path, lesson_runs = write_lesson(lesson, str(tmp_path), 2)
    page = open(path, encoding="utf-8").read()
    assert page.count('<img class="plot"') == 2 and page.count('<div class="pair">') == 1
    assert f"message {lesson_runs.msg_id}: dead-lettered" in page
    assert lesson.question in page
    hidden = re.search(r"<details><summary>[^<]*</summary>(.*?)</details>", page, re.S)
    assert hidden and lesson.answer in hidden.group(1) and lesson.answer not in page.replace(hidden.group(0), "")
    # "Try it yourself": the written scenario file reproduces the bug run exactly
    scenario = load_scenario_file(str(tmp_path / "retry-ladder" / "scenario.toml"))
    again = run_scenario(scenario, lesson.seed, mutants=[lesson.mutant])
    assert again.summary["history_sha256"] == lesson_runs.bug.summary["history_sha256"]
    assert (tmp_path / "retry-ladder" / "bug" / "history.jsonl").is_file()


def test_the_cli_lists_and_refuses_bad_input(capsys, tmp_path):
    assert main(["lessons"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in listed] == [lesson.name for lesson in LESSONS]
    assert main(["lessons", "retry-ladders", "--out", str(tmp_path)]) == 2
    assert "did you mean 'retry-ladder'" in capsys.readouterr().err
    assert main(["lessons", "retry-ladder"]) == 2
    assert "--out DIR is required" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_every_lesson_page_and_the_index_are_written_and_sound(tmp_path, capsys):
    assert main(["lessons", "--all", "--out", str(tmp_path)]) == 0
    index = (tmp_path / "index.html").read_text(encoding="utf-8")
    for lesson in LESSONS:
        assert f'href="{lesson.name}.html"' in index
        assert "<details>" in (tmp_path / f"{lesson.name}.html").read_text(encoding="utf-8")
    assert capsys.readouterr().out.count(" ok\n") == len(LESSONS)
