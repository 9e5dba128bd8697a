"""model/topics.py is model's copy of store/topics.py (model must not import store): they must agree."""

import model.topics as m
import store.topics as s


def test_the_model_vocabulary_equals_the_store():
    assert (m.SCHEDULE_TOPIC, m.TIMER_TOPIC, m.RETRY_PREFIX, m.DLQ_PREFIX) == (
        s.RMQ_SYS_SCHEDULE_TOPIC, s.TIMER_TOPIC, s.RETRY_GROUP_TOPIC_PREFIX, s.DLQ_GROUP_TOPIC_PREFIX)
