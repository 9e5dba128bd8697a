"""JSON as fastjson 1.2.x writes it for RocketMQ's config files (ROCKETMQ.md 6.4).

RocketMQ's files are not strict JSON: ``Map<Integer,…>`` keys are bare numbers
(``{0:12}``) and ``Map<MessageQueue,…>`` keys are whole objects. This module writes that
dialect byte for byte (so a simulated store directory can be read by a real broker and the
other way round) and reads it back.

Python shapes: a bean or a ``Map<String,…>`` is a ``dict`` with ``str`` keys, in the order
the caller wants written (the writer never sorts: bean properties come alphabetical from
the caller, maps in their own order); a ``Map<Integer,…>`` has ``int`` keys; an object key
is a tuple of ``(name, value)`` pairs, e.g.
``(("brokerName", "b"), ("queueId", 0), ("topic", "t"))``. Lists are written on one line,
as fastjson writes the ``Set``s these files hold. ``None`` inside a dict is left out, as
fastjson leaves out null properties; ``None`` in a list is ``null``.
"""

from __future__ import annotations

import math
import re

__all__ = ["FastjsonError", "dumps", "loads"]


class FastjsonError(ValueError):
    """Unparseable input: says what went wrong and where (offset, line and column)."""

    def __init__(self, reason: str, text: str, offset: int) -> None:
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        super().__init__(f"{reason} at offset {offset} (line {line}, column {column})")
        self.reason = reason
        self.offset = offset
        self.line = line
        self.column = column


# --- writing ---------------------------------------------------------------------------------------------

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')  # exactly the characters the loop below escapes


def _quote(text: str) -> str:
    if _NEEDS_ESCAPE.search(text) is None:
        return '"' + text + '"'
    parts = []
    for ch in text:
        escaped = _ESCAPES.get(ch)
        if escaped is not None:
            parts.append(escaped)
        elif ch < " ":
            parts.append(f"\\u{ord(ch):04x}")
        else:
            parts.append(ch)
    return '"' + "".join(parts) + '"'


def _is_object_key(key: object) -> bool:
    return isinstance(key, tuple) and all(
        isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str) for pair in key
    )


class _Writer:
    """fastjson's SerializeWriter: an indent counter and println() = newline + that many tabs."""

    __slots__ = ("out", "pretty", "indent")

    def __init__(self, pretty: bool) -> None:
        self.out: list[str] = []
        self.pretty = pretty
        self.indent = 0

    def println(self) -> None:
        self.out.append("\n" + "\t" * self.indent)

    def value(self, value: object) -> None:
        if type(value) is int:  # the offset tables' values: the common case first
            self.out.append(str(value))
        elif value is None:
            self.out.append("null")
        elif value is True:
            self.out.append("true")
        elif value is False:
            self.out.append("false")
        elif isinstance(value, int):
            self.out.append(str(value))
        elif isinstance(value, float):
            # fastjson writes NaN and the infinities as null.
            self.out.append(repr(value) if math.isfinite(value) else "null")
        elif isinstance(value, str):
            self.out.append(_quote(value))
        elif isinstance(value, dict):
            # fastjson leaves out null-valued properties and map entries (no WriteMapNullValue).
            items = [(k, v) for k, v in value.items() if v is not None]
            self.mapping(items, len(items))
        elif isinstance(value, (list, tuple)):
            # Sets and lists on one line (fastjson's CollectionCodec has no pretty branch).
            self.out.append("[")
            for i, item in enumerate(value):
                if i:
                    self.out.append(",")
                self.value(item)
            self.out.append("]")
        else:
            raise TypeError(f"fastjson.dumps cannot write {type(value).__name__}: {value!r}")

    def mapping(self, items, size: int) -> None:
        if size == 0:
            self.out.append("{}")
            return
        self.out.append("{")
        self.indent += 1
        first = True
        for key, item in items:
            if not first:
                self.out.append(",")
            first = False
            if isinstance(key, str):
                # A bean property or String key: on its own line when pretty.
                if self.pretty:
                    self.println()
                self.out.append(_quote(key))
            elif isinstance(key, int) and not isinstance(key, bool):
                if type(item) is int:  # Map<Integer,Long> (an offset table): "key:value" in one piece
                    self.out.append(f"{key}:{item}")
                    continue
                self.out.append(str(key))  # Map<Integer,…>: a bare number on the same line
            elif _is_object_key(key):
                self.mapping(key, len(key))  # a bean as key, spread over lines when pretty
            else:
                raise TypeError(f"fastjson.dumps cannot write the map key {key!r}")
            self.out.append(":")
            self.value(item)
        self.indent -= 1
        if self.pretty:
            self.println()
        self.out.append("}")


def dumps(obj: object, pretty: bool = True) -> str:
    """``obj`` as ``JSON.toJSONString(obj, pretty)`` writes it (no trailing newline)."""
    writer = _Writer(pretty)
    writer.value(obj)
    return "".join(writer.out)


# --- reading ---------------------------------------------------------------------------------------------

_WHITESPACE = " \t\n\r\f\b"
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_DIGITS = "0123456789"


def _freeze(value: object) -> object:
    """Make a parsed object usable inside a dict key (an object key holding nested values)."""
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


