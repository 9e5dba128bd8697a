"""model/ is the specification: it never imports the store, SimPy, PySpark or matplotlib (DESIGN.md)."""

import json
import subprocess
import sys

FORBIDDEN = {"store", "simpy", "pyspark", "matplotlib", "sim", "scenarios", "reports", "hypothesis"}


def _loaded(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return {name.split(".")[0] for name in json.loads(out)}


def test_the_model_checker_imports_none_of_the_store_or_the_harness():
    statement = ("import model.spec, model.properties, model.symmetry, model.checker, model.graph_io, model.cli\n"
                 "from model.checker import check\nfrom model.spec import ModelConfig\n"
                 "check(ModelConfig(messages=1, levels=1, max_retries=0, crashes=0, put_failures=0, "
                 "persist_points=0))")
    loaded = _loaded(statement)
    assert not loaded & FORBIDDEN, sorted(loaded & FORBIDDEN)


def test_the_detector_sees_a_forbidden_import():
    assert "store" in _loaded("import sim.model_mapping")
