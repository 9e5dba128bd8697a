"""Hostile and extreme input gets one clear line and exit 2 (or a verdict in bounded time), never a
traceback, a hang, or a file written outside ``--out`` (issue 19, items 4 and 5)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from scenarios.cli import main
from scenarios.scenario import ScenarioError, load_scenario_text
from store import fastjson

REPRO = "/work/shared/repro/topic-path-traversal.toml"
BASE = """name = "x"
duration = "10s"
drain = "1m"
[[topic]]
name = "T"
[[producer]]
topic = "T"
messages = 3
[[consumer]]
group = "G"
topic = "T"
"""
TRAVERSAL = BASE.replace('"T"', '"../../../../escape"')


def _one_line_exit_2(capsys, argv, *expect) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rmqsim"), err
    assert "Traceback" not in err
    for word in expect:
        assert word in lines[0], lines[0]
    return lines[0]


# --- the scenario loader ---------------------------------------------------------------------------------------
LOADER_CASES = {
    "version_float": ("version = 1.5\n" + BASE, "version"),
    "version_bool": ("version = true\n" + BASE, "version"),
    "version_3": ("version = 3\n" + BASE, "version"),
    "faults_list": ("faults = [1]\n" + BASE, "'faults' must be a table"),
    "duration_400_digits": (BASE.replace('"10s"', '"' + "9" * 400 + 's"'), "duration"),
    "duration_no_bound": (BASE.replace('"10s"', '"999999d"'), "at most 3d"),
    "drain_no_bound": (BASE.replace('"1m"', '"30d"'), "at most 3d"),
    "clock_step_past_int64": (BASE + '[faults]\nclock_steps = [{ at = "5s", by = "999999999999999999999s" }]\n',
                              "clock_steps[0].by"),
    "timer_delay_past_int64": (BASE.replace("messages = 3", 'messages = 3\ntimer_delay = "99999999999999999999s"'),
                               "timer_delay"),
    "zero_weights": (BASE.replace("messages = 3", "messages = 3\ndelay_levels = [1, 2]\ndelay_weights = [0, 0]"),
                     "not all zero"),
    "empty_group": (BASE.replace('group = "G"', 'group = ""'), "group is blank"),
    "group_with_slash": (BASE.replace('group = "G"', 'group = "a/b"'), "illegal characters"),
    "long_group": (BASE.replace('group = "G"', f'group = "{"g" * 256}"'), "longer than 255"),
    "long_topic": (BASE.replace('"T"', f'"{"t" * 128}"'), "longer than 127"),
    "path_traversal": (TRAVERSAL, "^[%|a-zA-Z0-9_-]+$"),
    "schedule_topic": (BASE.replace('"T"', '"SCHEDULE_TOPIC_XXXX"'), "system topic"),
    "retry_topic": (BASE.replace('"T"', '"%RETRY%G"'), "system topic"),
    "dlq_topic": (BASE.replace('"T"', '"%DLQ%G"'), "system topic"),
    "tbw102": (BASE.replace('"T"', '"TBW102"'), "system topic"),
    "rmq_sys": (BASE.replace('"T"', '"rmq_sys_wheel_timer"'), "system topic"),
    "commit_log_past_1_gib": (BASE + "[broker]\ncommit_log_file_size = 1073741825\n", "1 GiB"),
    "rate_400_digits": (BASE.replace("messages = 3", 'messages = 3\nrate = "' + "9" * 400 + '/s"'), "rate"),
    "delay_level_superscript": (BASE + '[broker]\nmessage_delay_level = "1s ²s"\n', "message_delay_level"),
    "deep_nesting": ("a = " + "[" * 5000 + "]" * 5000 + "\n" + BASE, "nested too deep"),
    "seed_past_int64": ("seed = 9223372036854775808\n" + BASE, "seed"),
}


@pytest.mark.parametrize("case", sorted(LOADER_CASES))
def test_the_loader_rejects_it_with_one_line_and_exit_2(case, tmp_path, capsys):
    text, expect = LOADER_CASES[case]
    with pytest.raises(ScenarioError):
        load_scenario_text(text, "case.toml")
    path = tmp_path / "case.toml"
    path.write_text(text, encoding="utf-8")
    _one_line_exit_2(capsys, ["run", str(path), "--out", str(tmp_path / "out")], str(path), expect)
    assert not (tmp_path / "out" / "store").exists()


def test_a_file_that_is_not_utf8_is_exit_2(tmp_path, capsys):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b"\xff\xfe" + BASE.encode())
    _one_line_exit_2(capsys, ["run", str(path)], "not a UTF-8 text file")


def test_the_path_traversal_repro_writes_nothing_outside_out(tmp_path, capsys):
    scenario = tmp_path / "a" / "b" / "c" / "traversal.toml"
    scenario.parent.mkdir(parents=True)
    if os.path.exists(REPRO):
        shutil.copy(REPRO, scenario)
    else:
        scenario.write_text(TRAVERSAL, encoding="utf-8")
    out = tmp_path / "a" / "b" / "c" / "d" / "out"
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    _one_line_exit_2(capsys, ["run", str(scenario), "--out", str(out), "--disk", "os"], "illegal characters")
    after = sorted(str(p) for p in tmp_path.rglob("*"))
    assert [p for p in after if p not in before and not p.startswith(str(out))] == []
    assert not any("escape" in p for p in after)


def test_a_1_gib_commit_log_file_runs_in_bounded_memory(tmp_path, capsys):
    import resource

    path = tmp_path / "big.toml"
    path.write_text(BASE.replace("messages = 3", "messages = 40") + "[broker]\ncommit_log_file_size = 1073741824\n",
                    encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 0
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 256 * 1024, f"the run grew the process by {grown_kib} KiB"  # it was 2.2 GB
    assert (tmp_path / "out" / "store" / "commitlog" / "00000000000000000000").stat().st_size == 1 << 30


def test_valid_names_still_load():
    text = BASE.replace('"T"', '"%abc|Topic-1_x"').replace('group = "G"', 'group = "Group_%|-9"')
    scenario = load_scenario_text(text, "ok.toml")
    assert scenario.topics[0].name == "%abc|Topic-1_x" and scenario.consumers[0].group == "Group_%|-9"


# --- exit codes --------------------------------------------------------------------------------------------------
def test_an_unwritable_out_is_exit_2_before_the_run(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    _one_line_exit_2(capsys, ["run", "rebuild-errors-4x", "--out", str(blocker / "x")], "--out", "cannot create")
    _one_line_exit_2(capsys, ["gate", "--runs", "1", "--out", str(blocker / "x")], "--out")
    _one_line_exit_2(capsys, ["gate", "--runs", "1", "--out", str(tmp_path / "g"), "--junit", str(blocker / "j.xml")],
                     "--junit")


def test_a_bad_seed_is_one_line_exit_2(capsys):
    _one_line_exit_2(capsys, ["run", "rebuild-errors-4x", "--seed", "abc"], "--seed", "'abc'")
    _one_line_exit_2(capsys, ["run", "rebuild-errors-4x", "--shrink", "--shrink-runs", "0"], "--shrink-runs")
    _one_line_exit_2(capsys, ["gate", "--budget", "nan"], "--budget")


def test_an_unknown_mutant_gets_a_did_you_mean(capsys):
    _one_line_exit_2(capsys, ["run", "rebuild-errors-4x", "--mutant", "commit_max_ofset"],
                     "did you mean 'commit_max_offset'?")
    _one_line_exit_2(capsys, ["gate", "--runs", "1", "--mutant", "dlq_treshold_gt"], "did you mean 'dlq_threshold_gt'?")


# --- inspect ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile") / "run"
    assert main(["run", "timer-wheel-basic", "--out", str(out)]) == 0
    return out / "store"


def _copy(store_dir, tmp_path):
    target = tmp_path / "store"
    shutil.copytree(store_dir, target)
    return target


def test_inspect_on_a_directory_that_is_not_a_store_is_exit_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    _one_line_exit_2(capsys, ["inspect", str(tmp_path / "empty")], "not a RocketMQ store directory")


def test_inspect_max_entries_below_zero_is_exit_2(store_dir, capsys):
    _one_line_exit_2(capsys, ["inspect", str(store_dir), "--max-entries", "-1"], "--max-entries")


def _odd_name_cases():
    """Every kind x name x folder; five of them (each name once, each folder and kind at least once) in the
    default tier, the whole product in the slow tier (each case copies a store)."""
    folders = ["commitlog", "timerlog", "consumequeue", "consumequeue/TopicTest"]
    names = ["²", "--1", "+1", "٣", "1" * 30]
    return [pytest.param(kind, name, folder, marks=() if i == j % 4 and k == j % 2 else pytest.mark.slow)
            for k, kind in enumerate(["file", "dir"]) for j, name in enumerate(names) for i, folder in enumerate(folders)]


@pytest.mark.parametrize(("kind", "name", "folder"), _odd_name_cases())
def test_inspect_lists_odd_names_and_exits_0(store_dir, tmp_path, capsys, folder, name, kind):
    root = _copy(store_dir, tmp_path)
    odd = root / folder / name
    if kind == "file":
        odd.write_bytes(b"x" * 64)
    else:
        odd.mkdir()
    assert main(["inspect", str(root)]) == 0
    assert main(["inspect", "--json", str(root)]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err


def test_inspect_prints_strict_json_for_1e999_and_a_lone_surrogate(store_dir, tmp_path, capsys):
    root = _copy(store_dir, tmp_path)
    (root / "config" / "topics.json").write_text('{"a":1e999,"b":"\\ud800x","c":-1e999}', encoding="utf-8")
    assert main(["inspect", "--json", str(root)]) == 0
    text = capsys.readouterr().out
    assert "Infinity" not in text

    def no_constants(name):
        raise AssertionError(f"{name} is not JSON")

    doc = json.loads(text, parse_constant=no_constants)
    assert doc["config"]["topics.json"]["b"].endswith("x") and "\ud800" not in doc["config"]["topics.json"]["b"]
    assert main(["inspect", str(root)]) == 0
    assert "Infinity" not in capsys.readouterr().out


def test_fastjson_integers_past_the_digit_limit_raise_its_error():
    with pytest.raises(fastjson.FastjsonError, match="too long"):
        fastjson.loads("1" * 5000)
    with pytest.raises(fastjson.FastjsonError):
        fastjson.loads('{"a":-' + "9" * 4301 + "}")
    assert fastjson.loads("1" * 4300) == int("1" * 4300)


# --- as a process ----------------------------------------------------------------------------------------------
def _rmqsim(*argv, cwd=None):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    return subprocess.run([sys.executable, "-m", "scenarios.cli", *argv], capture_output=True, text=True, env=env,
                          timeout=120, cwd=cwd, check=False)


def test_run_as_a_process_rejects_the_traversal_with_exit_2(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(TRAVERSAL, encoding="utf-8")
    done = _rmqsim("run", str(path), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_inspect_as_a_process_on_a_non_store_is_exit_2(tmp_path):
    done = _rmqsim("inspect", str(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
