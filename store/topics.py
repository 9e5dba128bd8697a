"""The topic and group vocabulary of RocketMQ (TopicValidator, MixAll, TimerMessageStore), once for the store.

Imports nothing, so every module of store/ and sim/ can take its names from here; model/topics.py keeps
model's own copy (model must not import store), and a test checks they are equal."""

RMQ_SYS_SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
TIMER_TOPIC = "rmq_sys_wheel_timer"
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
