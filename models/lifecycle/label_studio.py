"""The labelling round trip through Label Studio: a log → review tasks → annotations → training rows.

- ``labelling_config``: the project's labelling interface (XML), generated from the taxonomy
  (``data/taxonomy/reason_codes.tsv``) and the intents (``data/taxonomy/intents.tsv``): the query with
  its context and endpoint, a choice of label and of primary reason code, and the automation groups as
  JSON text.
- ``review_tasks``: one task per distinct query of a log (normalised text, context and endpoint), with
  how often the log holds it, ranked by how much a label would teach (``teaching_value``), the model's
  answer as a pre-annotation (``predictions``) the annotator accepts or corrects.
- ``read_export``: Label Studio's JSON export (or JSON-MIN) back as rows for ``train.py --data``;
  annotated tasks become rows, skipped and unannotated ones are counted and left out.

Only the standard library: Label Studio and its SDK run in their own environment (they pin numpy and
pyarrow below the versions the model runs with); the files are their documented import and export
formats.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

from fastslow.models.taxonomy import CODE_LABEL, LABELS

#: the names of the labelling config's controls: also the columns of a training row (JSON-MIN export)
QUERY, LABEL, CODE, AUTOMATION = "query", "label", "primary_reason_code", "automation"
#: the reason code the router gives an automation (a condition and its actions) under XA4.1
AUTOMATION_CODE = "AUTOMATION_SLOW_POLICY"
NO_ENDPOINT = "unknown"


# --------------------------------------------------------------------------------------------------
# the labelling interface


def labelling_config(codes: dict[str, str] | None = None, intents: tuple[str, ...] | None = None) -> str:
    """The Label Studio labelling config (XML) for ``codes`` (reason code → label, default the taxonomy)
    and ``intents`` (default ``data/taxonomy/intents.tsv``)."""
    if intents is None:
        from fastslow.models.automation.intents import IntentTaxonomy

        intents = IntentTaxonomy.load().intents
    codes = CODE_LABEL if codes is None else codes
    label_choices = "".join(f"\n    <Choice value={quoteattr(label)}/>" for label in LABELS)
    code_choices = "".join(f"\n    <Choice value={quoteattr(code)} hint={quoteattr(label)}/>"
                           for code, label in codes.items())
    groups_help = ('automation groups, JSON: [{"condition": "...", "querys": [{"subquery": "...", "intent": "..."}]}]'
                   " (empty or [] when the query is no automation); intents: " + ", ".join(intents))
    return f"""<View>
  <Header value="$endpoint · $count× in the log · model: $model_label $model_code ($model_confidence) · $why" size="6"/>
  <Text name="context" value="$context_text"/>
  <Text name="{QUERY}" value="${QUERY}"/>
  <Header value="label (XA4.1)" size="5"/>
  <Choices name="{LABEL}" toName="{QUERY}" choice="single" showInline="true" required="true">{label_choices}
  </Choices>
  <Header value="primary reason code (its label in the hint)" size="5"/>
  <Choices name="{CODE}" toName="{QUERY}" choice="single" showInline="true" required="true">{code_choices}
  </Choices>
  <Header value={quoteattr(groups_help)} size="6"/>
  <TextArea name="{AUTOMATION}" toName="{QUERY}" rows="3" editable="true" maxSubmissions="1"/>
