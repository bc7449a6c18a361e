"""The benchmark scripts still name what the package has. They are run by hand, never by the test command
(no timings are asserted in tests), so a renamed or moved name would break one unseen: every name a script
imports from ``fastslow``, at its top or inside a function, must exist where the script looks for it."""

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"))


def imported_names(script: Path) -> list[tuple[str, str]]:
    """(module, name) of every ``from fastslow… import name`` in ``script``, wherever it is written."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    return [(node.module, alias.name) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "fastslow"
            for alias in node.names]


def test_there_are_benchmarks_to_check():
    assert len(BENCHMARKS) >= 4 and all(imported_names(script) for script in BENCHMARKS)


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.name)
def test_every_name_a_benchmark_imports_from_the_package_exists(script):
    missing = [f"{module}.{name}" for module, name in imported_names(script)
               if not hasattr(importlib.import_module(module), name)]
    assert not missing, f"{script.name} imports names the package does not have: {missing}"
