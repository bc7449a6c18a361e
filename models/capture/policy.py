"""The capture policy (spec ``capture-invariant-inv-task-2.md``, invariant INV-TASK-2): a deterministic
pure function from one item's signals to what becomes of it.

Capture only ever *proposes*; acceptance is a user gesture that lives elsewhere. The outcome space is
exactly ``pending_candidate``, ``propose_enrichment``, ``propose_update``, ``propose_completion`` and
``ignore`` (spec "策略核心实现": 这里刻意不存在含义为立即写任务的 outcome). The two creating outcomes of
older capture code are *deleted, not disabled* (spec MUST NOT 1): they are no members of ``Outcome``,
and ``tools/check_capture_authority.py`` fails CI if one comes back.

    run_capture_policy(CaptureSignals.from_mapping({"explicit_command": True, "owner": "user",
                                                    "concrete_deliverable": True,
                                                    "capture_confidence": 0.9, "ownership_confidence": 1.0}))
    # CapturePolicyResult(outcome=<Outcome.PENDING_CANDIDATE>, interruption=<Interruption.NONE>,
    #                     candidate_action=<CandidateAction.CREATE>)

The signals model is strict (spec "信号输入": extra=forbid, confidences in [0, 1], owner an enum):
unknown fields, out-of-range confidences, owners other than user/other/unknown and wrongly typed
values raise ``CaptureSignalError``. Missing values fail closed: a missing ``concrete_deliverable`` or
confidence never passes the user capture floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, Mapping

#: spec "用户捕获底线": capture_confidence ≥ 0.8 and ownership_confidence ≥ 0.8
MINIMUM_CAPTURE_CONFIDENCE = 0.8
MINIMUM_OWNERSHIP_CONFIDENCE = 0.8


class Outcome(str, Enum):
    """Every outcome the capture policy can return (spec "全部策略输出"). None of them writes a task."""

    PENDING_CANDIDATE = "pending_candidate"
    PROPOSE_ENRICHMENT = "propose_enrichment"
    PROPOSE_UPDATE = "propose_update"
    PROPOSE_COMPLETION = "propose_completion"
    IGNORE = "ignore"


class Interruption(str, Enum):
    """How a proposal may interrupt the user: only a completion asks for an inline review."""

    NONE = "none"
    INLINE_REVIEW = "inline_review"


class CandidateAction(str, Enum):
    """What the proposed candidate would do *if the user accepts it* (spec: create / update / complete)."""

    CREATE = "create"
    UPDATE = "update"
    COMPLETE = "complete"


class TaskOwner(str, Enum):
    USER = "user"
    OTHER = "other"
    UNKNOWN = "unknown"


class CaptureSignalError(ValueError):
    """Signals that the strict model refuses; the message names the field."""


_BOOL_FIELDS = ("explicit_command", "clear_commitment", "direct_request", "inferred_next_step",
                "public_broadcast", "direct_mention", "already_done")
_TASK_REF_FIELDS = ("duplicate_of", "refines_task")
_CONFIDENCE_FIELDS = ("capture_confidence", "ownership_confidence")


@dataclass(frozen=True)
class CaptureSignals:
    """One capture item's signals (spec "信号输入": BackendCaptureSignals, extra=forbid).

    ``concrete_deliverable`` and the confidences default to ``None`` (not stated): they fail closed.
    ``duplicate_of`` / ``refines_task`` hold the id of the existing task, or ``None``.
    """

    explicit_command: bool = False
    clear_commitment: bool = False
    direct_request: bool = False
    inferred_next_step: bool = False
    concrete_deliverable: bool | None = None
    owner: TaskOwner = TaskOwner.UNKNOWN
    public_broadcast: bool = False
    direct_mention: bool = False
    already_done: bool = False
    duplicate_of: str | None = None
    refines_task: str | None = None
    capture_confidence: float | None = None
    ownership_confidence: float | None = None

    def __post_init__(self) -> None:
        # what passes a check at a glance (a bool, a ``TaskOwner``, a float in [0, 1]) skips its checker: signals are
        # built for every capture item of every scored query
        for name in _BOOL_FIELDS:
            value = getattr(self, name)
            if value is not True and value is not False:  # not isinstance(value, bool): bool has no subclasses
                _check_bool(name, value)
        value = self.concrete_deliverable
        if value is not None:
            _check_bool("concrete_deliverable", value)
        owner = self.owner
        if owner.__class__ is not TaskOwner:  # a member passes and is its own ``TaskOwner(owner)``
            if isinstance(owner, bool) or not isinstance(owner, (str, TaskOwner)) \
                    or owner not in TaskOwner._value2member_map_:
                raise CaptureSignalError(f"owner must be one of user, other, unknown, got {owner!r}")
            object.__setattr__(self, "owner", TaskOwner(owner))
        for name in _TASK_REF_FIELDS:
            ref = getattr(self, name)
            if ref is not None and (not isinstance(ref, str) or not ref.strip()):
                raise CaptureSignalError(f"{name} must be a non-empty task id or null, got {ref!r}")
        for name in _CONFIDENCE_FIELDS:
            value = getattr(self, name)
            if value is not None and (value.__class__ is not float or not 0.0 <= value <= 1.0):
                _check_confidence(name, value)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_mapping(cls, signals: Mapping[str, Any]) -> "CaptureSignals":
        """Strict construction from a JSON object: an unknown field is an error, not ignored."""
        if not isinstance(signals, Mapping):
            raise CaptureSignalError(f"signals must be an object, got {type(signals).__name__}")
        unknown = sorted(set(signals) - set(cls.field_names()))
        if unknown:
            raise CaptureSignalError(f"unknown signal field(s): {', '.join(map(str, unknown))}")
        return cls(**signals)


def _check_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise CaptureSignalError(f"{name} must be true or false, got {value!r}")


def _check_confidence(name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise CaptureSignalError(f"{name} must be a number in [0, 1] or null, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise CaptureSignalError(f"{name} out of [0, 1]: {value!r}")


@dataclass(frozen=True)
class CapturePolicyResult:
    """The policy's answer for one item; ``candidate_action`` is ``None`` exactly when it is ignored."""

    outcome: Outcome
    interruption: Interruption = Interruption.NONE
    candidate_action: CandidateAction | None = None


