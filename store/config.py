"""Broker and store settings, with RocketMQ's defaults (ROCKETMQ.md 1.7, 3.4, 7.2, 9).

Frozen value objects: a run's configuration never changes under it. Simulations pass smaller
file sizes so that rolling, truncation and recovery across files actually happen.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

ERA_5 = "5.3.3"
ERA_4 = "4.9.8"
ERAS = (ERA_5, ERA_4)

DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
ASYNC_FLUSH = "ASYNC_FLUSH"
SYNC_FLUSH = "SYNC_FLUSH"


@dataclass(frozen=True, slots=True)
class MessageStoreConfig:
    era: str = ERA_5
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300_000 * 20
    flush_disk_type: str = ASYNC_FLUSH
    flush_interval_commit_log_ms: int = 500
    flush_commit_log_least_pages: int = 4
    flush_commit_log_thorough_interval_ms: int = 10_000
    flush_interval_consume_queue_ms: int = 1000
    flush_consume_queue_least_pages: int = 2
    flush_consume_queue_thorough_interval_ms: int = 60_000
    max_message_size: int = 4 * 1024 * 1024
    check_crc_on_recover: bool = True
    auto_message_version_on_topic_len: bool = True
    access_message_in_memory_max_ratio: int = 40
    total_physical_memory_bytes: int = 24 * 1024 * 1024 * 1024
    reput_interval_ms: int = 1

    @property
    def consume_queue_file_size(self) -> int:
        """getMappedFileSizeConsumeQueue: the configured size rounded up to whole 20-byte units (4096 -> 4100)."""
        return -(-self.mapped_file_size_consume_queue // 20) * 20
    # Delay levels (ScheduleMessageService).
    message_delay_level: str = DEFAULT_DELAY_LEVELS
    flush_delay_offset_interval_ms: int = 10_000
    flush_delay_offset_first_delay_ms: int = 10_000  # hard-coded 10000 in Java; a seam for harnesses only
    enable_schedule_async_deliver: bool = False
    schedule_async_deliver_max_pending_limit: int = 2000
    schedule_async_deliver_max_resend_num_2_blocked: int = 3
    # Timer wheel (TimerMessageStore).
    timer_wheel_enable: bool = True
    timer_precision_ms: int = 1000
    timer_roll_window_slot: int = 3600 * 24 * 2
    timer_max_delay_sec: int = 3600 * 24 * 3
    timer_flush_interval_ms: int = 1000
    mapped_file_size_timer_log: int = 100 * 1024 * 1024
    timer_slots_total: int = 7 * 86400
    timer_skip_unknown_error: bool = False
    timer_enable_retry_until_success: bool = False
    timer_put_message_thread_num: int = 3
    timer_congest_num_each_slot: int = 2**31 - 1

    def with_(self, **changes) -> MessageStoreConfig:
        return dataclasses.replace(self, **changes)

    @property
    def is_era_4(self) -> bool:
        return self.era.startswith("4.")


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = "broker-a"
    broker_ip: str = "127.0.0.1"
    listen_port: int = 10911
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    default_topic_queue_nums: int = 8
    flush_consumer_offset_interval_ms: int = 5000
    flush_consumer_offset_first_delay_ms: int = 10_000

    def with_(self, **changes) -> BrokerConfig:
        return dataclasses.replace(self, **changes)
