"""The one record type: input validation and the output record, shared by the CLI, the server and
batch scoring so that they cannot drift (DESIGN.md "One record per query")."""

from __future__ import annotations

from typing import Any

from fastslow.models.routing.rules import Route, default_route, fast_system_pending
from fastslow.models.taxonomy import ENDPOINTS

ROLES = ("user", "assistant")
SYSTEMS = ("fast", "slow", None)
DEFAULT_MAX_QUERY_CHARS = 1000


class InputError(ValueError):
    """A row that cannot be scored; ``field`` names the offending field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


def _objects(value: Any, field: str, allowed: tuple[str, ...] | None = None) -> list[tuple[str, dict]]:
    """``(where, item)`` for a JSON list of objects, or ``InputError`` naming the list, the item or,
    when ``allowed`` is given, the first unknown field of an item."""
    if not isinstance(value, list):
        raise InputError(field, f"must be a list, got {type(value).__name__}")
    items = []
    for i, item in enumerate(value):
        where = f"{field}[{i}]"
        if not isinstance(item, dict):
            raise InputError(where, f"must be an object, got {type(item).__name__}")
        unknown = sorted(set(item) - set(allowed)) if allowed is not None else []
        if unknown:
            raise InputError(f"{where}.{unknown[0]}", f"unknown field (allowed: {', '.join(allowed)})")
        items.append((where, item))
    return items


def _check_context(context: Any) -> list[dict]:
    if context is None:
        return []
    turns = []
    for where, turn in _objects(context, "context"):
        role, system, text = turn.get("role"), turn.get("system"), turn.get("text")
        if role not in ROLES:
            raise InputError(f"{where}.role", f"must be one of {list(ROLES)}, got {role!r}")
        if system not in SYSTEMS:
            raise InputError(f"{where}.system", f"must be 'fast', 'slow' or null, got {system!r}")
        if not isinstance(text, str):
            raise InputError(f"{where}.text", f"must be a string, got {type(text).__name__}")
        turns.append({"role": role, "system": system, "text": text})
    return turns


def validate_input(raw: Any, max_query_chars: int = DEFAULT_MAX_QUERY_CHARS) -> dict:
    """A clean input dict (query, id, context, endpoint, existing_tasks) or ``InputError``.

    Unknown fields are ignored: logs carry columns of their own.
    """
    if not isinstance(raw, dict):
        raise InputError("row", f"must be a JSON object, got {type(raw).__name__}")
    if "query" not in raw or raw["query"] is None:
        raise InputError("query", "missing")
    query = raw["query"]
    if not isinstance(query, str):
        raise InputError("query", f"must be a string, got {type(query).__name__}")
    if not query.strip():
        raise InputError("query", "empty or whitespace only")
    if len(query) > max_query_chars:
        raise InputError("query", f"too long: {len(query)} characters (limit {max_query_chars})")
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in query):
        raise InputError("query", "not valid UTF-8 text")
    qid = raw.get("id")
    if qid is not None and (isinstance(qid, bool) or not isinstance(qid, (str, int))):
        raise InputError("id", f"must be a string or an integer, got {type(qid).__name__}")
    endpoint = raw.get("endpoint")
    if endpoint is not None and endpoint not in ENDPOINTS:
        raise InputError("endpoint", f"must be one of {list(ENDPOINTS)} or null, got {endpoint!r}")
    item = {"id": qid, "query": query, "context": _check_context(raw.get("context")),
            "endpoint": endpoint, "existing_tasks": _check_existing_tasks(raw.get("existing_tasks"))}
    explain = raw.get("explain")
    if explain is not None and not isinstance(explain, bool):
        raise InputError("explain", f"must be true or false, got {type(explain).__name__}")
    if explain:  # the record gets an ``explanation`` (models.pipeline)
        item["explain"] = True
    return item


TASK_FIELDS = ("id", "name", "condition", "querys")
TASK_QUERY_FIELDS = ("subquery", "intent")


def _check_existing_tasks(existing: Any) -> list[dict]:
    """The caller's existing tasks, strictly: ``[{"id", "name"?, "condition"?, "querys"?}]``; unknown
    fields and wrong types are errors naming the field (``existing_tasks[0].querys``)."""
    if existing is None:
        return []
    tasks = []
    for where, task in _objects(existing, "existing_tasks", TASK_FIELDS):
        tid = task.get("id")
        if tid is None or isinstance(tid, bool) or not isinstance(tid, (str, int)) or str(tid).strip() == "":
            raise InputError(f"{where}.id", f"must be a non-empty string or an integer, got {tid!r}")
        for name in ("name", "condition"):
            if task.get(name) is not None and not isinstance(task[name], str):
                raise InputError(f"{where}.{name}", f"must be a string or null, got {type(task[name]).__name__}")
        querys = task.get("querys")
        clean = []
        for qwhere, q in _objects([] if querys is None else querys, f"{where}.querys", TASK_QUERY_FIELDS):
            if not isinstance(q.get("subquery"), str):
                raise InputError(f"{qwhere}.subquery", f"must be a string, got {type(q.get('subquery')).__name__}")
            if q.get("intent") is not None and not isinstance(q["intent"], str):
                raise InputError(f"{qwhere}.intent", f"must be a string or null, got {type(q['intent']).__name__}")
            clean.append({"subquery": q["subquery"], "intent": q.get("intent")})
        tasks.append({"id": tid, "name": task.get("name"), "condition": task.get("condition"), "querys": clean})
    return tasks


def route_fields(route: Route) -> dict:
    return {"label": route.label, "primary_reason_code": route.primary_reason_code}


def build_record(item: dict, route: Route, subrequests: list[Route], review: bool,
                 model_version: str, automation: list[dict] | None = None,
                 candidates: list[dict] | None = None) -> dict:
    """The output record of one scored query (field order as in DESIGN.md); ``automation`` is the
    parser's groups (spec automation-tasks.md), empty when the model has no parser; ``candidates`` the
    capture policy's decision per capture item (``models/capture_wiring.py``), proposals only."""
    return {
        "id": item.get("id"),
        "query": item["query"],
        "label": route.label,
        "default_route": default_route(route.label),
        "primary_reason_code": route.primary_reason_code,
        "reason_codes": list(route.reason_codes),
        "confidence": route.confidence,
        "review_required": review,
        "fast_system_pending": fast_system_pending(),
        "subrequests": [{"text": s.text, **route_fields(s)} for s in subrequests],
        "automation": automation if automation is not None else [],
        "candidates": candidates if candidates is not None else [],
        "model_version": model_version,
    }


def error_record(qid: Any, query: Any, error: str, line: int | None = None) -> dict:
    """The record of a row that could not be scored: its id (or line number) and a clear error."""
    record = {"id": qid, "query": query if isinstance(query, str) else None, "error": error}
    if line is not None:
        record["line"] = line
    return record
