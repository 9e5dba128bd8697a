"""A ScheduledExecutorService as a sans-IO service: callables due at monotonic times.

``step(mono_ms)`` runs the tasks that were due when it was called, in (due time, submission)
order; a task submitted for "now" while stepping runs at the next step, which the driver makes at
once because ``next_wakeup_ms`` is then not in the future. That keeps one step bounded even when
every answer comes back immediately (a zero-latency broker).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

Task = Callable[[int], None]  # called with the mono_ms of the step that runs it


class DelayedTaskService:
    def __init__(self, name: str) -> None:
        self.name = name
        self._heap: list[tuple[int, int, Task]] = []
        self._seq = 0

    def submit(self, due_mono_ms: int, task: Task) -> None:
        heapq.heappush(self._heap, (due_mono_ms, self._seq, task))
        self._seq += 1

    def next_wakeup_ms(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)

    def clear(self) -> None:
        self._heap.clear()

    def step(self, mono_ms: int) -> None:
        due: list[Task] = []  # taken out first: what these tasks submit waits for the next step
        while self._heap and self._heap[0][0] <= mono_ms:
            due.append(heapq.heappop(self._heap)[2])
        for task in due:
            task(mono_ms)
