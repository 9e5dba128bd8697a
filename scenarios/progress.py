"""Progress on stderr: a tqdm bar on a terminal, else one plain line every few seconds (CI logs).

Small on purpose: ``progress(label, total, unit)`` returns ``update(done, total=None, note="")`` and
``close()``; a shared progress helper can replace it without touching the callers' logic.
"""

from __future__ import annotations

import sys
import time

LINE_EVERY_S = 5.0


class Progress:
    def __init__(self, label: str, total: int | None, unit: str, stream=None, every_s: float = LINE_EVERY_S,
                 clock=time.monotonic):
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
        now = self.clock()  # wall-clock ok
        if now - self.last >= self.every_s:
            self.last = now
            self.stream.write(self.line(now) + "\n")
            self.stream.flush()

    def line(self, now: float) -> str:
        of = f"/{self.total}" if self.total else ""
        pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        note = f", {self.note}" if self.note else ""
        return f"{self.label}: {self.done}{of} {self.unit}{pct} after {now - self.start:.0f} s{note}"

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def progress(label: str, total: int | None = None, unit: str = "it", stream=None) -> Progress:
    return Progress(label, total, unit, stream)
