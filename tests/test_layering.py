"""store/ must stay free of the harness and analysis libraries (DESIGN.md, layout)."""

import json
import subprocess
import sys

FORBIDDEN = ["simpy", "networkx", "pyspark", "matplotlib", "hypothesis", "sim", "model", "scenarios", "reports"]


def _modules_loaded_by(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return {name.split(".")[0] for name in json.loads(out)}


def test_store_imports_none_of_the_harness_or_analysis_libraries():
    statement = "import pkgutil, importlib, store\n" + (
        "for m in pkgutil.iter_modules(store.__path__): importlib.import_module('store.' + m.name)"
    )
    loaded = _modules_loaded_by(statement)
    assert not loaded & set(FORBIDDEN), f"store pulled in {sorted(loaded & set(FORBIDDEN))}"


def test_the_check_itself_sees_a_forbidden_import():
    # The detector must be able to fail: importing simpy is seen.
    assert "simpy" in _modules_loaded_by("import simpy")
