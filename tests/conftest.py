"""Suite-wide settings: the Hypothesis profile (chosen by RMQSIM_HYPOTHESIS_PROFILE), the tier markers, and
the history schema: every history a test produces is validated against ``model/history.py``.

The profile is loaded here, before any test module builds its own ``settings(...)``, so those inherit it:
``ci`` is derandomised (every CI run tries the same examples, so a red build is reproducible and a green one
is not luck) and prints the ``@reproduce_failure`` blob of a failing example; ``dev`` (the default) keeps
Hypothesis' random search and its example database.
"""

from __future__ import annotations

import gc
import os
import sys

# Before any project module is imported: cache compiled and assertion-rewritten modules in __pycache__ (git
# ignores it) even where PYTHONDONTWRITEBYTECODE is set, as on the project's machines. Without the cache every
# run compiles the project and rewrites every test module again: about 7 s of CPU per run (issue #14).
# Python and pytest check a cached file against its source's mtime and size, and write it atomically.
sys.dont_write_bytecode = False

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

import sim.history  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True, database=None)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("RMQSIM_HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(autouse=True)
def _strict_history_schema(monkeypatch):
    monkeypatch.setattr(sim.history, "STRICT", True)


@pytest.fixture(autouse=True, scope="module")
def _freeze_what_outlives_the_module():
    """After each module (its own module fixtures are torn down first): collect its garbage, then move every
    survivor (the session's shared runs, module-level caches that live as long as the session) to the
    collector's permanent generation. A full collection (each broker restart makes one, sim/broker_host.py)
    then walks the objects of the module that runs, not everything the session keeps; on the built-in and
    explore-triage modules collecting had grown to a fifth of their time (issue #14). Frozen objects are never
    collected, so nothing that dies later may be frozen: the survivors of a module live to the session's end."""
    yield
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    """A test that starts Spark (the ``spark`` fixture) must say so, or ``-m 'not spark'`` would still start it."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None:
            raise pytest.UsageError(f"{item.nodeid} uses the spark fixture: mark it @pytest.mark.spark")
