"""The one Long.parseLong / Integer.parseInt of the store (issue 16), as Java's Character.digit reads digits."""

import pytest

from store.java_numbers import java_parse_int, java_parse_long


def test_sign_digits_and_range_as_java():
    assert java_parse_long("+42") == 42 and java_parse_long("-0") == 0
    assert java_parse_long("\u0661\u0662") == 12  # Arabic-Indic digits: Character.digit accepts Nd
    assert java_parse_long(str((1 << 63) - 1)) == (1 << 63) - 1
    assert java_parse_int(str(-(1 << 31))) == -(1 << 31)
    for bad in ("", "+", "-", " 1", "1 ", "1_000", "0x10", "1.0", str(1 << 63)):
        with pytest.raises(ValueError):
            java_parse_long(bad)
    with pytest.raises(ValueError):
        java_parse_int(str(1 << 31))
    with pytest.raises(ValueError):
        java_parse_long(None)


def test_the_store_has_one_implementation():
    import store.delay_level
    import store.hook_utils
    import store.timer.timer_message_store as tms

    assert store.delay_level.java_parse_long is java_parse_long is store.hook_utils.java_parse_long
    assert tms.java_parse_long is java_parse_long and tms.java_parse_int is java_parse_int
