"""PullRequest: "pull queue ``message_queue`` from ``next_offset`` into ``process_queue``".

One lives per owned queue and travels in a loop: pull service -> broker -> pull callback -> pull
service, until its ProcessQueue is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from .api import MessageQueue
from .process_queue import ProcessQueue


@dataclass(eq=False, slots=True)
class PullRequest:
    consumer_group: str
    message_queue: MessageQueue
    process_queue: ProcessQueue
    next_offset: int
    previously_locked: bool = False
