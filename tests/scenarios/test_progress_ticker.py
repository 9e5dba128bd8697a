"""Progress where people look: a line every few seconds when stderr is not a terminal (CI logs)."""

import io

import pytest

from scenarios.progress import Progress


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_not_a_terminal_prints_a_line_every_few_seconds():
    stream, clock = io.StringIO(), FakeClock()
    bar = Progress("bench", 6, "step", stream=stream, every_s=5, clock=clock)
    bar.update(1, note="dense run: 10/60 virtual s")
    assert stream.getvalue() == ""  # nothing before the first interval
    clock.now = 5.5
    bar.update(2, note="raw SimPy")
    clock.now = 7.0
    bar.update(3)  # within the interval of the last line: silent
    clock.now = 11.0
    bar.update(4, 6, "store rates")
    bar.close()
    assert stream.getvalue().splitlines() == [
        "bench: 2/6 step (33%) after 6 s, raw SimPy",
        "bench: 4/6 step (67%) after 11 s, store rates",
    ]


def test_unknown_total_still_counts():
    stream, clock = io.StringIO(), FakeClock()
    bar = Progress("shrink", None, "run", stream=stream, every_s=1, clock=clock)
    clock.now = 2
    bar.update(7, None, "drop fault crash")
    assert stream.getvalue() == "shrink: 7 run after 2 s, drop fault crash\n"


@pytest.mark.slow  # runs the bench's stages (seconds); the ticker's own tests above stay in the default tier
def test_bench_reports_each_stage():
    from scenarios.catalogue import load_builtin
    from sim.bench import SPARSE_SCENARIO, STAGES, measure

    seen = []

    class Recorder:
        def update(self, done, total=None, note=""):
            seen.append((done, total, note))

    numbers = measure(200, load_builtin(SPARSE_SCENARIO), Recorder())
    assert numbers["messages"] == 200
    # the simulation is a part of the run (checking, hashing and stats are the rest)
    assert 0 < numbers["simulation_wall_s"] < numbers["wall_s"]
    assert numbers["ceiling_ratio_simulation_only"] >= numbers["ceiling_ratio"]
    dones = [d for d, _, _ in seen]
    assert dones == sorted(dones) and dones[-1] == STAGES + 1
    notes = [n for _, _, n in seen]
    assert any(n.startswith("dense run of 200 messages") for n in notes)
    assert any("store puts" in n for n in notes) and any(n.startswith("sparse run") for n in notes)


def test_the_ticker_prints_while_nothing_updates():
    import time

    stream = io.StringIO()
    bar = Progress("bench", 6, "step", stream=stream, every_s=0.05, ticker=True)
    bar.update(2, note="raw SimPy")
    time.sleep(0.3)  # a long stage: no update, yet lines come
    bar.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 2 and all(line.startswith("bench: 2/6 step (33%)") for line in lines)
    count = len(stream.getvalue())
    time.sleep(0.15)
    assert len(stream.getvalue()) == count  # closed: silent


def test_a_closed_stream_stops_the_ticker_quietly():
    import time

    stream = io.StringIO()
    bar = Progress("run", 100, "%", stream=stream, every_s=0.02, ticker=True)
    bar.update(5)
    stream.close()
    time.sleep(0.1)
    assert bar._stop.is_set()