class _Parser:
    __slots__ = ("text", "pos")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, reason: str, pos: int | None = None) -> FastjsonError:
        return FastjsonError(reason, self.text, self.pos if pos is None else pos)

    def skip_ws(self) -> None:
        text, pos, end = self.text, self.pos, len(self.text)
        while pos < end and text[pos] in _WHITESPACE:
            pos += 1
        self.pos = pos

    def peek(self, what: str) -> str:
        self.skip_ws()
        if self.pos >= len(self.text):
            raise self.fail(f"unexpected end of input, expected {what}")
        return self.text[self.pos]

    def value(self) -> object:
        ch = self.peek("a value")
        if ch == "{":
            return self.obj()
        if ch == "[":
            return self.array()
        if ch == '"':
            return self.string()
        if ch == "-" or ch in _DIGITS:
            return self.number()
        for word, result in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return result
        raise self.fail(f"unexpected character {ch!r}, expected a value")

    def obj(self) -> dict:
        self.pos += 1  # '{'
        result: dict = {}
        if self.peek("a key or '}'") == "}":
            self.pos += 1
            return result
        while True:
            ch = self.peek("a key")
            if ch == '"':
                key: object = self.string()
            elif ch == "-" or ch in _DIGITS:
                key = self.number()
            elif ch == "{":
                key = _freeze(self.obj())  # an object key (MessageQueue)
            else:
                raise self.fail(f"unexpected character {ch!r}, expected a key")
            if self.peek("':'") != ":":
                raise self.fail(f"expected ':' after the key, found {self.text[self.pos]!r}")
            self.pos += 1
            result[key] = self.value()
            ch = self.peek("',' or '}'")
            self.pos += 1
            if ch == "}":
                return result
            if ch != ",":
                raise self.fail(f"expected ',' or '}}' in an object, found {ch!r}", self.pos - 1)

    def array(self) -> list:
        self.pos += 1  # '['
        result: list = []
        if self.peek("a value or ']'") == "]":
            self.pos += 1
            return result
        while True:
            result.append(self.value())
            ch = self.peek("',' or ']'")
            self.pos += 1
            if ch == "]":
                return result
            if ch != ",":
                raise self.fail(f"expected ',' or ']' in an array, found {ch!r}", self.pos - 1)

    def string(self) -> str:
        text, start = self.text, self.pos
        pos = start + 1
        parts: list[str] = []
        run = pos
        end = len(text)
        while True:
            if pos >= end:
                raise self.fail("unterminated string", start)
            ch = text[pos]
            if ch == '"':
                parts.append(text[run:pos])
                self.pos = pos + 1
                return "".join(parts)
            if ch == "\\":
                parts.append(text[run:pos])
                if pos + 1 >= end:
                    raise self.fail("unterminated string", start)
                esc = text[pos + 1]
                simple = _SIMPLE_ESCAPES.get(esc)
                if simple is not None:
                    parts.append(simple)
                    pos += 2
                elif esc == "u":
                    code = self.hex4(pos + 2)
                    pos += 6
                    if 0xD800 <= code < 0xDC00 and text.startswith("\\u", pos):
                        low = self.hex4(pos + 2)
                        if 0xDC00 <= low < 0xE000:
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                            pos += 6
                    parts.append(chr(code))
                else:
                    raise self.fail(f"invalid escape '\\{esc}' in a string", pos)
                run = pos
            elif ch < " ":
                raise self.fail(f"control character U+{ord(ch):04X} in a string", pos)
            else:
                pos += 1

    def hex4(self, pos: int) -> int:
        digits = self.text[pos : pos + 4]
        if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise self.fail("invalid \\u escape in a string", pos - 2)
        return int(digits, 16)

    def number(self) -> int | float:
        text, start = self.text, self.pos
        pos = start
        if text[pos] == "-":
            pos += 1
        digits_start = pos
        while pos < len(text) and text[pos] in _DIGITS:
            pos += 1
        if pos == digits_start:
            raise self.fail("a digit must follow '-'", pos)
        if pos - digits_start > 1 and text[digits_start] == "0":
            raise self.fail("a number must not start with 0", digits_start)
        is_float = False
        if pos < len(text) and text[pos] == ".":
            is_float = True
            pos += 1
            frac_start = pos
            while pos < len(text) and text[pos] in _DIGITS:
                pos += 1
            if pos == frac_start:
                raise self.fail("a digit must follow '.'", pos)
        if pos < len(text) and text[pos] in "eE":
            is_float = True
            pos += 1
            if pos < len(text) and text[pos] in "+-":
                pos += 1
            exp_start = pos
            while pos < len(text) and text[pos] in _DIGITS:
                pos += 1
            if pos == exp_start:
                raise self.fail("a digit must follow the exponent", pos)
        self.pos = pos
        literal = text[start:pos]
        if is_float:
            return float(literal)
        try:
            return int(literal)
        except ValueError:  # over sys.get_int_max_str_digits (4300 by default): no config holds such a number
            raise self.fail(f"an integer of {pos - digits_start} digits is too long", start) from None


def loads(text: str) -> object:
    """Parse fastjson's output (bare integer keys, object keys) or standard JSON.

    Integer keys stay ``int``; object keys become tuples of ``(key, value)`` pairs in the order
    read. Raises ``FastjsonError`` naming the position of the first problem."""
    if not isinstance(text, str):
        raise TypeError(f"fastjson.loads takes str, not {type(text).__name__}")
    parser = _Parser(text)
    parser.skip_ws()
    if parser.pos == len(text):
        raise parser.fail("empty input, expected a value")
    try:
        result = parser.value()
    except RecursionError:
        raise parser.fail("nesting too deep") from None
    parser.skip_ws()
    if parser.pos != len(text):
        raise parser.fail(f"unexpected {text[parser.pos]!r} after the value")
    return result
