"""Puts/s and dispatched units/s through the real store, on the in-memory and the OS disk.

    .venv/bin/python benchmarks/store_bench.py [--messages N] [--body BYTES]

Prints one JSON line per disk. Wall time is measured here, never asserted in tests. ``rmqsim bench``
measures the same rates (``sim.bench.store_rates``) in its own process for the store-bound ceiling.
"""

from __future__ import annotations

import argparse
import json
import tempfile

from sim.bench import store_rates
from store.disk import MemoryDisk, OsDisk


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--body", type=int, default=100)
    args = parser.parse_args()
    print(json.dumps({"disk": "memory", **store_rates(MemoryDisk(), args.messages, args.body)}))
    with tempfile.TemporaryDirectory() as root:
        print(json.dumps({"disk": "os", **store_rates(OsDisk(root), args.messages, args.body)}))


if __name__ == "__main__":
    main()
