"""The client's own failure: a request could not even be attempted, or every attempt failed."""

from __future__ import annotations


class MQClientException(Exception):
    """RocketMQ's MQClientException: bad state, bad argument, no route, unreadable local offsets."""


def _request_errors() -> tuple[type[Exception], ...]:
    from .api import MQBrokerException, RemotingError

    return (RemotingError, MQBrokerException, MQClientException)


# What a request to the broker can end with: no answer, an error answer, or the client's own refusal. The
# client catches these and only these; any other exception is a bug and propagates (Java's catch-all stays
# only around the user's consume listener).
REQUEST_ERRORS = _request_errors()
