"""The one record type: its schema (pydantic models), input validation and the output record, shared by
the CLI, the server, batch scoring and the pyfunc model so that they cannot drift (DESIGN.md "One record
per query").

The pydantic models below are the schema: field names, order, types and limits of an input row
(``RouteInput``), a scored record (``Record``) and an error record (``ErrorRecord``). They give the
server's OpenAPI description, the pyfunc signature's input columns, and the flat layout of the CSV and
Parquet writers (``record_layout``; ``data/sinks.py`` sits below the models and keeps its copy, which a
test holds equal). Rows are validated by ``validate_input``, hand-written because it is ~10x cheaper per
row than building a model and its error messages name the field as the record needs
(``context[0].role: ...``); a property test holds it to the models: it accepts exactly the inputs the
models accept.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints

from fastslow.data.io import bad_json_value, bad_value_error, has_surrogate, json_clean
from fastslow.models.capture.policy import CandidateAction, Interruption, Outcome
from fastslow.models.routing.rules import Route, default_route, fast_system_pending
from fastslow.models.taxonomy import DEFAULT_ROUTE, ENDPOINTS, LABELS, REASON_CODES

DEFAULT_MAX_QUERY_CHARS = 1000
ECHO_CHARS = 200  # of a query over the limit, repeated in its error record

#: what ``str.strip`` removes (Python's whitespace, which JSON Schema's ``\s`` does not match exactly:
#: U+001C..U+001F and U+0085 are whitespace to Python only, U+FEFF to ECMAScript only); none is above U+3000
WHITESPACE = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())


def _char_class(chars: str, negate: bool = False) -> str:
    """A regex character class of ``chars`` as ``\\uXXXX`` ranges, the same in Python and ECMAScript."""
    codes, parts, i = sorted(map(ord, chars)), [], 0
    while i < len(codes):
        j = i
        while j + 1 < len(codes) and codes[j + 1] == codes[j] + 1:
            j += 1
        parts.append(f"\\u{codes[i]:04x}" + (f"-\\u{codes[j]:04x}" if j > i else ""))
        i = j + 1
    return "[" + ("^" if negate else "") + "".join(parts) + "]"


#: a text that is not empty or whitespace only (``text.strip()`` is not empty): one character outside
#: ``WHITESPACE`` somewhere (JSON Schema patterns are searched, not anchored)
NOT_BLANK = _char_class(WHITESPACE, negate=True)

Label = Literal[LABELS]
ReasonCode = Literal[REASON_CODES]
Endpoint = Literal[ENDPOINTS]
Role = Literal["user", "assistant"]
System = Literal["fast", "slow"]
NonBlank = Annotated[str, StringConstraints(min_length=1, pattern=NOT_BLANK)]
ROLES: tuple[str, ...] = get_args(Role)
SYSTEMS: tuple[str | None, ...] = (*get_args(System), None)


# --------------------------------------------------------------------------------------------------
# the schema: input


class Turn(BaseModel):
    """One earlier turn of the conversation, oldest first: who spoke, which system answered an
    assistant turn (or null), and the text. Other fields of a turn are ignored."""

    model_config = ConfigDict(extra="allow", strict=True, regex_engine="python-re")
    role: Role
    system: Optional[System] = None
    text: str


class TaskQuery(BaseModel):
    """One action of an existing task."""

    model_config = ConfigDict(extra="forbid", strict=True, regex_engine="python-re")
    subquery: str
    intent: Optional[str] = None


class ExistingTask(BaseModel):
    """One of the user's current automations or memos: capture proposes enrichments and updates of it
    instead of duplicates."""

    model_config = ConfigDict(extra="forbid", strict=True, regex_engine="python-re")
    id: Union[NonBlank, StrictInt]
    name: Optional[str] = None
    condition: Optional[str] = None
    querys: Optional[list[TaskQuery]] = None


class RouteInput(BaseModel):
    """One query to score. Unknown fields are ignored (logs carry columns of their own)."""

    model_config = ConfigDict(extra="allow", strict=True, regex_engine="python-re", json_schema_extra={
        "example": {"id": "r1", "query": "把空调调到24度，然后打开座椅加热", "endpoint": "car",
                    "context": [{"role": "user", "system": None, "text": "导航去公司"},
                                {"role": "assistant", "system": "fast", "text": "好的，已为你规划路线"}]}})
    query: Annotated[NonBlank, StringConstraints(max_length=DEFAULT_MAX_QUERY_CHARS)] = Field(
        description="the utterance; not empty or whitespace only, at most the model's max_query_chars "
                    "characters, valid UTF-8")
    id: Union[str, StrictInt, None] = Field(None, description="passed through to the record")
    context: Optional[list[Turn]] = Field(None, description="earlier turns, oldest first")
    endpoint: Optional[Endpoint] = Field(None, description="the device the query was spoken to")
    existing_tasks: Optional[list[ExistingTask]] = Field(
        None, description="the user's current automations and memos (capture proposes enrichments and "
                          "updates of them instead of duplicates)")


#: the input fields, in the schema's order (the pyfunc's and the table readers' columns)
INPUT_FIELDS: tuple[str, ...] = tuple(RouteInput.model_fields)
TASK_FIELDS: tuple[str, ...] = tuple(ExistingTask.model_fields)
TASK_QUERY_FIELDS: tuple[str, ...] = tuple(TaskQuery.model_fields)


# --------------------------------------------------------------------------------------------------
# the schema: output


class Subrequest(BaseModel):
    """One part of a query split at its connectors, routed on its own."""

    text: str
    label: Label
    primary_reason_code: ReasonCode


class AutomationQuery(BaseModel):
    subquery: str
    intent: Optional[str] = None


class AutomationGroup(BaseModel):
    """One condition and its actions (spec automation-tasks.md); ``condition`` is null for a plain
    action and ``default`` for an unconditional managed task."""

    condition: Optional[str]
    querys: list[AutomationQuery]
    builtin: Optional[bool] = Field(None, description="true for a built-in vehicle behaviour (absent otherwise)")


class Candidate(BaseModel):
    """The capture policy's decision for one group (INV-TASK-2): a proposal at most, never a written task."""

    outcome: Literal[tuple(o.value for o in Outcome)]
    interruption: Literal[tuple(i.value for i in Interruption)]
    candidate_action: Optional[Literal[tuple(a.value for a in CandidateAction)]]
    condition: Optional[str]
    querys: list[AutomationQuery]
    capture_confidence: Optional[Annotated[float, Field(ge=0, le=1)]]
    idempotency_key: str
    target_task_id: Optional[str] = Field(None, description="the existing task an enrichment or update "
                                                            "targets (absent otherwise)")


