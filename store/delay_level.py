"""The delay-level table: ``messageDelayLevel`` parsed as ScheduleMessageService.parseDelayLevel does."""

from __future__ import annotations

_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class DelayLevelError(ValueError):
    """The level string cannot be parsed (RocketMQ refuses to load the schedule service)."""


def parse_delay_level(text: str) -> dict[int, int]:
    """``"1s 5s 10s ..."`` -> {1: 1000, 2: 5000, 3: 10000, ...}: level = position (1-based)."""
    table: dict[int, int] = {}
    for i, token in enumerate(text.split(" ")):
        unit = token[-1:]
        if unit not in _UNIT_MS or not (token[:-1].isascii() and token[:-1].isdigit()) or len(token) > 30:
            raise DelayLevelError(
                f"delay level {i + 1} is {token!r} in {text!r}: expected a whole number followed by s, m, h or d"
            )
        table[i + 1] = int(token[:-1]) * _UNIT_MS[unit]
    return table
