"""Batch scoring: rows in, one record per row out, in input order, a chunk at a time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator

from fastslow.models.record import error_record
from fastslow.data.io import Row, bad_json_value

if TYPE_CHECKING:  # the main process of a parallel run never loads a model: keep its imports light
    from fastslow.models.pipeline import FastslowModel


def score_chunk(model: FastslowModel, rows: list[Row], memo=None, explain: bool = False) -> list[dict]:
    """One record per ``(line, parsed, error)`` row, in order; an unreadable or invalid row gets an
    error record carrying its line (when there is one), and costs no other row. ``memo`` and
    ``explain``: see ``FastslowModel.score``."""
    parsed = [obj for _, obj, err in rows if err is None]
    scored = iter(model.score(parsed, memo, explain=explain))
    records = []
    for line, obj, err in rows:
        if err is not None:
            record = error_record(None, None, err, line)
        else:
            record = next(scored)
            if "error" in record and line is not None:
                record["error"] = f"line {line}: {record['error']}"
                record["line"] = line
        records.append(record)
    return records


def chunked(rows: Iterable, size: int) -> Iterator[list]:
    """Lists of ``size`` consecutive items (the last one shorter)."""
    chunk = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def review_entry(record: dict, row: Row, below: float) -> dict | None:
    """The row for a person to label, or None: an error, ``review_required``, or confidence below
    ``below``. It holds what labelling needs (the input's query, id, context, endpoint and its line)
    and the model's guess as ``predicted_*``, so a labeller adds ``label`` and ``primary_reason_code``."""
    if "error" in record:
        reason = "error"
    elif record["review_required"]:
        reason = "review_required"
    elif record["confidence"] < below:
        reason = "low_confidence"
    else:
        return None
    line, obj, _ = row
    obj = obj if isinstance(obj, dict) else {}
    # an error row's context or endpoint may hold what no writer can (NaN, 1e400): not echoed, as its id is not
    context, endpoint = (value if bad_json_value(value) is None else None
                         for value in (obj.get("context"), obj.get("endpoint")))
    return {"id": record.get("id"), "line": line, "query": record.get("query"), "context": context,
            "endpoint": endpoint, "review_reason": reason, "predicted_label": record.get("label"),
            "predicted_reason_code": record.get("primary_reason_code"), "confidence": record.get("confidence"),
            "error": record.get("error")}
