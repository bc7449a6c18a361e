"""The frozen capture contract (``data/fixtures/capture_v2.json``) evaluated against ``run_capture_policy``.

Conformance is the share of the fixture's checks that hold: every case gives its expected outcome and
interruption, every invalid case is refused with the expected error, and the fixture's outcome set is
exactly ``Outcome`` (disjoint from its forbidden outcomes). A run below 1.0 must not be promoted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from fastslow.models.capture.policy import CaptureSignalError, CaptureSignals, Outcome, run_capture_policy
from fastslow.data import FIXTURES_DIR

CAPTURE_FIXTURE_FILE = FIXTURES_DIR / "capture_v2.json"


@dataclass
class ContractReport:
    passed: int = 0
    failures: list[dict] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.passed + len(self.failures)

    @property
    def conformance(self) -> float:
        return self.passed / self.total if self.total else 0.0


def load_contract(path: Path | str = CAPTURE_FIXTURE_FILE) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def evaluate_contract(path: Path | str = CAPTURE_FIXTURE_FILE) -> ContractReport:
    """Run every case and invalid case of the contract through the policy (never raises on a case)."""
    contract = load_contract(path)
    report = ContractReport()

    def check(case_id: str, ok: bool, detail: str) -> None:
        if ok:
            report.passed += 1
        else:
            report.failures.append({"id": case_id, "detail": detail})

    outcomes = {o.value for o in Outcome}
    check("outcome_set", set(contract["outcomes"]) == outcomes,
          f"fixture outcomes {sorted(contract['outcomes'])} != policy outcomes {sorted(outcomes)}")
    check("forbidden_outcomes", not outcomes & set(contract["forbidden_outcomes"]),
          f"policy holds forbidden outcomes {sorted(outcomes & set(contract['forbidden_outcomes']))}")
    for case in contract["cases"]:
        try:
            result = run_capture_policy(CaptureSignals.from_mapping(case["signals"]))
            got = {"outcome": result.outcome.value, "interruption": result.interruption.value}
        except CaptureSignalError as exc:
            got = {"error": str(exc)}
        check(case["id"], got == case["expected"], f"expected {case['expected']}, got {got}")
    for case in contract["invalid_cases"]:
        try:
            result = run_capture_policy(CaptureSignals.from_mapping(case["signals"]))
            check(case["id"], False, f"expected error {case['error']!r}, got outcome {result.outcome.value}")
        except CaptureSignalError as exc:
            check(case["id"], case["error"] in str(exc), f"expected error {case['error']!r}, got {exc}")
    return report
