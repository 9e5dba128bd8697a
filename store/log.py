"""The log seam: the store's, broker's and clients' log lines go through one injected logger.

Like the clock and the faults, the logger is given to every component; the store never picks one
itself. Live, the default forwards to the stdlib ``logging`` module (WARN and ERROR reach stderr
through its last-resort handler, INFO is dropped). Under simulation every WARN and ERROR becomes a
``log`` event in the history, with the injected fault site that caused it when one did.

Levels follow RocketMQ's ``log.warn`` / ``log.error`` for the same line. A plain ``log(text)`` call
is INFO, so components written against ``Callable[[str], None]`` keep working.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

INFO, WARN, ERROR = "INFO", "WARN", "ERROR"

# A line about files that disagree with each other (a torn record, a queue behind its offset, a broken
# chain): only lost or rolled-back data explains it. The harness that injected such a loss names it;
# with none injected the line stays unexplained. Live, the marker is simply dropped.
DISK_DAMAGE = "?disk-damage"

# (level, logger name, message, fault site or None, caught: an exception came with the line). A caught exception
# that carries no fault site was not caused by an injected fault as far as anyone can tell: a sink must not
# guess one for it.
LogSink = Callable[[str, str, str, "str | None", bool], None]

_STDLIB_LEVELS = {INFO: logging.INFO, WARN: logging.WARNING, ERROR: logging.ERROR}


def fault_site_of(error: BaseException | None) -> str | None:
    """The injected fault site an exception (or one it was raised from) carries, if any."""
    seen = 0
    while error is not None and seen < 16:
        site = getattr(error, "fault_site", None)
        if site:
            return site
        error = error.__cause__ or error.__context__
        seen += 1
    return None


def _stdlib_sink(level: str, name: str, message: str, fault_site: str | None, caught: bool) -> None:
    shown = message if fault_site in (None, DISK_DAMAGE) else f"{message} [fault {fault_site}]"
    logging.getLogger(name).log(_STDLIB_LEVELS[level], shown)


class StoreLog:
    """A named logger writing to ``sink``; ``named`` gives a sibling with another name and the same sink."""

    __slots__ = ("name", "sink")

    def __init__(self, name: str = "RocketmqStore", sink: LogSink | None = None) -> None:
        self.name = name
        self.sink = sink or _stdlib_sink

    def named(self, name: str) -> StoreLog:
        return StoreLog(name, self.sink)

    def __call__(self, message: str) -> None:
        self.info(message)

    def info(self, message: str) -> None:
        self.sink(INFO, self.name, message, None, False)

    def warn(self, message: str, error: BaseException | None = None, fault_site: str | None = None) -> None:
        """``error``: the caught exception, whose fault site wins; ``fault_site``: the cause when it has none."""
        self.sink(WARN, self.name, message, fault_site_of(error) or fault_site, error is not None)

    def error(self, message: str, error: BaseException | None = None, fault_site: str | None = None) -> None:
        self.sink(ERROR, self.name, message, fault_site_of(error) or fault_site, error is not None)


def as_log(log: StoreLog | Callable[[str], None] | None, name: str = "RocketmqStore") -> StoreLog:
    """``log`` as a StoreLog: None gives the stdlib default, a plain callable gets every line's text."""
    if isinstance(log, StoreLog):
        return log
    if log is None:
        return StoreLog(name)
    return StoreLog(name, lambda _level, _name, message, _site, _caught: log(message))


NULL_LOG = StoreLog("null", lambda _level, _name, _message, _site, _caught: None)
