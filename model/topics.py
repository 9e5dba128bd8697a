"""The topic vocabulary the model and the invariants read in histories; equal to store/topics.py (tested).

A copy, because model must not import store (tests/model/test_topics.py checks they agree)."""

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
TIMER_TOPIC = "rmq_sys_wheel_timer"
RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
