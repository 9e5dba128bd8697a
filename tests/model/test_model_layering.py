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
    statement = ("import model.spec, model.properties, model.symmetry, model.checker, model.graph_io\n"
                 "import model.statestore, model.liveness\n"
                 "from model.checker import check\nfrom model.spec import ModelConfig\n"
                 "check(ModelConfig(messages=1, levels=1, max_retries=0, crashes=0, put_failures=0, "
                 "persist_points=0))")
    loaded = _loaded(statement)
    assert not loaded & FORBIDDEN, sorted(loaded & FORBIDDEN)


def test_the_detector_sees_a_forbidden_import():
    assert "store" in _loaded("import sim.model_mapping")


def _imports_outside_stdlib(path) -> set[str]:
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        found |= {n.split(".")[0] for n in names} - set(sys.stdlib_module_names) - {"__future__", "model"}
    return found


def test_every_model_module_imports_only_the_stdlib_and_networkx():
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / "model"
    outside = {p.name: _imports_outside_stdlib(p) - {"networkx"} for p in sorted(root.rglob("*.py"))}
    assert {name: found for name, found in outside.items() if found} == {}
    planted = root.parent / "scenarios" / "check_cli.py"  # imports reports: the detector must see it
    assert "reports" in _imports_outside_stdlib(planted)
