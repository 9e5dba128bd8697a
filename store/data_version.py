"""DataVersion: the (timestamp, counter) stamp every config table carries (ROCKETMQ.md 6.2).

Name servers compare it to decide whether a broker's topic table changed; here it mostly
shows in the files, and its counter tells a test how many changes were persisted.
"""

from __future__ import annotations

from dataclasses import dataclass

from .clock import Clock

SHAPE_4X = "4.x"  # {"counter", "timestamp"}
SHAPE_5X = "5.x"  # {"counter", "stateVersion", "timestamp"}
JSON_SHAPES = (SHAPE_4X, SHAPE_5X)


def _as_int(obj: dict, key: str, default: int) -> int:
    value = obj.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"dataVersion.{key} must be an integer, not {value!r}")
    return value


@dataclass(slots=True)
class DataVersion:
    timestamp_ms: int = 0
    counter: int = 0
    state_version: int = 0

    @classmethod
    def now(cls, clock: Clock) -> DataVersion:
        """A fresh version, stamped at construction as Java's ``new DataVersion()`` is."""
        return cls(timestamp_ms=clock.now_ms())

    def next_version(self, clock: Clock, state_version: int | None = None) -> None:
        """``nextVersion()``: timestamp = now, counter + 1 (5.x may also set the state version)."""
        self.timestamp_ms = clock.now_ms()
        self.counter += 1
        if state_version is not None:
            self.state_version = state_version

    def assign_new_one(self, other: DataVersion) -> None:
        self.timestamp_ms = other.timestamp_ms
        self.counter = other.counter
        self.state_version = other.state_version

    def copy(self) -> DataVersion:
        return DataVersion(self.timestamp_ms, self.counter, self.state_version)

    def to_json(self, json_shape: str = SHAPE_5X) -> dict:
        """The bean with alphabetical keys; 4.x had no ``stateVersion``."""
        if json_shape == SHAPE_4X:
            return {"counter": self.counter, "timestamp": self.timestamp_ms}
        return {"counter": self.counter, "stateVersion": self.state_version, "timestamp": self.timestamp_ms}

    @classmethod
    def from_json(cls, obj: object) -> DataVersion:
        """Read either shape; unknown properties are ignored."""
        if not isinstance(obj, dict):
            raise ValueError(f"dataVersion must be an object, not {obj!r}")
        return cls(
            timestamp_ms=_as_int(obj, "timestamp", 0),
            counter=_as_int(obj, "counter", 0),
            state_version=_as_int(obj, "stateVersion", 0),
        )
