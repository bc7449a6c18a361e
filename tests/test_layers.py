"""The import structure, read from the code: layers import only downwards, the three jobs know nothing of
each other, and no module imports itself back through a circle.

    data  ←  features  ←  models (taxonomy ← routing | automation | capture ← record ← pipeline, scoring
                                   ← lifecycle)  ←  serve, train.py  ←  cli
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("data", "features", "models", "serve")  # every module in them; the scripts that build data live in tools/

#: (prefix, rank): a module may import another only of the same or a lower rank
RANKS = (
    ("fastslow.data", 0),
    ("fastslow.features", 1),
    ("fastslow.models.taxonomy", 2),
    ("fastslow.models.routing", 3),
    ("fastslow.models.automation", 3),
    ("fastslow.models.capture", 3),
    ("fastslow.models.record", 4),
    ("fastslow.models.pipeline", 5),
    ("fastslow.models.scoring", 5),
    ("fastslow.models.lifecycle", 6),
    ("fastslow.models", 2),   # the package itself
    ("fastslow.serve", 7),
    ("fastslow.train", 7),
    ("fastslow.cli", 8),      # the command line: training, scoring and the server behind one entry
    ("fastslow", 0),          # the package itself: its docstring and version, nothing imported
)
JOBS = ("fastslow.models.routing", "fastslow.models.automation", "fastslow.models.capture")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["fastslow", *parts])


def sources() -> list[Path]:
    found = [ROOT / "train.py", ROOT / "cli.py"]
    for package in PACKAGES:
        found += list((ROOT / package).rglob("*.py"))
    return sorted(found)


def imports_of(path: Path) -> set[str]:
    """The fastslow modules ``path`` imports, anywhere in the file (inside functions too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "fastslow":
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names if is_module(f"{node.module}.{a.name}")}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "fastslow"}
    return found


def is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (ROOT / rel).with_suffix(".py").exists() or (ROOT / rel / "__init__.py").exists()


def rank(name: str) -> int:
    return next(r for prefix, r in RANKS if name == prefix or name.startswith(prefix + "."))


def job(name: str) -> str | None:
    return next((j for j in JOBS if name == j or name.startswith(j + ".")), None)


GRAPH = {module_name(p): imports_of(p) for p in sources()}


def test_every_module_has_a_layer():
    assert all(rank(m) >= 0 for m in GRAPH)


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_run_only_downwards(module):
    upward = sorted(i for i in GRAPH[module] if rank(i) > rank(module))
    assert upward == [], f"{module} imports a higher layer: {upward}"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if job(m)))
def test_routing_automation_and_capture_do_not_import_each_other(module):
    others = sorted(i for i in GRAPH[module] if job(i) not in (None, job(module)))
    assert others == [], f"{module} imports another job: {others}"


def test_no_circles():
    visiting, done = set(), set()

    def visit(node: str, trail: list[str]) -> None:
        if node in done:
            return
        assert node not in visiting, "import circle: " + " -> ".join(trail[trail.index(node):] + [node])
        visiting.add(node)
        for target in sorted(GRAPH.get(node, ())):
            visit(target, trail + [node])
        visiting.discard(node)
        done.add(node)

    for module in sorted(GRAPH):
        visit(module, [])


def test_the_check_sees_a_violation():
    """The graph is read for real: pipeline imports the three jobs, and serve imports models."""
    assert {"fastslow.models.routing.router", "fastslow.models.automation.parser",
            "fastslow.models.capture.candidates"} <= GRAPH["fastslow.models.pipeline"]
    assert rank("fastslow.cli") > rank("fastslow.models.pipeline") > rank("fastslow.features.text")
