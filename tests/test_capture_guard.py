"""The INV-TASK-2 static guard (tools/check_capture_authority.py) passes on the repository and fails on
every forbidden shape, shown on small mutated copies of the capture modules, so it cannot rot."""

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUARD = ROOT / "tools" / "check_capture_authority.py"
COPIED = ("models/capture/policy.py", "models/capture/candidates.py", "models/capture/contract.py", "models/pipeline.py",
          "tools/check_capture_authority.py")


def load_guard():
    spec = importlib.util.spec_from_file_location("check_capture_authority", GUARD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


guard = load_guard()


@pytest.fixture
def copy(tmp_path):
    for rel in COPIED:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    return tmp_path


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, f"mutation anchor {old!r} not in {rel}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


ENUM_ANCHOR = '    IGNORE = "ignore"\n'
STEP_ANCHOR = "    if signals.already_done:\n"
WIRING_ANCHOR = "        result = run_capture_policy(signals)\n"

BUNDLE_ANCHOR = "@dataclass\nclass FastslowModel"  # module level in another module than the policy

MUTATIONS = {
    # the deleted outcomes come back as enum members
    "enum_gains_create_direct": ("models/capture/policy.py", ENUM_ANCHOR, ENUM_ANCHOR + '    CREATE_DIRECT = "create_direct"\n'),
    "enum_gains_auto_accept_silent": ("models/capture/policy.py", ENUM_ANCHOR,
                                      ENUM_ANCHOR + '    AUTO_ACCEPT_SILENT = "auto_accept_silent"\n'),
    # any new member, whatever its name
    "enum_gains_any_new_member": ("models/capture/policy.py", ENUM_ANCHOR, ENUM_ANCHOR + '    SAVE_NOW = "save_now"\n'),
    "enum_renames_a_member": ("models/capture/policy.py", ENUM_ANCHOR, '    IGNORE = "drop"\n'),
    "enum_loses_a_member": ("models/capture/policy.py", ENUM_ANCHOR, ""),
    "enum_disappears": ("models/capture/policy.py", "class Outcome(str, Enum):", "class Outcomes(str, Enum):"),
    # a creating outcome constructed as a string
    "result_with_create_direct_string": ("models/capture/policy.py", STEP_ANCHOR,
                                         '    return CapturePolicyResult("create_direct")\n' + STEP_ANCHOR),
    "result_with_new_creating_kind": ("models/capture/policy.py", STEP_ANCHOR,
                                      '    return CapturePolicyResult("auto_accept_later")\n' + STEP_ANCHOR),
    "result_with_computed_outcome": ("models/capture/policy.py", STEP_ANCHOR,
                                     '    return CapturePolicyResult(Outcome(signals.owner))\n' + STEP_ANCHOR),
    "creating_outcome_in_another_module": ("models/pipeline.py", BUNDLE_ANCHOR,
                                           'FALLBACK = "auto_accept_silent"\n\n\n' + BUNDLE_ANCHOR),
    "creating_identifier_in_another_module": ("models/pipeline.py", BUNDLE_ANCHOR,
                                              "def create_direct(task):\n    return task\n\n\n" + BUNDLE_ANCHOR),
    # a capture path accepting or writing
    "wiring_calls_accept": ("models/capture/candidates.py", WIRING_ANCHOR,
                            WIRING_ANCHOR + "        candidate_service.accept_candidate(signals)\n"),
    "wiring_calls_a_writer": ("models/capture/candidates.py", WIRING_ANCHOR,
                              WIRING_ANCHOR + "        action_items_db.create_action_item(group)\n"),
    "wiring_saves": ("models/capture/candidates.py", WIRING_ANCHOR, WIRING_ANCHOR + "        store.save_task(group)\n"),
    "wiring_opens_a_file_for_writing": ("models/capture/candidates.py", WIRING_ANCHOR,
                                        WIRING_ANCHOR + '        open("tasks.jsonl", "a")\n'),
    "scoring_loop_accepts": ("models/pipeline.py", "            records.append(build_record(",
                             "            candidate_service.accept_candidate(candidates)\n"
                             "            records.append(build_record("),
    "scoring_loop_renamed_away": ("models/pipeline.py", "def _score_valid(", "def _score_items("),
    "policy_writes": ("models/capture/policy.py", STEP_ANCHOR, "    tasks.write(signals)\n" + STEP_ANCHOR),
}


def test_the_repository_passes(capsys):
    problems, n = guard.check(ROOT)
    assert problems == [] and n > 10


def test_an_unmutated_copy_passes(copy):
    assert guard.check(copy)[0] == []


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_the_guard_fails_on_each_forbidden_shape(copy, name):
    rel, old, new = MUTATIONS[name]
    edit(copy, rel, old, new)
    problems, _ = guard.check(copy)
    assert problems, f"{name}: the guard let it through"
    assert all(re.match(r"^[\w/.]+\.py:\d+: ", p) for p in problems)
    assert any(p.startswith(rel + ":") for p in problems), problems


def test_a_virtual_environment_in_the_checkout_is_not_read_whatever_its_name(copy):
    installed = copy / "env-py311" / "lib" / "site-packages" / "somepackage"
    installed.mkdir(parents=True)
    (installed / "app.py").write_text('def auto_create():\n    return "create_direct"\n', encoding="utf-8")
    assert guard.check(copy)[0]  # a package's own source is read like any other ...
    (copy / "env-py311" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    assert guard.check(copy)[0] == []  # ... unless it lies in a virtual environment


def test_comments_and_docstrings_may_name_the_deleted_outcomes(copy):
    edit(copy, "models/capture/policy.py", STEP_ANCHOR,
         '    # create_direct and auto_accept_silent were deleted, not disabled\n' + STEP_ANCHOR)
    edit(copy, "models/capture/candidates.py", '"""From a scored', '"""No create_direct here. From a scored')
    assert guard.check(copy)[0] == []


def test_the_policy_module_missing_fails(copy):
    (copy / "models" / "capture" / "policy.py").unlink()
    assert any("models/capture/policy.py" in p for p in guard.check(copy)[0])


def test_command_line_exit_status_and_file_line_messages(copy):
    ok = subprocess.run([sys.executable, str(GUARD)], capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0, ok.stderr
    rel, old, new = MUTATIONS["wiring_calls_accept"]
    edit(copy, rel, old, new)
    bad = subprocess.run([sys.executable, str(GUARD), "--root", str(copy)], capture_output=True, text=True)
    assert bad.returncode == 1
    assert re.search(r"^models/capture/candidates\.py:\d+: capture path calls accept_candidate", bad.stderr, re.M)


def test_ci_runs_the_guard_before_the_tests():
    lines = [l.strip() for l in (ROOT / ".ci" / "run").read_text().splitlines() if l.strip() and not l.startswith("#")]
    guard = next(i for i, line in enumerate(lines) if "tools/check_capture_authority.py" in line)
    tests = next(i for i, line in enumerate(lines) if re.search(r"\bpytest\b", line))
    assert "set -euo pipefail" in lines and guard < tests   # a failing guard stops CI before the tests


def test_the_guard_uses_the_standard_library_only():
    import ast
    tree = ast.parse(GUARD.read_text(encoding="utf-8"))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}
