"""The fault seam: named sites in the store ask one injected object what to do.

The default, ``NO_FAULTS``, never answers anything, so the production path pays one method
call per site and nothing else. A crash is an exception (``BrokerCrash``) that unwinds the
broker; the harness catches it, throws the in-memory state away and restarts from disk.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

E = TypeVar("E", bound=BaseException)

# Actions a site may be told to take.
FAIL = "fail"  # the operation reports failure (put error, send-back error, ...)
CRASH = "crash"  # the broker process dies right here (BrokerCrash is raised)

# The named sites (stable names; the history and the scenarios use them).
SITE_PUT = "commitlog.put"  # before a message is appended to the commit log
SITE_SCHEDULE_DELIVER = "schedule.deliver_put"  # the put of a due delayed message into its real topic
SITE_SCHEDULE_REBUILD = "schedule.rebuild"  # messageTimeup: rebuilding a due message throws (a corrupt read)
SITE_TIMER_DEQUEUE_PUT = "timer.dequeue_put"  # the put of a due timer message
SITE_TIMER_LOG_APPEND = "timer.log_append"  # a timer-log append (FAIL: it fails; the enqueue batch is redone)
SITE_SEND_BACK = "broker.send_back"  # the broker's consumerSendMsgBack
SITE_PERSIST_PREFIX = "persist."  # + config file name, e.g. "persist.delayOffset.json"
SITE_FLUSH_COMMITLOG = "flush.commitlog"
SITE_FLUSH_CQ = "flush.consumequeue"


class BrokerCrash(BaseException):
    """The broker process died at a fault site; everything in memory is gone.

    A ``BaseException``, like ``SystemExit``: no ``except Exception`` in the store can swallow it,
    so it always unwinds to the harness that plays the process dying."""

    def __init__(self, site: str) -> None:
        super().__init__(f"broker crashed at {site}")
        self.site = site
        self.fault_site = site


def injected(error: E, site: str) -> E:
    """``error`` marked as caused by the injected fault at ``site`` (its log line will say so)."""
    error.fault_site = site
    return error


class FaultInjector(Protocol):
    def at(self, site: str, detail: str = "") -> str | None:
        """What should happen at ``site`` now: None (nothing), FAIL or CRASH."""
        ...


class NoFaults:
    """Injects nothing: the production default."""

    def at(self, site: str, detail: str = "") -> str | None:
        return None


NO_FAULTS = NoFaults()


def check_crash(faults: FaultInjector, site: str, detail: str = "") -> bool:
    """Ask ``site``; raise ``BrokerCrash`` on CRASH, return True on FAIL, False otherwise."""
    action = faults.at(site, detail)
    if action is None:
        return False
    if action == CRASH:
        raise BrokerCrash(site)
    return action == FAIL
