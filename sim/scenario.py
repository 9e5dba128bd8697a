"""The scenario value: frozen specs and the validator of a plain dict, whose errors name file, key and want.

The TOML loader lives in scenarios/scenario.py (sim must not import scenarios). The validator takes a plain dict, so sweeps can apply overrides (``broker.era = "4.9.8"``,
``consumer.fail_probability = 0.2``) to the raw document before it is checked.

Every key changes the history of some run (tests/scenarios/test_every_key_has_an_effect.py), except
``name`` and ``description`` (they name the run) and ``consumer.consume_from_where``: a simulated
group always starts while its queues' first messages are in page cache, where RocketMQ starts a group without
an offset at the first message whatever the setting (ConsumerManageProcessor.queryConsumerOffset).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
from dataclasses import dataclass, field

from sim.units import format_duration_ms, parse_duration_ms, parse_rate_per_s
from store.validators import check_group, check_topic, check_user_topic

MAX_PHASE_MS = 3 * 86_400_000  # duration and drain: 3 days (timerMaxDelaySec); an idle virtual day costs ~30 wall s
MAX_DELAY_MS = 3650 * 86_400_000  # any other time (delays, clock steps, intervals): 10 years keeps broker_ms a long
MAX_RATE_PER_S = 1_000_000  # one send per microsecond: already far past what a virtual millisecond can tell apart
MAX_COMMIT_LOG_FILE_SIZE = 1 << 30  # RocketMQ's default; the in-memory disk holds only what was written
# The scenario format's version, the default of the ``version`` key. Version 1 files keep version 1's message bodies
# (sim/workload.py: ``body_size`` was a bound, not the size), so a reproduction written then replays the same history.
SCENARIO_VERSION = 2


class ScenarioError(ValueError):
    """A scenario file is wrong; the message names the file, the key and what was expected."""


# --- the specs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerSpec:
    era: str = "5.3.3"
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    flush_delay_offset_interval_ms: int = 10_000
    flush_consumer_offset_interval_ms: int = 5000
    auto_create_subscription_group: bool = True
    timer_precision_ms: int = 1000
    timer_roll_window_slot: int = 172_800
    timer_enable_retry_until_success: bool = False
    timer_skip_unknown_error: bool = False
    flush_disk_type: str = "ASYNC_FLUSH"
    enable_schedule_async_deliver: bool = False
    retry_queue_nums: int | None = None  # set: the scenario's groups are created with it; None: auto-created (1)
    commit_log_file_size: int = 1024 * 1024  # small files so that rolling happens in simulations
    consume_queue_units_per_file: int = 1000


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    queues: int = 4


@dataclass(frozen=True, slots=True)
class ProducerSpec:
    topic: str
    messages: int = 1
    rate_per_s: float = 10.0
    delay_levels: tuple[int, ...] = ()  # empty: no delay
    delay_weights: tuple[float, ...] = ()
    timer_delay_ms: int | None = None
    tags: str | None = None
    body_size: int = 64
    start_ms: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    group: str
    topic: str
    model: str = "CLUSTERING"
    instances: int = 1
    max_reconsume_times: int = 16
    fail_probability: float = 0.0
    fail_first: int = 0
    consume_time_ms: int = 1
    subscription: str = "*"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"


@dataclass(frozen=True, slots=True)
class ClockStep:
    at_ms: int
    by_ms: int


@dataclass(frozen=True, slots=True)
class FaultSpec:
    put_failure_rate: float = 0.0
    process_crashes: int = 0
    power_failures: int = 0
    graceful_restarts: int = 0
    consumer_crashes: int = 0
    crash_before_offset_flush: int = 0
    crash_before_delay_offset_flush: int = 0
    cq_truncations: int = 0
    send_back_failure_rate: float = 0.0
    schedule_rebuild_failure_rate: float = 0.0
    cq_truncation_topic: str | None = None  # None: any non-empty queue
    store_rollbacks: int = 0
    rollback_age_ms: int = 20_000
    start_ms: int | None = None  # timed faults happen in [start, 90% of duration]; default 10% of duration
    clock_steps: tuple[ClockStep, ...] = ()
    restart_after_ms: int = 2000

    @property
    def any(self) -> bool:
        return self != FaultSpec()


@dataclass(frozen=True, slots=True)
class NetworkSpec:
    latency_ms: int = 1


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str = ""
    version: int = SCENARIO_VERSION
    seed: int = 1
    duration_ms: int = 60_000
    drain_ms: int = 60_000
    broker: BrokerSpec = field(default_factory=BrokerSpec)
    topics: tuple[TopicSpec, ...] = ()
    producers: tuple[ProducerSpec, ...] = ()
    consumers: tuple[ConsumerSpec, ...] = ()
    faults: FaultSpec = field(default_factory=FaultSpec)
    network: NetworkSpec = field(default_factory=NetworkSpec)
    source: str = ""
    doc: dict | None = field(default=None, compare=False, repr=False)  # the validated raw document (replay)
    notes: tuple[str, ...] = field(default=(), compare=False, repr=False)  # one-line warnings of the loader


# --- validation ----------------------------------------------------------------------------------


def _int(low=None, high=None):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError("an integer")
        if (low is not None and v < low) or (high is not None and v > high):
            raise ValueError(f"an integer in [{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]")
        return v
    return check


def _float(low=0.0, high=1.0):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError("a number")
        if not low <= v <= high:
            raise ValueError(f"a number in [{low}, {high}]")
        return float(v)
    return check


def _str(choices=None):
    def check(v):
        if not isinstance(v, str):
            raise ValueError("a string")
        if choices is not None and v not in choices:
            raise ValueError("one of " + ", ".join(repr(c) for c in choices))
        return v
    return check


def _commit_log_file_size(v):
    try:
        return _int(4096, MAX_COMMIT_LOG_FILE_SIZE)(v)
    except ValueError as error:
        raise ValueError(f"{error} (1 GiB, RocketMQ's default and its largest mapped file)") from None


def _version(v):
    if isinstance(v, bool) or not isinstance(v, int) or v not in (1, SCENARIO_VERSION):
        raise ValueError(f"1 or {SCENARIO_VERSION} (the scenario format's versions; {SCENARIO_VERSION} when absent)")
    return v


def _bool(v):
    if not isinstance(v, bool):
        raise ValueError("true or false")
    return v


def _duration(allow_negative=False, allow_zero=True, max_ms=MAX_DELAY_MS):
    def check(v):
        try:
            ms = parse_duration_ms(v)
        except ValueError as error:
            if "Java long" in str(error):
                raise ValueError(f"a duration of at most {format_duration_ms(max_ms)}") from None
            raise ValueError("a duration like '500ms', '10s', '5m', '2h5m' or '1d'") from None
        if ms < 0 and not allow_negative:
            raise ValueError("a duration that is not negative")
        if ms == 0 and not allow_zero:
            raise ValueError("a duration greater than zero")
        if abs(ms) > max_ms:
            raise ValueError(f"a duration of at most {format_duration_ms(max_ms)}")
        return ms
    return check


def _rate(v):
    try:
        rate = parse_rate_per_s(v)
    except ValueError:
        raise ValueError("a rate like '10/s' or '30/m'") from None
    if rate <= 0:
        raise ValueError("a rate greater than zero")
    if not rate <= MAX_RATE_PER_S:
        raise ValueError(f"a rate of at most {MAX_RATE_PER_S}/s")
    return rate


def _delay_level_string(v):
    from store.delay_level import DelayLevelError, parse_delay_level

    if not isinstance(v, str) or len(v) > 10_000:
        raise ValueError("a string of delay levels like '1s 5s 10s'")
    try:
        table = parse_delay_level(v)
    except DelayLevelError as error:
        raise ValueError(str(error)) from None
    if max(table.values()) > MAX_DELAY_MS:
        raise ValueError(f"a string of delay levels like '1s 5s 10s', each at most {format_duration_ms(MAX_DELAY_MS)}")
    return v


def _int_list(low, high):
    def check(v):
        if not isinstance(v, list) or not v:
            raise ValueError(f"a non-empty list of integers in [{low}, {high}]")
        return tuple(_int(low, high)(x) for x in v)
    return check


def _float_list(v):
    if not isinstance(v, list) or not v:
        raise ValueError("a non-empty list of non-negative numbers")
    weights = tuple(_float(0.0, 1e9)(x) for x in v)
    if not sum(weights) > 0:
        raise ValueError("a non-empty list of non-negative numbers, not all zero")
    return weights


def _name(checker):
    """A topic or group name as RocketMQ's ``Validators`` accept it (it becomes a directory name)."""
    def check(v):
        from store.validators import InvalidName

        if not isinstance(v, str):
            raise ValueError("a string")
        try:
            return checker(v)
        except InvalidName as error:
            raise ValueError(f"a valid name ({error})") from None
    return check


