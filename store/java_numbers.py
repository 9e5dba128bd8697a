"""Java's ``Long.parseLong`` / ``Integer.parseInt``, once for the whole store (delay levels, timer properties).

Java reads digits with ``Character.digit``, so any Unicode decimal digit (Nd) counts, as ``str.isdecimal``."""

from __future__ import annotations

LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


def java_parse_long(text: str | None, bits: int = 64) -> int:
    """An optional sign and decimal digits, within a ``bits``-bit signed range; else ValueError (NumberFormatException)."""
    if text is None:
        raise ValueError("null")
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all(ch.isdecimal() for ch in digits):
        raise ValueError(f"For input string: {text!r}")
    value = int(text)
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise ValueError(f"For input string: {text!r} (out of range)")
    return value


def java_parse_int(text: str | None) -> int:
    return java_parse_long(text, 32)
