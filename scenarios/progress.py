"""The one progress display of the user commands (run, replay, shrink, gate, mutants, sweep).

On a terminal, a tqdm bar on stderr. Otherwise (CI logs, pipes) a plain line every few seconds, so a long
job still shows it is alive; runs shorter than that print nothing. Wall-clock time only paces the output,
never a history."""

from __future__ import annotations

import sys
import threading
import time

LINE_EVERY_S = 5.0


def progress_bar(total=None, desc: str = "", unit: str = "it", enabled: bool = True, stream=None,
                 every_s: float = LINE_EVERY_S):
    """A tqdm bar on a terminal, periodic lines elsewhere, nothing when ``enabled`` is false."""
    stream = sys.stderr if stream is None else stream
    if enabled and stream.isatty():
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit=unit, leave=False, file=stream)
    bar = _TqdmSurface(Progress(desc, total, unit, stream, every_s))
    if not enabled:
        bar.close()
    return bar


class _TqdmSurface:
    """tqdm's small surface used by callers of ``progress_bar`` (n, total, update, refresh, set_postfix_str,
    close), printed as ``Progress``'s plain lines."""

    def __init__(self, lines: Progress):
        self._lines, self.n, self.total, self._postfix = lines, 0, lines.total, ""

    def update(self, k: int = 1) -> None:
        self.n += k
        self.refresh()

    def set_postfix_str(self, text: str) -> None:
        self._postfix = text
        self.refresh()

    def refresh(self) -> None:
        self._lines.update(self.n, self.total, self._postfix)

    def close(self) -> None:
        self._lines.close()


class Progress:
    """An ``update(done, total=None, note="")``/``close()`` reporter: a tqdm bar on a terminal, else a line every
    ``every_s``; with ``ticker`` a background thread keeps printing through long stages without an update."""

    def __init__(self, label: str, total: int | None, unit: str, stream=None, every_s: float = LINE_EVERY_S,
                 clock=time.monotonic, ticker: bool = False):
        self.label, self.total, self.unit = label, total, unit
        self.stream = stream if stream is not None else sys.stderr
        self.every_s, self.clock = every_s, clock
        self.done, self.note = 0, ""
        self.bar = None
        self.start = self.last = clock()  # wall-clock ok: progress output, never a history
        isatty = getattr(self.stream, "isatty", None)
        if isatty is not None and isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=label, unit=unit, leave=False, file=self.stream)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        if ticker and self.bar is None:  # a long stage with no update still shows it is alive
            threading.Thread(target=self._tick, name=f"progress-{label}", daemon=True).start()

    def _tick(self) -> None:
        while not self._stop.wait(self.every_s):
            self._maybe_line()

    def update(self, done: int, total: int | None = None, note: str = "") -> None:
        self.done, self.note = done, note
        if total is not None:
            self.total = total
        if self.bar is not None:
            self.bar.total = self.total
            self.bar.n = done
            if note:
                self.bar.set_postfix_str(note[:60])
            self.bar.refresh()
            return
        self._maybe_line()

    def _maybe_line(self) -> None:
        with self._lock:
            now = self.clock()  # wall-clock ok
            if now - self.last >= self.every_s and not self._stop.is_set():
                self.last = now
                try:
                    self.stream.write(self.line(now) + "\n")
                    self.stream.flush()
                except (OSError, ValueError):  # the stream went away (closed by a test harness or a pipe)
                    self._stop.set()

    def line(self, now: float) -> str:
        of = f"/{self.total}" if self.total else ""
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        note = f", {self.note}" if self.note else ""
        return f"{self.label}: {self.done}{of} {self.unit}{pct} after {now - self.start:.0f} s{note}"

    def close(self) -> None:
        self._stop.set()
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def progress(label: str, total: int | None = None, unit: str = "it", stream=None, ticker: bool = False) -> Progress:
    """``ticker``: plain lines also come from a background thread, for stages that run long without an update
    (the caller must ``close()`` it); without it lines come only from updates."""
    return Progress(label, total, unit, stream, ticker=ticker)


def shrink_progress():
    """``update(runs, max_runs, label)`` for the shrinker (run --shrink and the gate): its runs, closed at the last."""
    bar = progress("shrink", None, "run")

    def update(runs: int, max_runs: int, label: str) -> None:
        bar.update(runs, max_runs, label)
        if runs >= max_runs:
            bar.close()

    return update
