"""The log seam (``store/log.py``): levels, fault sites carried by exceptions, and the live default."""

from __future__ import annotations

import logging

from store.client.api import RemotingError
from store.client.errors import MQClientException
from store.log import DISK_DAMAGE, ERROR, INFO, WARN, StoreLog, as_log, fault_site_of


def recording():
    lines = []
    return lines, StoreLog("RocketmqStore",
                           lambda level, name, message, site, _caught: lines.append((level, name, message, site)))


def test_levels_names_and_the_plain_call_is_info():
    lines, log = recording()
    log("loaded")
    log.named("ScheduleMessageService").warn("flow control")
    log.error("should not happen", fault_site="commitlog.put")
    assert lines == [(INFO, "RocketmqStore", "loaded", None), (WARN, "ScheduleMessageService", "flow control", None),
                     (ERROR, "RocketmqStore", "should not happen", "commitlog.put")]


def test_the_fault_site_comes_from_the_exception_or_one_it_was_raised_from():
    refused = RemotingError("the broker is down", fault_site="process_crash")
    try:
        try:
            raise refused
        except RemotingError as error:
            raise MQClientException("Send [3] times, still failed") from error
    except MQClientException as wrapped:
        assert fault_site_of(wrapped) == "process_crash"
    lines, log = recording()
    log.error("sendMessageBack exception", refused)
    log.warn("no site", RemotingError("timeout"))
    assert [site for *_, site in lines] == ["process_crash", None]


def test_a_plain_callable_gets_every_line_and_the_default_writes_to_stdlib_logging(caplog):
    got = []
    log = as_log(got.append)
    log("a")
    log.error("b")
    assert got == ["a", "b"] and as_log(log) is log
    with caplog.at_level(logging.INFO):
        live = as_log(None, "RocketmqBroker")
        live.warn("getConsumerGroupInfo failed, G")
        live.error("schedule CQ offset invalid", fault_site=DISK_DAMAGE)
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("RocketmqBroker", "WARNING", "getConsumerGroupInfo failed, G"),
        ("RocketmqBroker", "ERROR", "schedule CQ offset invalid")]
