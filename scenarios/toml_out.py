"""Moved to sim/toml_out.py (issue 16: sim must not import scenarios); re-exported for callers."""

from sim.toml_out import dumps  # noqa: F401
