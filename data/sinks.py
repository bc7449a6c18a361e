"""Writing records as JSONL, CSV or Parquet, one chunk at a time, and reading them back.

JSONL holds each record exactly as DESIGN.md shows it. CSV and Parquet are flat tables with one
column per field (``RECORD`` for scored records, ``REVIEW`` for the rows to label): text fields as
text (an ``id`` that is a number is written as text), ``confidence`` a number, ``review_required``
a boolean, ``line`` an integer, and the nested fields (``reason_codes``, ``subrequests``,
``automation``, ``candidates``, ``context``, ...) as JSON strings in their cells. In CSV an empty cell
is null and numbers and booleans are written as JSON (``0.93``, ``true``).

The columns of ``RECORD`` are the record schema's (``fastslow.models.record``: the record's fields,
then the error record's ``error`` and ``line``); this layer sits below the models and cannot import
them, so ``RECORD`` is written out here and a test holds it equal to ``record_layout()``.

``encode`` is a pure function of a chunk of records, so worker processes do it; the sink in the main
process only appends the encoded chunks.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from fastslow.data.io import InputFileError, detect_format


def dumps(record: dict) -> str:
    """A record as its one JSON line (the CLI's and the Spark UDF's); ``NaN`` and ``Infinity`` are not
    JSON and are never written (``ValueError``: the record module keeps them out of records)."""
    return json.dumps(record, ensure_ascii=False, allow_nan=False)


@dataclass(frozen=True)
class Layout:
    """The columns of a flat table and the kind of each: text, float, bool, int or json."""

    columns: tuple[tuple[str, str], ...]

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.columns]

    def flatten(self, record: dict) -> dict:
        row = {}
        for name, kind in self.columns:
            value = record.get(name)
            if value is not None and (kind == "json" or kind == "text" and not isinstance(value, str)):
                value = json.dumps(value, ensure_ascii=False)
            row[name] = value
        return row

    def unflatten(self, row: dict, from_csv: bool = False) -> dict:
        record = {}
        for name, kind in self.columns:
            value = row.get(name)
            if from_csv and value == "":
                value = None  # CSV cannot tell an empty text from none: an empty cell is null
            if value is not None and kind != "text" and isinstance(value, str):
                value = json.loads(value)
            record[name] = value
        return record

    def arrow_schema(self):
        import pyarrow as pa

        types = {"text": pa.string(), "json": pa.string(), "float": pa.float64(), "bool": pa.bool_(),
                 "int": pa.int64()}
        return pa.schema([(name, types[kind]) for name, kind in self.columns])


RECORD = Layout((("id", "text"), ("query", "text"), ("label", "text"), ("default_route", "text"),
                 ("primary_reason_code", "text"), ("reason_codes", "json"), ("confidence", "float"),
                 ("review_required", "bool"), ("fast_system_pending", "json"), ("subrequests", "json"),
                 ("automation", "json"), ("candidates", "json"), ("model_version", "text"), ("error", "text"),
                 ("line", "int")))
EXPLAINED = Layout(RECORD.columns + (("explanation", "json"),))  # ``fastslow score --explain``
REVIEW = Layout((("id", "text"), ("line", "int"), ("query", "text"), ("context", "json"), ("endpoint", "text"),
                 ("review_reason", "text"), ("predicted_label", "text"), ("predicted_reason_code", "text"),
                 ("confidence", "float"), ("error", "text")))
ERROR_FIELDS = ("id", "query", "error", "line")


def record_from_row(row: dict, from_csv: bool = False) -> dict:
    """A scored or error record from a row of a flat record table (``RECORD``)."""
    record = RECORD.unflatten(row, from_csv)
    if record["error"] is None:
        return {k: v for k, v in record.items() if k not in ("error", "line")}
    return {k: record[k] for k in ERROR_FIELDS if k != "line" or record[k] is not None}


class JsonlSink:
    """Appends JSON lines to a binary stream."""

    def __init__(self, stream, layout: Layout, fresh: bool = True):
        self.stream, self.layout = stream, layout

    @staticmethod
    def encode(records: list[dict], layout: Layout) -> bytes:
        return "".join(dumps(r) + "\n" for r in records).encode("utf-8")

    @staticmethod
    def count(payload: bytes) -> int:
        """Records in an encoded chunk."""
        return payload.count(b"\n")

    def write(self, payload: bytes) -> None:
        self.stream.write(payload)

    def flush(self) -> int:
        """Push what was written to the file; the offset after it (for resume), 0 on a pipe."""
        self.stream.flush()
        return self.stream.tell() if self.stream.seekable() else 0

    def close(self) -> None:
        self.stream.flush()


class CsvSink(JsonlSink):
    """Appends CSV rows (``layout``'s columns) to a binary stream, after a header on a fresh file."""

    def __init__(self, stream, layout: Layout, fresh: bool = True):
        super().__init__(stream, layout)
        if fresh:
            self.stream.write(self._csv([dict(zip(layout.names, layout.names))], layout))

    @staticmethod
    def encode(records: list[dict], layout: Layout) -> bytes:
        rows = []
        for record in records:
            row = layout.flatten(record)
            for name, kind in layout.columns:  # CSV has no types: numbers and booleans as JSON
                if kind in ("float", "bool", "int") and row[name] is not None:
                    row[name] = json.dumps(row[name])
            rows.append(row)
        return CsvSink._csv(rows, layout)

    @staticmethod
    def count(payload: bytes) -> int:
        return sum(1 for _ in csv.reader(io.StringIO(payload.decode("utf-8"), newline="")))

    @staticmethod
    def _csv(rows: list[dict], layout: Layout) -> bytes:
        buffer = io.StringIO()
        csv.DictWriter(buffer, fieldnames=layout.names, lineterminator="\n").writerows(rows)
        return buffer.getvalue().encode("utf-8")


class ParquetSink:
    """A Parquet file, one row group per chunk. It cannot be resumed: a Parquet file is readable only
    once its footer is written at the end."""

    def __init__(self, path: Path, layout: Layout):
        import pyarrow.parquet as pq

        self.layout = layout
        self.writer = pq.ParquetWriter(str(path), layout.arrow_schema())

    @staticmethod
    def encode(records: list[dict], layout: Layout):
        import pyarrow as pa

        return pa.Table.from_pylist([layout.flatten(r) for r in records], schema=layout.arrow_schema())

    @staticmethod
    def count(table) -> int:
        return table.num_rows

    def write(self, table) -> None:
        if table.num_rows:
            self.writer.write_table(table)

    def flush(self) -> None:
        return None

    def close(self) -> None:
        self.writer.close()


SINKS = {"jsonl": JsonlSink, "csv": CsvSink, "parquet": ParquetSink}


def output_format(path: str | Path | None, fmt: str | None = None) -> str:
    """The output format: ``fmt``, else the path's extension; JSONL on standard output."""
    if path is None and fmt == "parquet":
        raise InputFileError("Parquet output needs a file: use -o PATH.parquet")
    return detect_format(path if path is not None else "-", fmt)


def open_sink(path: Path | None, fmt: str, layout: Layout, append: bool = False, stdout=None):
    """A writer on ``path`` (appending after a resumed run's kept bytes), or on the binary ``stdout``."""
    if fmt == "parquet":
        return ParquetSink(path, layout)
    stream = stdout if path is None else open(path, "ab" if append else "wb")
    return SINKS[fmt](stream, layout, fresh=not append)


def read_records(path: str | Path, fmt: str | None = None, layout: Layout = RECORD) -> Iterator[dict]:
    """The records of a JSONL, CSV or Parquet file as ``fastslow score`` wrote them (``layout=REVIEW``
    for a ``--review-out`` file)."""
    fmt = detect_format(path, fmt)
    convert = record_from_row if layout is RECORD else layout.unflatten
    if fmt == "jsonl":
        with open(path, encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)
    elif fmt == "csv":
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                yield convert(row, from_csv=True)
    else:
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path).iter_batches():
            for row in batch.to_pylist():
                yield convert(row)
