#!/usr/bin/env python3
"""Static guard of invariant INV-TASK-2 (spec capture-invariant-inv-task-2.md, "静态守卫如何工作"):
capture only proposes, it never creates, accepts or writes a task. Stdlib only, no network.

Checks, over every Python source of the repository (tests and this file excluded):

1. no source constructs a creating outcome: no string constant and no identifier equal to a
   forbidden outcome, or of that kind (auto-accept, direct create/write, silent accept);
2. the ``Outcome`` enum of ``models/capture/policy.py`` holds exactly the five allowed outcomes;
3. every ``CapturePolicyResult(...)`` built in a capture module names its outcome as a literal
   ``Outcome.<ALLOWED>`` (or an allowed string), so no computed outcome can slip through;
4. no capture module (``models/capture/*.py``) and no capture-path function elsewhere
   (``CAPTURE_FUNCTIONS``: the pipeline's scoring loop) calls an accept or write function (accept*,
   write*, save*, persist*, commit*, insert*, create_task, ...) or opens a file for writing.

Comments and docstrings may explain why the forbidden outcomes do not exist: the guard matches
constructions (AST nodes), not words. Exit status 1 with ``file:line: message`` lines on failure.

    python tools/check_capture_authority.py [--root DIR]
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ALLOWED_OUTCOMES = {"PENDING_CANDIDATE": "pending_candidate", "PROPOSE_ENRICHMENT": "propose_enrichment",
                    "PROPOSE_UPDATE": "propose_update", "PROPOSE_COMPLETION": "propose_completion",
                    "IGNORE": "ignore"}
#: outcomes deleted from the policy (spec MUST NOT 1); never to come back under any spelling
FORBIDDEN_OUTCOMES = ("create_direct", "auto_accept_silent")
#: "any new member of that kind": an outcome that accepts or writes without the user
CREATING_KIND = re.compile(
    r"^(?:create_?direct\w*|direct_?(?:create|write|accept)\w*|auto_?accept\w*|\w*_auto_?accept\w*"
    r"|\w*silent_?accept\w*|accept_?silent\w*|auto_?(?:create|write)\w*|write_?direct\w*)$", re.IGNORECASE)
#: calls a capture path must never make
ACCEPT_OR_WRITE_CALL = re.compile(
    r"(?:^|_)(?:accept|write|writelines|save|persist|commit|insert|upsert)(?:_|$)|^(?:create_task|create_tasks"
    r"|create_action_items?(?:_batch)?|add_task|add_to_tasks|dump)$", re.IGNORECASE)
CAPTURE_MODULES = "models/capture/*.py"
#: functions outside the capture modules that run the capture path (the scoring loop of the pipeline)
CAPTURE_FUNCTIONS = {"models/pipeline.py": ("_score_valid",)}
POLICY_MODULE = "models/capture/policy.py"
SKIP_DIRS = {".git", ".venv", "venv", "tests", "mlruns", "mlartifacts", "build", "dist", "node_modules",
             "__pycache__", ".hypothesis", ".pytest_cache"}
SELF = Path("tools/check_capture_authority.py")


def is_forbidden_name(text: str) -> bool:
    lowered = text.strip().lower()
    return lowered in FORBIDDEN_OUTCOMES or bool(CREATING_KIND.match(lowered))


def python_sources(root: Path) -> list[Path]:
    # a virtual environment made in the checkout, whatever its name (.venv2, env-py311): installed packages
    venvs = {cfg.parent.name for cfg in root.glob("*/pyvenv.cfg")}
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts[:-1]) or rel == SELF \
                or rel.parts[0] in venvs:
            continue
        out.append(path)
    return out


def _identifiers(node: ast.AST):
    """(name, line) of every identifier a node introduces or uses."""
    if isinstance(node, ast.Name):
        yield node.id, node.lineno
    elif isinstance(node, ast.Attribute):
        yield node.attr, node.lineno
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name, node.lineno
    elif isinstance(node, ast.arg):
        yield node.arg, node.lineno
    elif isinstance(node, ast.keyword) and node.arg:
        yield node.arg, getattr(node, "lineno", 0)
    elif isinstance(node, ast.alias):
        yield (node.asname or node.name).split(".")[-1], getattr(node, "lineno", 0)


def check_creating_constructions(rel: str, tree: ast.AST) -> list[str]:
    """Check 1: no constant or identifier that is (or is of the kind of) a creating outcome."""
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and is_forbidden_name(node.value):
            problems.append(f"{rel}:{node.lineno}: constructs the creating outcome {node.value!r} (INV-TASK-2: deleted)")
        for name, line in _identifiers(node):
            if is_forbidden_name(name):
                problems.append(f"{rel}:{line}: names the creating outcome {name!r} (INV-TASK-2: deleted)")
    return problems


def check_outcome_enum(rel: str, tree: ast.AST) -> list[str]:
    """Check 2: ``class Outcome`` exists and its members are exactly the allowed five."""
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "Outcome"]
    if len(classes) != 1:
        return [f"{rel}:1: expected exactly one `class Outcome` (found {len(classes)}); the guard cannot verify it"]
    enum = classes[0]
    members = {}
    for stmt in enum.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Name):
                value = getattr(stmt, "value", None)
                members[target.id] = (value.value if isinstance(value, ast.Constant) else None, stmt.lineno)
    problems = []
    for name, (value, line) in members.items():
        if ALLOWED_OUTCOMES.get(name) != value:
            problems.append(f"{rel}:{line}: Outcome gains {name} = {value!r}; the outcome set is exactly "
                            f"{sorted(ALLOWED_OUTCOMES.values())}")
    for name in sorted(set(ALLOWED_OUTCOMES) - set(members)):
        problems.append(f"{rel}:{enum.lineno}: Outcome lacks {name}")
    return problems


def _outcome_argument(call: ast.Call) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == "outcome":
            return kw.value
    return call.args[0] if call.args else None


def check_policy_results(rel: str, tree: ast.AST) -> list[str]:
    """Check 3: every CapturePolicyResult(...) names an allowed outcome literally."""
    problems = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _call_name(node) == "CapturePolicyResult"):
            continue
        arg = _outcome_argument(node)
        ok = ((isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id == "Outcome"
               and arg.attr in ALLOWED_OUTCOMES)
              or (isinstance(arg, ast.Constant) and arg.value in ALLOWED_OUTCOMES.values()))
        if not ok:
            shown = ast.unparse(arg) if arg is not None else "nothing"
            problems.append(f"{rel}:{node.lineno}: CapturePolicyResult built with outcome {shown}; only "
                            f"Outcome.<{'|'.join(ALLOWED_OUTCOMES)}> is allowed")
    return problems


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _opens_for_writing(call: ast.Call) -> bool:
    if _call_name(call) not in ("open", "write_text", "write_bytes"):
        return False
    if _call_name(call) != "open":
        return True
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and bool(set(mode.value) & set("wax+"))


def check_capture_calls(rel: str, tree: ast.AST) -> list[str]:
    """Check 4: a capture module never calls an accept or write function."""
    problems = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        if (name and ACCEPT_OR_WRITE_CALL.search(name)) or _opens_for_writing(node):
            problems.append(f"{rel}:{node.lineno}: capture path calls {name}(…): capture proposes only, it never "
                            f"accepts or writes (INV-TASK-2)")
    return problems


def check(root: Path) -> tuple[list[str], int]:
    """All problems under ``root`` and the number of files read."""
    root = Path(root)
    problems: list[str] = []
    sources = python_sources(root)
    capture = {p.resolve() for p in root.glob(CAPTURE_MODULES)}
    policy = (root / POLICY_MODULE).resolve()
    if policy not in capture:
        problems.append(f"{POLICY_MODULE}:1: missing; the capture policy must live there")
    for path in sources:
        rel = path.relative_to(root).as_posix()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        except (SyntaxError, UnicodeDecodeError) as exc:
            problems.append(f"{rel}:{getattr(exc, 'lineno', 1) or 1}: cannot be parsed ({exc.__class__.__name__}); "
                            f"the guard cannot verify it")
            continue
        problems += check_creating_constructions(rel, tree)
        if path.resolve() == policy:
            problems += check_outcome_enum(rel, tree)
        if path.resolve() in capture:
            problems += check_policy_results(rel, tree)
            problems += check_capture_calls(rel, tree)
        for name in CAPTURE_FUNCTIONS.get(rel, ()):
            found = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
            if not found:
                problems.append(f"{rel}:1: capture-path function {name} not found; the guard cannot verify it")
            for function in found:
                problems += check_capture_calls(rel, function)
    return problems, len(sources)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="repository root (default: the one holding this script)")
    args = parser.parse_args(argv)
    problems, n = check(args.root)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print(f"capture authority: {len(problems)} problem(s) in {n} files", file=sys.stderr)
        return 1
    print(f"capture authority: ok ({n} files; outcomes {', '.join(ALLOWED_OUTCOMES.values())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
