"""Every history a test produces is validated against the schema of ``model/history.py``."""

import pytest

import sim.history


@pytest.fixture(autouse=True)
def _strict_history_schema(monkeypatch):
    monkeypatch.setattr(sim.history, "STRICT", True)

