"""Scenario files (TOML, version 2; version 1 still loads): the loader. The frozen specs and the dict validator live in sim/scenario.py.

They are re-exported here so callers of ``scenarios.scenario`` keep working (issue 16: sim must not import scenarios).
"""

from __future__ import annotations

import copy
import sys
import tomllib

from sim.scenario import *  # noqa: F401,F403
from sim.scenario import (  # noqa: F401
    _ARRAYS,
    _BROKER,
    _CONSUMER,
    _FAULTS,
    _NETWORK,
    _PRODUCER,
    _REQUIRED,
    _TABLES,
    _TOP,
    _TOPIC,
    MAX_COMMIT_LOG_FILE_SIZE,
    MAX_DELAY_MS,
    MAX_PHASE_MS,
    MAX_RATE_PER_S,
    BrokerSpec,
    ClockStep,
    ConsumerSpec,
    FaultSpec,
    NetworkSpec,
    ProducerSpec,
    Scenario,
    ScenarioError,
    TopicSpec,
    scenario_from_dict,
    suggest,
)


def load_scenario_text(text: str, source: str, overrides: dict | None = None) -> Scenario:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(f"{source}: not valid TOML: {error}") from None
    except RecursionError:
        raise ScenarioError(f"{source}: not valid TOML: nested too deep") from None
    except ValueError as error:  # tomllib lets int()'s digit limit through as a plain ValueError
        raise ScenarioError(f"{source}: not valid TOML: {str(error).split(';')[0]}") from None
    if overrides:
        doc = apply_overrides(doc, overrides, source)
    scenario = scenario_from_dict(doc, source)
    for note in scenario.notes:
        print(f"warning: {note}", file=sys.stderr)
    return scenario


def load_scenario_file(path: str, overrides: dict | None = None) -> Scenario:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as error:
        raise ScenarioError(f"{path}: cannot be read: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise ScenarioError(f"{path}: not a UTF-8 text file (byte {error.start}); TOML files are UTF-8") from None
    return load_scenario_text(text, path, overrides)


def apply_overrides(doc: dict, overrides: dict, source: str) -> dict:
    """``{"broker.era": "4.9.8", "consumer.fail_probability": 0.1, "seed": 3}`` onto a raw document.

    A key of an array table (``consumer.x``) applies to every entry; ``consumer[1].x`` to one."""
    out = copy.deepcopy(doc)
    for dotted, value in overrides.items():
        head, _, key = dotted.partition(".")
        if not key:
            out[head] = value
            continue
        index = None
        if head.endswith("]") and "[" in head:
            head, _, idx = head[:-1].partition("[")
            index = int(idx)
        if head in _ARRAYS:
            entries = out.get(head, [])
            if not entries:
                raise ScenarioError(f"{source}: override '{dotted}': the scenario has no [[{head}]]")
            targets = entries if index is None else [entries[index]]
            for entry in targets:
                entry[key] = value
        elif head in _TABLES:
            out.setdefault(head, {})[key] = value
        else:
            raise ScenarioError(f"{source}: override '{dotted}': '{head}' is not a table of the scenario"
                                f"{suggest(head, [*_TABLES, *_ARRAYS])}")
    return out
