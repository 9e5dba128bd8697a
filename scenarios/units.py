"""Moved to sim/units.py (issue 16: sim must not import scenarios); re-exported for callers."""

from sim.units import *  # noqa: F401,F403
from sim.units import format_duration_ms, parse_duration_ms, parse_rate_per_s  # noqa: F401