# key -> (attribute, checker)
_TOP = {
    "version": ("version", _version),
    "name": ("name", _str()),
    "description": ("description", _str()),
    "seed": ("seed", _int(0, (1 << 63) - 1)),
    "duration": ("duration_ms", _duration(allow_zero=False, max_ms=MAX_PHASE_MS)),
    "drain": ("drain_ms", _duration(max_ms=MAX_PHASE_MS)),
}
_BROKER = {
    "era": ("era", _str(("5.3.3", "4.9.8"))),
    "message_delay_level": ("message_delay_level", _delay_level_string),
    "flush_delay_offset_interval": ("flush_delay_offset_interval_ms", _duration(allow_zero=False)),
    "flush_consumer_offset_interval": ("flush_consumer_offset_interval_ms", _duration(allow_zero=False)),
    "auto_create_subscription_group": ("auto_create_subscription_group", _bool),
    "timer_precision": ("timer_precision_ms", _duration(allow_zero=False)),
    "timer_roll_window_slot": ("timer_roll_window_slot", _int(2)),
    "timer_enable_retry_until_success": ("timer_enable_retry_until_success", _bool),
    "timer_skip_unknown_error": ("timer_skip_unknown_error", _bool),
    "flush_disk_type": ("flush_disk_type", _str(("ASYNC_FLUSH", "SYNC_FLUSH"))),
    "enable_schedule_async_deliver": ("enable_schedule_async_deliver", _bool),
    "retry_queue_nums": ("retry_queue_nums", _int(0, 64)),
    "commit_log_file_size": ("commit_log_file_size", _commit_log_file_size),
    "consume_queue_units_per_file": ("consume_queue_units_per_file", _int(1, 300_000)),
}
_TOPIC = {"name": ("name", _name(check_user_topic)), "queues": ("queues", _int(1, 1024))}
_PRODUCER = {
    "topic": ("topic", _name(check_user_topic)),
    "messages": ("messages", _int(0, 10_000_000)),
    "rate": ("rate_per_s", _rate),
    "delay_level": ("delay_levels", lambda v: (_int(1, 100)(v),)),
    "delay_levels": ("delay_levels", _int_list(1, 100)),
    "delay_weights": ("delay_weights", _float_list),
    "timer_delay": ("timer_delay_ms", _duration(allow_zero=False)),
    "tags": ("tags", _str()),
    "body_size": ("body_size", _int(0, 4 * 1024 * 1024)),
    "start": ("start_ms", _duration()),
}
_CONSUMER = {
    "group": ("group", _name(check_group)),
    "topic": ("topic", _name(check_user_topic)),
    "model": ("model", _str(("CLUSTERING", "BROADCASTING"))),
    "instances": ("instances", _int(1, 64)),
    "max_reconsume_times": ("max_reconsume_times", _int(-1, 1000)),
    "fail_probability": ("fail_probability", _float()),
    "fail_first": ("fail_first", _int(0, 10_000)),
    "consume_time": ("consume_time_ms", _duration()),
    "subscription": ("subscription", _str()),
    "consume_from_where": ("consume_from_where", _str(
        ("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP"))),
}
_FAULTS = {
    "put_failure_rate": ("put_failure_rate", _float()),
    "process_crashes": ("process_crashes", _int(0, 1000)),
    "power_failures": ("power_failures", _int(0, 1000)),
    "graceful_restarts": ("graceful_restarts", _int(0, 1000)),
    "consumer_crashes": ("consumer_crashes", _int(0, 1000)),
    "crash_before_offset_flush": ("crash_before_offset_flush", _int(0, 1000)),
    "crash_before_delay_offset_flush": ("crash_before_delay_offset_flush", _int(0, 1000)),
    "cq_truncations": ("cq_truncations", _int(0, 1000)),
    "send_back_failure_rate": ("send_back_failure_rate", _float()),
    "schedule_rebuild_failure_rate": ("schedule_rebuild_failure_rate", _float()),
    "cq_truncation_topic": ("cq_truncation_topic", _name(check_topic)),
    "store_rollbacks": ("store_rollbacks", _int(0, 100)),
    "rollback_age": ("rollback_age_ms", _duration(allow_zero=False)),
    "clock_steps": ("clock_steps", None),  # checked by _clock_steps (needs the file name for errors)
    "restart_after": ("restart_after_ms", _duration(allow_zero=False)),
    "start": ("start_ms", _duration()),
}
_NETWORK = {"latency": ("latency_ms", _duration())}
_TABLES = {"broker": _BROKER, "faults": _FAULTS, "network": _NETWORK}
_ARRAYS = {"topic": _TOPIC, "producer": _PRODUCER, "consumer": _CONSUMER}
_REQUIRED = {"topic": ("name",), "producer": ("topic",), "consumer": ("group", "topic")}


