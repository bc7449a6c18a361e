"""The capture policy (INV-TASK-2) against its frozen contract data/fixtures/capture_v2.json."""

import dataclasses
import json
from pathlib import Path

import pytest

from fastslow.models.capture.policy import (
    MINIMUM_CAPTURE_CONFIDENCE, CandidateAction, CaptureSignalError, CaptureSignals, Interruption, Outcome,
    TaskOwner, meets_user_capture_floor, run_capture_policy,
)
from fastslow.models.capture.contract import CAPTURE_FIXTURE_FILE, evaluate_contract, load_contract

CONTRACT = load_contract()
SHARED_COPY = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "capture_v2.json"


def decide(**signals):
    return run_capture_policy(CaptureSignals.from_mapping(signals))


@pytest.mark.parametrize("case", CONTRACT["cases"], ids=[c["id"] for c in CONTRACT["cases"]])
def test_every_contract_case_gives_its_outcome_and_interruption(case):
    result = run_capture_policy(CaptureSignals.from_mapping(case["signals"]))
    assert {"outcome": result.outcome.value, "interruption": result.interruption.value} == case["expected"]


@pytest.mark.parametrize("case", CONTRACT["invalid_cases"], ids=[c["id"] for c in CONTRACT["invalid_cases"]])
def test_every_invalid_contract_case_raises_a_clear_error(case):
    with pytest.raises(CaptureSignalError, match=case["error"].replace("[", r"\[").replace("]", r"\]")):
        CaptureSignals.from_mapping(case["signals"])


def test_contract_conformance_is_complete_and_a_broken_expectation_lowers_it(tmp_path):
    report = evaluate_contract()
    assert report.conformance == 1.0 and report.failures == []
    assert report.total == len(CONTRACT["cases"]) + len(CONTRACT["invalid_cases"]) + 2
    broken = json.loads(CAPTURE_FIXTURE_FILE.read_text(encoding="utf-8"))
    broken["cases"][0]["expected"]["outcome"] = "ignore"
    broken["invalid_cases"][0]["signals"] = {"owner": "user"}
    path = tmp_path / "capture_broken.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    report = evaluate_contract(path)
    assert report.conformance < 1.0
    assert {f["id"] for f in report.failures} == {broken["cases"][0]["id"], broken["invalid_cases"][0]["id"]}


def test_the_repository_copy_of_the_contract_is_the_shared_one_unchanged():
    if not SHARED_COPY.is_file():
        pytest.skip("shared fixture not beside the repository")
    assert CAPTURE_FIXTURE_FILE.read_bytes() == SHARED_COPY.read_bytes()


def test_outcome_set_is_exactly_the_five_and_disjoint_from_the_forbidden_ones():
    assert [o.value for o in Outcome] == CONTRACT["outcomes"]
    assert not {o.value for o in Outcome} & set(CONTRACT["forbidden_outcomes"])
    assert not {o.name.lower() for o in Outcome} & set(CONTRACT["forbidden_outcomes"])
    assert set(CaptureSignals.field_names()) == set(CONTRACT["signal_fields"])


@pytest.mark.parametrize("signals, field", [
    ({"explicit_command": 1}, "explicit_command"),          # an int is not a boolean
    ({"concrete_deliverable": "yes"}, "concrete_deliverable"),
    ({"capture_confidence": True}, "capture_confidence"),    # a boolean is not a confidence
    ({"capture_confidence": float("nan")}, "capture_confidence"),
    ({"capture_confidence": "0.9"}, "capture_confidence"),
    ({"ownership_confidence": 1.0000001}, "ownership_confidence"),
    ({"owner": None}, "owner"),
    ({"owner": "USER"}, "owner"),
    ({"duplicate_of": ""}, "duplicate_of"),
    ({"refines_task": 3}, "refines_task"),
])
def test_signals_are_strict(signals, field):
    with pytest.raises(CaptureSignalError, match=field):
        CaptureSignals.from_mapping(signals)


def test_direct_construction_is_as_strict_and_frozen():
    with pytest.raises(TypeError):
        CaptureSignals(auto_accept=True)  # noqa: the constructor has no such field
    with pytest.raises(CaptureSignalError):
        CaptureSignals(capture_confidence=2.0)
    signals = CaptureSignals(owner="user")
    assert signals.owner is TaskOwner.USER
    with pytest.raises(dataclasses.FrozenInstanceError):
        signals.owner = TaskOwner.OTHER


def test_the_floor_needs_user_explicit_deliverable_and_both_confidences_and_fails_closed():
    full = dict(owner="user", concrete_deliverable=True, capture_confidence=0.8, ownership_confidence=0.8)
    assert meets_user_capture_floor(CaptureSignals(**full))
    for change in ({"owner": "other"}, {"owner": "unknown"}, {"concrete_deliverable": False},
                   {"concrete_deliverable": None}, {"capture_confidence": 0.79}, {"capture_confidence": None},
                   {"ownership_confidence": 0.7999}, {"ownership_confidence": None}):
        assert not meets_user_capture_floor(CaptureSignals(**{**full, **change})), change
    assert MINIMUM_CAPTURE_CONFIDENCE == 0.8


def test_the_order_of_the_spec():
    floor = dict(owner="user", concrete_deliverable=True, capture_confidence=1.0, ownership_confidence=1.0)
    # already_done beats duplicate_of beats refines_task beats explicit_command
    assert decide(already_done=True, duplicate_of="t", refines_task="t", explicit_command=True, **floor).outcome \
        is Outcome.PROPOSE_COMPLETION
    assert decide(duplicate_of="t", refines_task="t", explicit_command=True, **floor).outcome is Outcome.PROPOSE_ENRICHMENT
    assert decide(refines_task="t", explicit_command=True, **floor).outcome is Outcome.PROPOSE_UPDATE
    # explicit_command before public_broadcast; the others are silenced by a broadcast without a mention
    assert decide(explicit_command=True, public_broadcast=True, **floor).outcome is Outcome.PENDING_CANDIDATE
    assert decide(direct_request=True, public_broadcast=True, **floor).outcome is Outcome.IGNORE
    assert decide(direct_request=True, public_broadcast=True, direct_mention=True, **floor).outcome \
        is Outcome.PENDING_CANDIDATE
    # an explicit command below the floor is ignored, not passed on to later steps
    assert decide(explicit_command=True, direct_request=True, **{**floor, "capture_confidence": 0.5}).outcome \
        is Outcome.IGNORE
    # nothing at all → ignore
    assert decide(**floor).outcome is Outcome.IGNORE


def test_results_carry_the_candidate_action_and_only_completion_interrupts():
    floor = dict(owner="user", concrete_deliverable=True, capture_confidence=1.0, ownership_confidence=1.0)
    assert decide(explicit_command=True, **floor).candidate_action is CandidateAction.CREATE
    assert decide(duplicate_of="t").candidate_action is CandidateAction.UPDATE
    assert decide(refines_task="t").candidate_action is CandidateAction.UPDATE
    done = decide(already_done=True)
    assert (done.candidate_action, done.interruption) == (CandidateAction.COMPLETE, Interruption.INLINE_REVIEW)
    assert decide().candidate_action is None and decide().interruption is Interruption.NONE


def test_the_policy_is_deterministic_and_pure():
    signals = CaptureSignals.from_mapping(CONTRACT["cases"][0]["signals"])
    before = dataclasses.asdict(signals)
    run_capture_policy(signals)
    assert dataclasses.asdict(signals) == before
    with pytest.raises(CaptureSignalError):
        run_capture_policy({"explicit_command": True})
