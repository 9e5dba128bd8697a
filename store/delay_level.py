"""The delay-level table: ``messageDelayLevel`` parsed as ScheduleMessageService.parseDelayLevel does."""

from __future__ import annotations

from .java_numbers import LONG_MIN as _LONG_MIN
from .java_numbers import java_parse_long

_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class DelayLevelError(ValueError):
    """The level string cannot be parsed (RocketMQ refuses to load the schedule service)."""


def java_split_space(text: str) -> list[str]:
    """``String.split(" ")``: trailing empty strings are dropped (a string without a space is one token)."""
    tokens = text.split(" ")
    while len(tokens) > 1 and tokens[-1] == "":
        tokens.pop()
    return [] if tokens == [""] and text else tokens


def _java_long_mul(a: int, b: int) -> int:
    """``tu * num`` in Java: a long product wraps around silently."""
    return (a * b - _LONG_MIN) % (1 << 64) + _LONG_MIN


def parse_delay_level(text: str, *, from_zero: bool = False) -> dict[int, int]:
    """``"1s 5s 10s ..."`` -> {1: 1000, 2: 5000, 3: 10000, ...}: level = position (1-based).

    As Java: tokens come from ``split(" ")`` (so a trailing space is harmless, two spaces in a row are an
    empty token and an error), the number is ``Long.parseLong`` of all but the last character (so ``+5s``
    is 5 s and ``-5s`` is -5 s), the unit is that last character."""
    table: dict[int, int] = {}
    for i, token in enumerate(java_split_space(text)):
        unit = token[-1:]
        try:
            if unit not in _UNIT_MS:
                raise ValueError(f"unit {unit!r}")
            table[i if from_zero else i + 1] = _java_long_mul(_UNIT_MS[unit], java_parse_long(token[:-1]))
        except ValueError:
            raise DelayLevelError(
                f"delay level {i + 1} is {token!r} in {text!r}: expected a whole number followed by s, m, h or d"
            ) from None
    if not table:
        # Java would start with no level at all (maxDelayLevel 0); a broker without delay levels is not modelled.
        raise DelayLevelError(f"no delay level in {text!r}")
    return table
