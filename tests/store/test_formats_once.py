"""store/inspect.py decodes with the structs its format modules declare, so a layout change reaches both."""

import store.inspect as inspect_
from store.consume_queue import CQ_STORE_UNIT_SIZE, CQ_UNIT
from store.timer.timer_log import BLANK_MAGIC_CODE, UNIT_SIZE, UNIT_STRUCT
from store.timer.timer_wheel import SLOT_STRUCT


def test_inspect_takes_the_structs_of_the_format_modules():
    assert inspect_._CQ_UNIT is CQ_UNIT and inspect_.CQ_UNIT_SIZE == CQ_STORE_UNIT_SIZE
    assert inspect_._TIMER_UNIT is UNIT_STRUCT and inspect_._TIMER_UNIT_SIZE == UNIT_SIZE
    assert inspect_._TIMER_SLOT is SLOT_STRUCT and inspect_._TIMER_BLANK_MAGIC == BLANK_MAGIC_CODE
