"""The one progress display of the user commands (run, replay, shrink, gate, mutants, sweep).

On a terminal, a tqdm bar on stderr. Otherwise (CI logs, pipes) a plain line every few seconds, so a long
job still shows it is alive; runs shorter than that print nothing. Wall-clock time only paces the output,
never a history."""

from __future__ import annotations

import sys
import time

LINE_EVERY_S = 5.0


class _Lines:
    """tqdm's small surface used here (n, total, update, refresh, set_postfix_str, close) as periodic lines."""

    def __init__(self, total, desc: str, unit: str, stream, every_s: float):
        self.total, self.n, self.desc, self.unit = total, 0, desc, unit
        self._stream, self._every_s, self._postfix = stream, every_s, ""
        self._last = time.monotonic()  # wall-clock ok: paces output only
        self._closed = False

    def update(self, k: int = 1) -> None:
        self.n += k
        self.refresh()

    def set_postfix_str(self, text: str) -> None:
        self._postfix = text
        self.refresh()

    def refresh(self) -> None:
        now = time.monotonic()  # wall-clock ok
        if self._closed or now - self._last < self._every_s:
            return
        self._last = now
        of = f"/{self.total}" if self.total is not None else ""
        tail = f" ({self._postfix})" if self._postfix else ""
        print(f"{self.desc}: {self.n}{of} {self.unit}{tail}", file=self._stream, flush=True)

    def close(self) -> None:
        self._closed = True


def progress_bar(total=None, desc: str = "", unit: str = "it", enabled: bool = True, stream=None,
                 every_s: float = LINE_EVERY_S):
    """A tqdm bar on a terminal, periodic lines elsewhere, nothing when ``enabled`` is false."""
    stream = sys.stderr if stream is None else stream
    if enabled and stream.isatty():
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit=unit, leave=False, file=stream)
    bar = _Lines(total, desc, unit, stream, every_s)
    if not enabled:
        bar.close()
    return bar


def shrink_progress():
    """``update(runs, max_runs, label)`` for the shrinker: a bar of its runs, closed at the last one."""
    bar = progress_bar(desc="shrink", unit="run")

    def update(runs: int, max_runs: int, label: str) -> None:
        bar.total = max_runs
        bar.n = runs
        bar.set_postfix_str(label[:60])
        if runs >= max_runs:
            bar.close()

    return update