</View>
"""


# --------------------------------------------------------------------------------------------------
# review tasks from a log


def _context(value) -> list:
    if isinstance(value, str) and value.strip():
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    return value if isinstance(value, list) else []


def context_text(context: list) -> str:
    """Earlier turns as lines ``assistant (slow): text`` for the annotator; empty without context."""
    lines = []
    for turn in context:
        if isinstance(turn, dict):
            who = str(turn.get("role", "?")) + (f" ({turn['system']})" if turn.get("system") else "")
            lines.append(f"{who}: {turn.get('text', '')}")
    return "\n".join(lines)


def disagreement(record: dict) -> bool:
    """The router and the automation parser disagree: the router calls the query an automation and the
    parser finds no condition, or the parser finds a condition and the router does not call it one."""
    router_says = AUTOMATION_CODE in (record.get("reason_codes") or [record.get("primary_reason_code")])
    parser_says = any(g.get("condition") not in (None, "", "default") for g in record.get("automation") or [])
    return router_says != parser_says


def teaching_value(record: dict, count: int) -> float:
    """How much a label for this query would teach: the model's doubt (1 − confidence), one more when
    the router and the parser disagree, times log2(1 + how often the log holds it)."""
    doubt = 1.0 - float(record.get("confidence", 0.0)) + (1.0 if disagreement(record) else 0.0)
    return round(doubt * math.log2(1 + count), 4)


def _why(record: dict, count: int) -> str:
    reasons = [f"confidence {record.get('confidence', 0.0):.2f}"]
    if disagreement(record):
        reasons.append("router and parser disagree")
    return "; ".join(reasons + [f"{count}× in the log"])


def _prediction(record: dict) -> dict:
    """The model's answer as a Label Studio pre-annotation of the labelling config's controls."""
    result = [{"from_name": LABEL, "to_name": QUERY, "type": "choices", "value": {"choices": [record["label"]]}},
              {"from_name": CODE, "to_name": QUERY, "type": "choices",
               "value": {"choices": [record["primary_reason_code"]]}}]
    if record.get("automation"):
        result.append({"from_name": AUTOMATION, "to_name": QUERY, "type": "textarea",
                       "value": {"text": [json.dumps(record["automation"], ensure_ascii=False)]}})
    return {"model_version": record.get("model_version", ""), "score": round(float(record["confidence"]), 4),
            "result": result}


@dataclass
class ReviewSummary:
    rows: int = 0                 # rows read from the log
    left_out: dict[str, int] = field(default_factory=dict)  # reason → rows left out (no query, unreadable, error)
    distinct: int = 0             # distinct queries among the rows kept
    tasks: int = 0                # tasks written (the most teaching ``limit``)


def review_tasks(model, rows, limit: int | None = None, score=None) -> tuple[list[dict], ReviewSummary]:
    """Label Studio tasks for the log ``rows`` (``(line, obj, error)`` as ``data.io.read_rows`` gives them):
    one per distinct query (normalised text, context, endpoint), the ``limit`` most teaching first.
    ``score``: how to score the distinct inputs (default ``model.score``; a progress bar passes its own)."""
    from fastslow.features.normalise import normalise

    summary = ReviewSummary()
    distinct: dict[str, dict] = {}
    for _, obj, error in rows:
        summary.rows += 1
        reason = ("unreadable row" if error or not isinstance(obj, dict) else
                  "no query" if not isinstance(obj.get("query"), str) or not obj["query"].strip() else None)
        if reason:
            summary.left_out[reason] = summary.left_out.get(reason, 0) + 1
            continue
        context = _context(obj.get("context"))
        endpoint = obj.get("endpoint") or None
        key = json.dumps([normalise(obj["query"]), context, endpoint], ensure_ascii=False)
        if key in distinct:
            distinct[key]["count"] += 1
        else:
            distinct[key] = {"item": {"query": obj["query"], "context": context, "endpoint": endpoint}, "count": 1}
    summary.distinct = len(distinct)
    found = list(distinct.values())
    records = (score or model.score)([f["item"] for f in found])
    tasks = []
    for found_one, record in zip(found, records):
        if "error" in record:  # a query the model refuses (too long, bad context): nothing to pre-annotate
            summary.left_out["not scored: " + record["error"].split(":")[0]] = (
                summary.left_out.get("not scored: " + record["error"].split(":")[0], 0) + found_one["count"])
            continue
        item, count = found_one["item"], found_one["count"]
        tasks.append({
            "data": {QUERY: item["query"], "context": item["context"], "context_text": context_text(item["context"]),
                     "endpoint": item["endpoint"] or NO_ENDPOINT, "count": count,
                     "model_label": record["label"], "model_code": record["primary_reason_code"],
                     "model_confidence": round(float(record["confidence"]), 3),
                     "teaching_value": teaching_value(record, count), "why": _why(record, count)},
            "predictions": [_prediction(record)]})
    tasks.sort(key=lambda t: -t["data"]["teaching_value"])  # stable: equal values keep the log's order
    tasks = tasks[:limit] if limit else tasks
    summary.tasks = len(tasks)
    return tasks, summary


# --------------------------------------------------------------------------------------------------
# the export back as training rows


class ExportError(ValueError):
    """A file that is not a Label Studio JSON export."""


@dataclass
class ExportRows:
    rows: list = field(default_factory=list)          # ``(task id, row, error)``, as ``data.io.read_rows``
    skipped: int = 0                                  # tasks whose every annotation was skipped (cancelled)
    unannotated: int = 0                              # tasks nobody annotated yet


def _choice(result: list[dict], name: str) -> str | None:
    for r in result:
        if r.get("from_name") == name and (r.get("value") or {}).get("choices"):
            return r["value"]["choices"][0]
    return None


def _text(result: list[dict], name: str) -> str | None:
    for r in result:
        if r.get("from_name") == name and (r.get("value") or {}).get("text"):
            text = r["value"]["text"]
            return "\n".join(text) if isinstance(text, list) else str(text)
    return None


def annotation_row(data: dict, result: list[dict]) -> dict:
    """A training row from a task's data and one annotation's result: query, context and endpoint from
    the task, label and reason code from the choices, the automation groups when given (not empty, not
    ``[]``)."""
    row = {QUERY: data.get(QUERY), "context": _context(data.get("context"))}
    if data.get("endpoint") not in (None, "", NO_ENDPOINT):
        row["endpoint"] = data["endpoint"]
    for name in (LABEL, CODE):
        value = _choice(result, name)
        if value is not None:
            row[name] = value
    groups = _text(result, AUTOMATION)
    if groups is not None and groups.strip() not in ("", "[]"):
        row[AUTOMATION] = groups
    return row


def _min_row(task: dict) -> dict:
    """A JSON-MIN task (the data fields and each control's value flat in one object) as a training row."""
    row = {QUERY: task.get(QUERY), "context": _context(task.get("context"))}
    if task.get("endpoint") not in (None, "", NO_ENDPOINT):
        row["endpoint"] = task["endpoint"]
    for name in (LABEL, CODE):
        if isinstance(task.get(name), str):
            row[name] = task[name]
    groups = task.get(AUTOMATION)
    if isinstance(groups, str) and groups.strip() not in ("", "[]"):
        row[AUTOMATION] = groups
    return row


def read_export(path: str | Path) -> ExportRows:
    """The annotated tasks of a Label Studio JSON (or JSON-MIN) export as training rows, numbered by task
    id; of a task annotated more than once, the latest annotation that was not skipped."""
    path = Path(path)
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExportError(f"{path}: file not found") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExportError(f"{path}: not a Label Studio JSON export ({exc})") from None
    if not isinstance(tasks, list):
        raise ExportError(f"{path}: not a Label Studio JSON export (a list of tasks), got {type(tasks).__name__}")
    out = ExportRows()
    for number, task in enumerate(tasks, start=1):
        if not isinstance(task, dict):
            out.rows.append((number, None, f"task {number}: must be an object, got {type(task).__name__}"))
            continue
        task_id = task.get("id", number)
        if "data" not in task:  # JSON-MIN: one flat object per annotated task
            out.rows.append((task_id, _min_row(task), None))
            continue
        annotations = [a for a in task.get("annotations") or [] if isinstance(a, dict)]
        done = [a for a in annotations if not a.get("was_cancelled") and a.get("result")]
        if not done:
            if annotations:
                out.skipped += 1
            else:
                out.unannotated += 1
            continue
        latest = max(done, key=lambda a: (str(a.get("updated_at") or a.get("created_at") or ""), a.get("id") or 0))
        out.rows.append((task_id, annotation_row(task["data"], latest["result"]), None))
    return out
