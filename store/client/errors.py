"""The client's own failure: a request could not even be attempted, or every attempt failed."""

from __future__ import annotations


class MQClientException(Exception):
    """RocketMQ's MQClientException: bad state, bad argument, no route, unreadable local offsets."""