class Record(BaseModel):
    """The ``fastslow score`` record of one query (field order as in DESIGN.md)."""

    id: Union[str, StrictInt, None]
    query: str
    label: Label
    default_route: Literal[tuple(dict.fromkeys(DEFAULT_ROUTE.values()))]
    primary_reason_code: ReasonCode
    reason_codes: list[ReasonCode]
    confidence: Annotated[float, Field(ge=0, le=1)]
    review_required: bool
    fast_system_pending: None = Field(description="null until a capability list says otherwise")
    subrequests: list[Subrequest]
    automation: list[AutomationGroup]
    candidates: list[Candidate]
    model_version: str
    explanation: Optional[dict] = Field(
        None, description="only when asked (`explain`): per routed (sub)request each feature's share of the "
                          "logit margin over the runner-up label, and the automation spans with their confidence")


class ErrorRecord(BaseModel):
    """The record of a row that could not be scored: its id (as given, unless it is not a finite JSON
    value), its query (when it is text) and an error naming the field; ``line`` in files only."""

    id: Any
    query: Optional[str]
    error: str
    line: Optional[int] = Field(None, description="the input line or row (files only)")


_KINDS = {str: "text", float: "float", bool: "bool", int: "int"}


def _kind(annotation: Any) -> str:
    """The flat-table kind of a field: ``text`` for text (or text or an integer: an id), a number, a
    boolean, an integer, else ``json`` (lists, objects, null)."""
    args = [a for a in (get_args(annotation) if get_origin(annotation) is Union else (annotation,))
            if a is not type(None)]
    args = [get_args(a)[0] if get_origin(a) is Annotated else a for a in args]
    if args and args[0] is str:
        return "text"
    if len(args) == 1 and args[0] in _KINDS:
        return _KINDS[args[0]]
    if len(args) == 1 and get_origin(args[0]) is Literal:
        return "text"
    return "json"


def record_layout() -> tuple[tuple[str, str], ...]:
    """The columns of a record table: the record's fields (not the ``explanation`` asked for with
    ``--explain``), then the error record's own, each with its kind (``data.sinks.Layout``)."""
    columns = {name: _kind(f.annotation) for name, f in Record.model_fields.items() if f.is_required()}
    for name, f in ErrorRecord.model_fields.items():
        columns.setdefault(name, _kind(f.annotation))
    return tuple(columns.items())


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
            raise InputError(f"{where}.{echo(unknown[0])}", f"unknown field (allowed: {', '.join(allowed)})")
        items.append((where, item))
    return items


