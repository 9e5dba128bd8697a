"""Suite-wide settings: the Hypothesis profile (chosen by RMQSIM_HYPOTHESIS_PROFILE), the tier markers, and
the history schema: every history a test produces is validated against ``model/history.py``.

The profile is loaded here, before any test module builds its own ``settings(...)``, so those inherit it:
``ci`` is derandomised (every CI run tries the same examples, so a red build is reproducible and a green one
is not luck) and prints the ``@reproduce_failure`` blob of a failing example; ``dev`` (the default) keeps
Hypothesis' random search and its example database.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

import sim.history

settings.register_profile("ci", derandomize=True, print_blob=True, database=None)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("RMQSIM_HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(autouse=True)
def _strict_history_schema(monkeypatch):
    monkeypatch.setattr(sim.history, "STRICT", True)


def pytest_collection_modifyitems(config, items):
    """A test that starts Spark (the ``spark`` fixture) must say so, or ``-m 'not spark'`` would still start it."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None:
            raise pytest.UsageError(f"{item.nodeid} uses the spark fixture: mark it @pytest.mark.spark")
