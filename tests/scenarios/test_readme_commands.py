"""README truth: every example in the README's command table parses as written, and the quick ones run.

The long ones (a full scenario run, a Spark sweep, a gate) are parsed here and run by their own tests.
"""

from __future__ import annotations

import os
import re
import shlex
import time

import pytest

from scenarios.cli import build_parser, main

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def _table_examples() -> list[str]:
    examples = []
    with open(README, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if len(cells) == 3 and cells[2].startswith("`rmqsim "):
                examples.append(cells[2].strip("`"))
    return examples


EXAMPLES = _table_examples()


def test_the_table_has_examples():
    assert len(EXAMPLES) >= 10, EXAMPLES


@pytest.mark.parametrize("command", EXAMPLES)
def test_each_example_parses(command):
    argv = shlex.split(command)[1:]
    args = build_parser().parse_args(argv)
    assert args.func is not None


@pytest.mark.parametrize("command", [c for c in EXAMPLES if c.split()[1] in ("scenarios", "check", "mutants")])
def test_quick_examples_run_in_a_temp_dir(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    start = time.monotonic()
    assert main(shlex.split(command)[1:]) == 0
    assert time.monotonic() - start < 60, "a README example must finish in under a minute"
    assert capsys.readouterr().out.strip()


def test_readme_links_no_file_outside_the_repository():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    assert "../shared/" not in text
    for anchor in re.findall(r"\]\(#([a-z0-9-]+)\)", text):
        headings = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
                    for h in re.findall(r"^#+ (.+)$", text, re.M)}
        assert anchor in headings, anchor


def test_the_report_example_reads_where_the_sweep_example_writes():
    import tomllib

    sweep = next(c for c in EXAMPLES if c.startswith("rmqsim sweep "))
    report = next(c for c in EXAMPLES if c.startswith("rmqsim report "))
    path = os.path.join(os.path.dirname(README), shlex.split(sweep)[2])
    with open(path, "rb") as f:
        name = tomllib.load(f)["name"]
    assert shlex.split(report)[2] == os.path.join("out", "sweeps", name)
