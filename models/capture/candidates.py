"""From a scored query's automation groups to the record's ``candidates`` (DESIGN.md "How capture
applies to voice queries"; spec ``capture-invariant-inv-task-2.md``, INV-TASK-2).

Every group that would create or change a task — a non-null condition, or ``default`` (super-task or
memo management) — is a capture item. Each item gets its own signals and its own policy decision, so a
rejected item never drags its siblings anywhere (spec MUST NOT 6: 策略拒绝是逐条的). Plain commands
(condition ``null``) are no tasks and yield no entry at all. This module only *proposes*: it returns
dicts for the record and calls nothing that accepts or writes a task.

Signals of one item:

- ``explicit_command``: the user is speaking to the assistant;
- ``owner``: ``user``; a built-in vehicle behaviour (``"builtin": true``) is the vehicle's, not a user
  task: ``other``, so it never passes the floor;
- ``concrete_deliverable``: the group has at least one subquery (a pure condition → ``ignore``);
- ``capture_confidence``: the automation parser's confidence in the group (lowest CRF marginal over
  its characters); where the parser gives none, the router's label confidence;
- ``ownership_confidence``: 1.0 (relayed speech is not detected yet);
- ``duplicate_of`` / ``refines_task``: from the caller's ``existing_tasks`` (see ``match_existing``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

from fastslow.features.normalise import fold

from fastslow.models.capture.policy import CandidateAction, CaptureSignals, TaskOwner, run_capture_policy

DEFAULT_CONDITION = "default"
#: words that ask to change (or drop) a named habit / rule / task: such a group refines that task
CHANGE_WORDS = ("修改", "更改", "改成", "改为", "改一下", "调整", "更新", "换成", "变成", "加上", "增加", "添加",
                "去掉", "删除", "删掉", "取消")
#: the identity of a condition, subquery or task name: ``features.text.fold`` (the one normaliser,
#: without spaces and punctuation), so 上车时， 打开 空调 == 上车时打开空调
normalise_text = fold
#: ``json.dumps(..., ensure_ascii=False)``, built once rather than per call (a dumps with options builds a new
#: encoder each time)
_JSON = json.JSONEncoder(ensure_ascii=False)
#: a string as ``_JSON`` writes it (the function its encoder quotes strings with): an identity and a key are
#: written from their parts, as ``_JSON`` would write them, without its per-call encoder (~1.5 us each)
_QUOTED = json.encoder.encode_basestring


def is_capture_item(group: dict) -> bool:
    """A group that would create or change a task: its condition is not null (``default`` included)."""
    return group.get("condition") is not None


def normalised_group(group: dict) -> str:
    """The group's identity for idempotency and duplicate detection: normalised condition and the
    normalised subqueries in order (intents are the model's, not the user's words: left out)."""
    # json.dumps({"condition": ..., "querys": [...]}, ensure_ascii=False, sort_keys=True): two strings and a list
    # of strings (``normalise_text`` gives a string for anything), the keys in sorted order
    querys = ", ".join([_QUOTED(normalise_text(q.get("subquery"))) for q in group.get("querys") or []])
    return f'{{"condition": {_QUOTED(normalise_text(group.get("condition")))}, "querys": [{querys}]}}'


def idempotency_key(query_id: Any, query: str, group: dict, occurrence: int) -> str:
    """sha256 of (query id, or the normalised query when there is none) + normalised group +
    occurrence index: the same log line scored twice gives the same keys; two equal groups in one
    query differ by their occurrence."""
    return _key(_key_source(query_id, query), normalised_group(group), occurrence)


def _key_source(query_id: Any, query: str) -> list:
    return ["id", query_id] if query_id is not None else ["query", normalise_text(query)]


def _key(source: list, identity: str, occurrence: int) -> str:
    """``idempotency_key`` from its parts: the query's ``_key_source`` and the group's ``normalised_group``."""
    blob = "[" + ", ".join([_json_scalar(part) for part in (*source, identity, occurrence)]) + "]"  # _JSON.encode([...])
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _json_scalar(value: Any) -> str:
    """``_JSON.encode(value)``: a string or an integer (a query id, an occurrence) written directly, anything
    else by the encoder."""
    if value.__class__ is str:
        return _QUOTED(value)
    if value.__class__ is int:
        return int.__repr__(value)  # as the encoder writes an integer
    return _JSON.encode(value)


def _same_task(group: dict, task: dict) -> bool:
    return (normalise_text(group.get("condition")) == normalise_text(task.get("condition"))
            and sorted(normalise_text(q.get("subquery")) for q in group.get("querys") or [])
            == sorted(normalise_text(q.get("subquery")) for q in task.get("querys") or []))


def match_existing(query: str, group: dict, existing_tasks: Sequence[dict]) -> tuple[str | None, str | None]:
    """``(duplicate_of, refines_task)`` for one group against the user's existing tasks.

    - duplicate: an existing task with the same condition and the same subqueries (normalised);
    - refinement: the query names an existing task (its ``name``) and asks to change it (a word of
      ``CHANGE_WORDS``), or the group keeps an existing task's condition but changes its actions
      while asking for a change.
    """
    if not existing_tasks:  # nothing to duplicate or refine
        return None, None
    for task in existing_tasks:
        if _same_task(group, task):
            return str(task["id"]), None
    text = normalise_text(query)
    if not any(word in text for word in CHANGE_WORDS):
        return None, None
    for task in existing_tasks:
        name = normalise_text(task.get("name"))
        if name and name in text:
            return None, str(task["id"])
    condition = normalise_text(group.get("condition"))
    if condition and group.get("condition") != DEFAULT_CONDITION:
        for task in existing_tasks:
            if normalise_text(task.get("condition")) == condition:
                return None, str(task["id"])
    return None, None


def group_signals(query: str, group: dict, confidence: float | None, existing_tasks: Sequence[dict]) -> CaptureSignals:
    """The capture signals of one capture item (see the module doc)."""
    builtin = bool(group.get("builtin"))
    duplicate_of, refines_task = (None, None) if builtin else match_existing(query, group, existing_tasks)
    return CaptureSignals(
        explicit_command=True,
        owner=TaskOwner.OTHER if builtin else TaskOwner.USER,
        concrete_deliverable=bool(group.get("querys")),
        capture_confidence=None if confidence is None else min(1.0, max(0.0, float(confidence))),
        ownership_confidence=1.0,
        duplicate_of=duplicate_of,
        refines_task=refines_task,
    )


def capture_candidates(item: dict, groups: Sequence[dict], group_confidences: Sequence[float | None] | None,
                       fallback_confidence: float | None) -> list[dict]:
    """One entry per capture item of ``groups``, in order, each decided on its own.

    ``item`` is the validated input (``id``, ``query``, ``existing_tasks``); ``group_confidences`` the
    parser's per-group confidence (``None`` entries, or no list, fall back to ``fallback_confidence``,
    the router's label confidence). Entries whose outcome is ``ignore`` are kept (with
    ``candidate_action`` null) so the decision is visible; only the others are proposals."""
    confidences = group_confidences if group_confidences is not None else [None] * len(groups)
    out: list[dict] = []
    source = None  # the query's part of every idempotency key, once per query with a capture item (few have one)
    for group, confidence in zip(groups, confidences):
        if not is_capture_item(group):
            continue
        if source is None:
            source = _key_source(item.get("id"), item["query"])
            existing = item.get("existing_tasks") or []
            seen: dict[str, int] = {}
        identity = normalised_group(group)
        occurrence = seen.get(identity, 0)
        seen[identity] = occurrence + 1
        confidence = fallback_confidence if confidence is None else confidence
        signals = group_signals(item["query"], group, confidence, existing)
        result = run_capture_policy(signals)
        action = result.candidate_action
        entry = {  # a member's ``_value_`` is its ``value``, read without the enum property's Python call (~0.3 us)
            "outcome": result.outcome._value_,
            "interruption": result.interruption._value_,
            "candidate_action": action._value_ if action is not None else None,
            "condition": group["condition"],
            "querys": [dict(q) for q in group.get("querys") or []],
            "capture_confidence": signals.capture_confidence,
            "idempotency_key": _key(source, identity, occurrence),  # idempotency_key(id, query, group, occurrence)
        }
        target = signals.duplicate_of or signals.refines_task
        if target is not None and action is not None and action is not CandidateAction.CREATE:
            entry["target_task_id"] = target
        out.append(entry)
    return out
