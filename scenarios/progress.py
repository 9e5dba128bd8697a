"""Progress on stderr: a tqdm bar on a terminal, else one plain line every few seconds (CI logs).

Small on purpose: ``progress(label, total, unit)`` returns ``update(done, total=None, note="")`` and
``close()``; a shared progress helper can replace it without touching the callers' logic.
"""

from __future__ import annotations

import sys
import threading
import time

LINE_EVERY_S = 5.0


class Progress:
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