def _check_context(context: Any) -> list[dict]:
    if context is None or (context.__class__ is list and not context):  # most queries come without earlier turns
        return []
    turns = []
    for where, turn in _objects(context, "context"):
        role, system, text = turn.get("role"), turn.get("system"), turn.get("text")
        if role not in ROLES:
            raise InputError(f"{where}.role", f"must be one of {list(ROLES)}, got {shown(role)}")
        if system not in SYSTEMS:
            raise InputError(f"{where}.system", f"must be 'fast', 'slow' or null, got {shown(system)}")
        if not isinstance(text, str):
            raise InputError(f"{where}.text", f"must be a string, got {type(text).__name__}")
        turns.append({"role": role, "system": system, "text": text})
    return turns


def validate_input(raw: Any, max_query_chars: int = DEFAULT_MAX_QUERY_CHARS, values_checked: bool = False) -> dict:
    """A clean input dict (query, id, context, endpoint, existing_tasks) or ``InputError``.

    Unknown fields are ignored: logs carry columns of their own. ``values_checked``: the caller found no
    value of ``raw`` that ``bad_json_value`` refuses (the server checks a whole body first), so its
    checks of the query and of each field are not run again: they could not fail.
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
    if not values_checked:
        if has_surrogate(query):
            raise InputError("query", "not valid UTF-8 text")
        for name in ("id", "context", "endpoint", "existing_tasks"):  # echoed or hashed: UTF-8 and JSON
            value = raw.get(name)
            if value is not None and not json_clean(value):  # most rows leave most of them out; nearly all are clean
                raise InputError(*bad_value_error(bad_json_value(value, name)))
    qid = raw.get("id")
    if qid is not None and (isinstance(qid, bool) or not isinstance(qid, (str, int))):
        raise InputError("id", f"must be a string or an integer, got {type(qid).__name__}")
    endpoint = raw.get("endpoint")
    if endpoint is not None and endpoint not in ENDPOINTS:
        raise InputError("endpoint", f"must be one of {list(ENDPOINTS)} or null, got {shown(endpoint)}")
    item = {"id": qid, "query": query, "context": _check_context(raw.get("context")),
            "endpoint": endpoint, "existing_tasks": _check_existing_tasks(raw.get("existing_tasks"))}
    explain = raw.get("explain")
    if explain is not None and not isinstance(explain, bool):
        raise InputError("explain", f"must be true or false, got {type(explain).__name__}")
    if explain:  # the record gets an ``explanation`` (models.pipeline)
        item["explain"] = True
    return item


def _check_existing_tasks(existing: Any) -> list[dict]:
    """The caller's existing tasks, strictly: ``[{"id", "name"?, "condition"?, "querys"?}]``; unknown
    fields and wrong types are errors naming the field (``existing_tasks[0].querys``)."""
    if existing is None:
        return []
    tasks = []
    for where, task in _objects(existing, "existing_tasks", TASK_FIELDS):
        tid = task.get("id")
        if tid is None or isinstance(tid, bool) or not isinstance(tid, (str, int)) or str(tid).strip() == "":
            raise InputError(f"{where}.id", f"must be a non-empty string or an integer, got {shown(tid)}")
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
        "subrequests": [{"text": s.text, "label": s.label, "primary_reason_code": s.primary_reason_code}
                        for s in subrequests],
        "automation": automation if automation is not None else [],
        "candidates": candidates if candidates is not None else [],
        "model_version": model_version,
    }


def echo(query: Any) -> str | None:
    """The query as an error record repeats it: text over ``DEFAULT_MAX_QUERY_CHARS`` is cut to its first
    ``ECHO_CHARS`` and its length (a 50 MB query must not make a 50 MB record); anything else as None."""
    if not isinstance(query, str):
        return None
    if has_surrogate(query):  # no UTF-8 writer can encode it: shown as U+FFFD
        query = "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in query)
    return query if len(query) <= DEFAULT_MAX_QUERY_CHARS else f"{query[:ECHO_CHARS]}… ({len(query)} characters)"


def shown(value: Any) -> str:
    """A wrong value as an error message repeats it: text as ``echo`` repeats a query (50 MB of it must not
    make a 50 MB message), anything else by its type."""
    return repr(echo(value)) if isinstance(value, str) else type(value).__name__


def error_record(qid: Any, query: Any, error: str, line: int | None = None) -> dict:
    """The record of a row that could not be scored: its id (or line number), its query (``echo``) and a
    clear error. An id that JSON cannot hold (``NaN``, ``1e400``) is not echoed: it becomes null."""
    record = {"id": qid if bad_json_value(qid) is None else None, "query": echo(query),
              "error": error}
    if line is not None:
        record["line"] = line
    return record
