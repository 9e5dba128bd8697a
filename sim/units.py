"""Durations (``ms s m h d``) and rates (``N/s``, ``N/m``, ``N/h``) as the scenario files write them."""

from __future__ import annotations

import re
from fractions import Fraction

_DURATION = re.compile(r"^\s*(-?)((?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+)\s*$")
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(ms|s|m|h|d)\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
INT64_MAX = (1 << 63) - 1  # a Java long: RocketMQ keeps every time and delay in milliseconds as one


def parse_duration_ms(text: str) -> int:
    """``"90s"`` -> 90000; ``"2h5m"`` -> 7500000; ``"-5m"`` -> -300000 (negative where a key allows it).

    Exact (no float rounding of long numbers); more than a Java long of milliseconds is an error."""
    match = _DURATION.match(text) if isinstance(text, str) and len(text) <= 200 else None
    if match is None:
        raise ValueError(f"{text!r} is not a duration like '500ms', '10s', '5m', '2h5m' or '1d'")
    ms = Fraction(0)
    for n, unit in _PART.findall(match.group(2)):
        if len(n) > 40:
            raise ValueError(f"{text!r} is longer than a Java long of milliseconds")
        ms += Fraction(n) * _UNIT_MS[unit]
    whole = round(ms)
    if whole > INT64_MAX:
        raise ValueError(f"{text!r} is longer than a Java long of milliseconds")
    return -whole if match.group(1) else whole


def parse_rate_per_s(text: str) -> float:
    """``"10/s"`` -> 10.0; ``"30/m"`` -> 0.5."""
    match = _RATE.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{text!r} is not a rate like '10/s' or '30/m'")
    return float(match.group(1)) * 1000 / _UNIT_MS[match.group(2)]


def format_duration_ms(ms: int) -> str:
    for unit in ("d", "h", "m", "s"):
        if ms and ms % _UNIT_MS[unit] == 0:
            return f"{ms // _UNIT_MS[unit]}{unit}"
    return f"{ms}ms"
