"""One seed per run, split into named streams (Hypothesis-style explicit ``random.Random`` objects).

A stream's seed is derived from (run seed, name) with SHA-256, so adding a stream never shifts
another one, and nothing depends on ``PYTHONHASHSEED``."""

from __future__ import annotations

import hashlib
import random


class RandomStreams:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._streams: dict[str, random.Random] = {}

    def stream(self, name: str) -> random.Random:
        rng = self._streams.get(name)
        if rng is None:
            digest = hashlib.sha256(f"{self.seed}/{name}".encode()).digest()
            rng = self._streams[name] = random.Random(int.from_bytes(digest[:8], "big"))
        return rng
