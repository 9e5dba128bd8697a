"""The built-in scenarios (``scenarios/builtin/*.toml``) and resolving SCENARIO arguments."""

from __future__ import annotations

import os
from importlib import resources

from .scenario import Scenario, ScenarioError, load_scenario_file, load_scenario_text


def builtin_names() -> list[str]:
    folder = resources.files("scenarios") / "builtin"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def load_builtin(name: str, overrides: dict | None = None) -> Scenario:
    path = resources.files("scenarios") / "builtin" / f"{name}.toml"
    if not path.is_file():
        raise ScenarioError(f"{name}: no such built-in scenario (see `rmqsim scenarios`)")
    return load_scenario_text(path.read_text(encoding="utf-8"), f"builtin:{name}", overrides)


def resolve_scenario(name_or_path: str, overrides: dict | None = None) -> Scenario:
    """A file path if it exists (or looks like one), else the name of a built-in scenario."""
    if os.path.exists(name_or_path) or name_or_path.endswith(".toml") or os.sep in name_or_path:
        return load_scenario_file(name_or_path, overrides)
    if name_or_path in builtin_names():
        return load_builtin(name_or_path, overrides)
    import difflib

    close = difflib.get_close_matches(name_or_path, builtin_names(), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    raise ScenarioError(f"{name_or_path}: neither a scenario file nor a built-in scenario{hint}")
