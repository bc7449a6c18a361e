"""Batch scoring: rows in, one record per row out, in input order, in batches for speed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Iterator, TextIO

from models.bundle import FastslowModel
from models.record import error_record

DEFAULT_BATCH = 512


@dataclass
class ScoreSummary:
    rows: int = 0
    scored: int = 0
    errors: int = 0


def score_rows(model: FastslowModel, rows: Iterable[tuple[int, object | None, str | None]],
               batch_size: int = DEFAULT_BATCH, summary: ScoreSummary | None = None) -> Iterator[dict]:
    """Records for ``(line, parsed, error)`` rows, in order; an unreadable row yields an error record."""
    summary = summary if summary is not None else ScoreSummary()
    batch: list[tuple[int, object | None, str | None]] = []

    def flush():
        parsed = [(line, obj) for line, obj, err in batch if err is None]
        scored = iter(model.score([obj for _, obj in parsed]))
        for line, obj, err in batch:
            if err is not None:
                record = error_record(None, None, err, line)
            else:
                record = next(scored)
                if "error" in record:
                    record["error"] = f"line {line}: {record['error']}"
                    record["line"] = line
            summary.rows += 1
            if "error" in record:
                summary.errors += 1
            else:
                summary.scored += 1
            yield record

    for row in rows:
        batch.append(row)
        if len(batch) >= batch_size:
            yield from flush()
            batch = []
    if batch:
        yield from flush()


def write_jsonl(records: Iterable[dict], out: TextIO) -> None:
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
