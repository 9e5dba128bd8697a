"""scenarios/progress.py: the one progress display; off a terminal, a line every few seconds (issue 16)."""

import io
import os
import re

from scenarios.progress import progress_bar

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_not_a_terminal_prints_periodic_lines():
    out = io.StringIO()
    bar = progress_bar(total=3, desc="gate", unit="run", stream=out, every_s=0.0)
    bar.set_postfix_str("basic seed 1")
    bar.update(1)
    bar.n = 3
    bar.refresh()
    bar.close()
    bar.update(1)  # closed: silent
    assert out.getvalue().splitlines() == [
        "gate: 0/3 run (0%) after 0 s, basic seed 1", "gate: 1/3 run (33%) after 0 s, basic seed 1",
        "gate: 3/3 run (100%) after 0 s, basic seed 1"]


def test_quiet_within_the_interval_and_when_disabled():
    out = io.StringIO()
    bar = progress_bar(total=3, desc="sweep", unit="run", stream=out)  # 5 s: a short job prints nothing
    bar.update(3)
    off = progress_bar(total=3, desc="sweep", stream=out, enabled=False, every_s=0.0)
    off.update(3)
    assert out.getvalue() == ""


def test_no_other_module_sets_up_tqdm():
    for folder in ("scenarios", "sim", "reports", "store"):
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                path = os.path.join(dirpath, name)
                if name.endswith(".py") and path != os.path.join(ROOT, "scenarios", "progress.py"):
                    with open(path, encoding="utf-8") as f:
                        assert not re.search(r"^\s*(from tqdm|import tqdm)", f.read(), re.M), path