IGNORE = CapturePolicyResult(Outcome.IGNORE)
PENDING = CapturePolicyResult(Outcome.PENDING_CANDIDATE, Interruption.NONE, CandidateAction.CREATE)


def meets_user_capture_floor(signals: CaptureSignals) -> bool:
    """Spec "用户捕获底线" (_meets_user_capture_floor), the one hard gate: owner is the user,
    ``concrete_deliverable is True`` (explicitly; missing fails closed), capture_confidence ≥ 0.8 and
    ownership_confidence ≥ 0.8 (missing confidences fail closed)."""
    return (signals.owner is TaskOwner.USER
            and signals.concrete_deliverable is True
            and signals.capture_confidence is not None
            and signals.capture_confidence >= MINIMUM_CAPTURE_CONFIDENCE
            and signals.ownership_confidence is not None
            and signals.ownership_confidence >= MINIMUM_OWNERSHIP_CONFIDENCE)


def already_done_step(signals: CaptureSignals) -> CapturePolicyResult | None:
    """Spec order 1: already_done → propose_completion, reviewed inline (the user confirms it)."""
    if signals.already_done:
        return CapturePolicyResult(Outcome.PROPOSE_COMPLETION, Interruption.INLINE_REVIEW, CandidateAction.COMPLETE)
    return None


def duplicate_step(signals: CaptureSignals) -> CapturePolicyResult | None:
    """Spec order 2: duplicate_of → propose_enrichment (enrich the existing task, never a second one)."""
    if signals.duplicate_of is not None:
        return CapturePolicyResult(Outcome.PROPOSE_ENRICHMENT, Interruption.NONE, CandidateAction.UPDATE)
    return None


def refinement_step(signals: CaptureSignals) -> CapturePolicyResult | None:
    """Spec order 3: refines_task → propose_update."""
    if signals.refines_task is not None:
        return CapturePolicyResult(Outcome.PROPOSE_UPDATE, Interruption.NONE, CandidateAction.UPDATE)
    return None


def explicit_command_step(signals: CaptureSignals) -> CapturePolicyResult | None:
    """Spec order 4: an explicit command is decided before public_broadcast (显式口头指令不是环境噪音):
    through the floor → pending_candidate, otherwise ignore."""
    if signals.explicit_command:
        return PENDING if meets_user_capture_floor(signals) else IGNORE
    return None


def public_broadcast_step(signals: CaptureSignals) -> CapturePolicyResult | None:
    """Spec order 5: a public broadcast without a direct mention is ignored."""
    if signals.public_broadcast and not signals.direct_mention:
        return IGNORE
    return None


def clear_commitment_step(signals: CaptureSignals) -> CapturePolicyResult | None:
    """Spec order 6: the user's own clear commitment; no concrete deliverable → ignore, through the
    floor → pending_candidate. Even the strongest commitment only earns a suggestion (I1)."""
    if signals.clear_commitment and signals.owner is TaskOwner.USER:
        if signals.concrete_deliverable is not True:
            return IGNORE
        return PENDING if meets_user_capture_floor(signals) else IGNORE
    return None


def direct_request_step(signals: CaptureSignals) -> CapturePolicyResult | None:
    """Spec order 7: a direct request through the floor → pending_candidate."""
    if signals.direct_request and meets_user_capture_floor(signals):
        return PENDING
    return None


def inferred_next_step_step(signals: CaptureSignals) -> CapturePolicyResult | None:
    """Spec order 8: an inferred next step through the floor → pending_candidate (no weaker channel
    than a direct request: vague, unowned or low-confidence suggestions are refused)."""
    if signals.inferred_next_step and meets_user_capture_floor(signals):
        return PENDING
    return None


#: the spec's order ("判定顺序"), highest priority first; anything left over is ignored
POLICY_STEPS = (already_done_step, duplicate_step, refinement_step, explicit_command_step, public_broadcast_step,
                clear_commitment_step, direct_request_step, inferred_next_step_step)


def run_capture_policy(signals: CaptureSignals) -> CapturePolicyResult:
    """Spec run_capture_policy: the first step of ``POLICY_STEPS`` that decides, else ignore.

    Deterministic and pure: same signals, same result; it reads nothing and writes nothing."""
    if not isinstance(signals, CaptureSignals):
        raise CaptureSignalError(f"run_capture_policy needs CaptureSignals, got {type(signals).__name__}")
    for step in POLICY_STEPS:
        result = step(signals)
        if result is not None:
            return result
    return IGNORE