def suggest(key: str, known) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _show(value, width: int = 120) -> str:
    """A value as an error quotes it: one line, cut to ``width`` characters."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # a value nested too deep, an int over the digit limit
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= width else text[: width - 3] + "..."


def _dotted(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _check_table(source: str, where: str, raw, schema: dict) -> dict:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{source}: '{where}' must be a table")
    out = {}
    for key, value in raw.items():
        if key not in schema:
            raise ScenarioError(f"{source}: unknown key '{_dotted(where, key)}'{suggest(key, schema)}; "
                                f"known keys: {', '.join(sorted(schema))}")
        attr, check = schema[key]
        try:
            if attr is None:
                check(value)
                continue
            out[attr] = check(value)
        except ValueError as error:
            raise ScenarioError(f"{source}: key '{_dotted(where, key)}' must be {error}; got {_show(value)}") from None
    return out


def _clock_steps(source: str, raw) -> tuple[ClockStep, ...]:
    if not isinstance(raw, list):
        raise ScenarioError(f"{source}: key 'faults.clock_steps' must be a list of tables like "
                            f"{{ at = \"30m\", by = \"-5m\" }}; got {raw!r}")
    steps = []
    for i, item in enumerate(raw):
        where = f"faults.clock_steps[{i}]"
        if not isinstance(item, dict) or set(item) != {"at", "by"}:
            raise ScenarioError(f"{source}: '{where}' must be a table with exactly 'at' and 'by'; got {item!r}")
        fields = _check_table(source, where, item, {"at": ("at_ms", _duration()),
                                                    "by": ("by_ms", _duration(allow_negative=True))})
        steps.append(ClockStep(**fields))
    return tuple(steps)


def scenario_from_dict(doc: dict, source: str = "<scenario>") -> Scenario:
    """Validate a parsed scenario document (after any overrides) into a ``Scenario``."""
    known = {**_TOP, **{k: None for k in (*_TABLES, *_ARRAYS)}}
    for key in doc:
        if key not in known:
            raise ScenarioError(f"{source}: unknown key '{key}'{suggest(key, known)}; "
                                f"known keys: {', '.join(sorted(known))}")
    top = _check_table(source, "", {k: v for k, v in doc.items() if k in _TOP}, _TOP) if doc else {}
    if "name" not in top:
        raise ScenarioError(f"{source}: key 'name' is missing (a short scenario name)")
    broker = BrokerSpec(**_check_table(source, "broker", doc.get("broker", {}), _BROKER))
    fault_raw = doc.get("faults", {})
    if not isinstance(fault_raw, dict):
        raise ScenarioError(f"{source}: 'faults' must be a table ([faults])")
    fault_raw = dict(fault_raw)
    steps = _clock_steps(source, fault_raw.pop("clock_steps")) if "clock_steps" in fault_raw else ()
    faults = FaultSpec(**_check_table(source, "faults", fault_raw, _FAULTS), clock_steps=steps)
    network = NetworkSpec(**_check_table(source, "network", doc.get("network", {}), _NETWORK))
    arrays = {}
    for name, schema in _ARRAYS.items():
        raw_list = doc.get(name, [])
        if not isinstance(raw_list, list):
            raise ScenarioError(f"{source}: '{name}' must be an array of tables ([[{name}]])")
        items = []
        for i, raw in enumerate(raw_list):
            fields = _check_table(source, f"{name}[{i}]", raw, schema)
            for required in _REQUIRED[name]:
                if schema[required][0] not in fields:
                    raise ScenarioError(f"{source}: key '{name}[{i}].{required}' is missing")
            items.append(fields)
        arrays[name] = items
    topics = tuple(TopicSpec(**f) for f in arrays["topic"])
    producers = tuple(ProducerSpec(**f) for f in arrays["producer"])
    consumers = tuple(ConsumerSpec(**f) for f in arrays["consumer"])
    _check_references(source, topics, producers, consumers)
    scenario = Scenario(broker=broker, topics=topics, producers=producers, consumers=consumers, faults=faults,
                        network=network, source=source, doc=copy.deepcopy(doc), **top)
    return dataclasses.replace(scenario, notes=_delay_notes(source, scenario))


def _delay_notes(source: str, sc: Scenario) -> tuple[str, ...]:
    """Delay levels above the table are clamped to its last level, as the broker does (SendMessageProcessor /
    the producer fallback: ``Math.min(level, maxDelayLevel)``); and a drain shorter than the longest delay the
    scenario configures (a producer's level or timer, then the retry ladder of ``fail_first``) leaves messages
    due after the end: they are reported as pending in the stats, not checked by no_loss."""
    from store.delay_level import parse_delay_level

    table = parse_delay_level(sc.broker.message_delay_level)
    top = max(table)
    notes = []
    longest, why = 0, ""
    for i, p in enumerate(sc.producers):
        raw = (sc.doc or {}).get("producer", [])
        key = "delay_level" if i < len(raw) and "delay_level" in raw[i] else "delay_levels"
        above = sorted({lv for lv in p.delay_levels if lv > top})
        if above:
            notes.append(f"{source}: key 'producer[{i}].{key}' names level(s) {above} but message_delay_level has "
                         f"{top} levels: the broker clamps them to level {top} ({format_duration_ms(table[top])})")
        delay = max([table[min(lv, top)] for lv in p.delay_levels] + [p.timer_delay_ms or 0])
        ladders = [sum(table[min(3 + k, top)] for k in range(min(c.fail_first, 16 if c.max_reconsume_times == -1
                                                                   else c.max_reconsume_times)))
                   for c in sc.consumers if c.topic == p.topic]
        total = delay + max(ladders, default=0)
        if total > longest:
            longest, why = total, f"producer[{i}]: {format_duration_ms(delay)} delay" + (
                f" + {format_duration_ms(total - delay)} of retries" if total > delay else "")
    if longest > sc.drain_ms:
        notes.append(f"{source}: drain ({format_duration_ms(sc.drain_ms)}) is shorter than the longest delay "
                     f"({format_duration_ms(longest)}, {why}): messages due after the drain are reported as pending")
    return tuple(notes)


def _check_references(source, topics, producers, consumers) -> None:
    """Cross-key rules; a level above the maximum is allowed: the broker clamps it, as RocketMQ does."""
    names = [t.name for t in topics]
    if len(set(names)) != len(names):
        raise ScenarioError(f"{source}: topic names must be unique; got {names}")
    for i, p in enumerate(producers):
        if p.topic not in names:
            raise ScenarioError(f"{source}: key 'producer[{i}].topic' names '{p.topic}', which no [[topic]] "
                                f"declares{suggest(p.topic, names)}")
        if p.delay_levels and p.timer_delay_ms is not None:
            raise ScenarioError(f"{source}: 'producer[{i}]' has both a delay level and 'timer_delay'; a message "
                                f"carrying both is a delay-level message, so give only one")
        if p.delay_weights and len(p.delay_weights) != len(p.delay_levels):
            raise ScenarioError(f"{source}: key 'producer[{i}].delay_weights' must have one weight per delay level "
                                f"({len(p.delay_levels)}); got {len(p.delay_weights)}")
    for i, c in enumerate(consumers):
        if c.topic not in names:
            raise ScenarioError(f"{source}: key 'consumer[{i}].topic' names '{c.topic}', which no [[topic]] "
                                f"declares{suggest(c.topic, names)}")
