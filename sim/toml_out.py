"""Writing a scenario document back as TOML (the sweeps write one file per cell, so that a failing
cell replays with a plain ``rmqsim run FILE --seed N``). ``tomllib`` reads; this is the inverse for
the shapes scenario files use: scalars, lists, inline tables in lists, tables, arrays of tables.
"""

from __future__ import annotations

import json
import math
import re

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _is_table_array(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def dumps(doc: dict) -> str:
    """TOML text for ``doc``; ``tomllib.loads(dumps(doc)) == doc`` for scenario-shaped documents."""
    lines: list[str] = []
    tables, arrays = [], []
    for key, value in doc.items():
        if isinstance(value, dict):
            tables.append((key, value))
        elif _is_table_array(value):
            arrays.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, table in tables:
        lines += ["", f"[{_key(key)}]"]
        for k, v in table.items():
            lines.append(f"{_key(k)} = {_value(v)}")
    for key, entries in arrays:
        for entry in entries:
            lines += ["", f"[[{_key(key)}]]"]
            for k, v in entry.items():
                lines.append(f"{_key(k)} = {_value(v)}")
    return "\n".join(lines) + "\n"
