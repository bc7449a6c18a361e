"""Reading input rows (JSONL or CSV) without losing any: every row comes out, parsed or with an error."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Iterator

FORMATS = ("jsonl", "csv")
CSV_JSON_COLUMNS = ("context", "existing_tasks")


class InputFileError(ValueError):
    """The file as a whole cannot be read (unknown format, no ``query`` column, ...)."""


def detect_format(path: str | Path, fmt: str | None = None) -> str:
    if fmt:
        if fmt not in FORMATS:
            raise InputFileError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
        return fmt
    suffix = Path(str(path)).suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    if str(path) == "-":
        return "jsonl"
    raise InputFileError(f"cannot tell the format of {path} from its extension; use .jsonl or .csv (or --format)")


def read_jsonl(stream) -> Iterator[tuple[int, object | None, str | None]]:
    """(line number, parsed object or None, error or None) for every non-blank line."""
    for line_no, raw in enumerate(stream, 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield line_no, None, f"line {line_no}: not valid UTF-8 (byte {exc.start})"
            continue
        if not text.strip():
            continue
        try:
            yield line_no, json.loads(text), None
        except json.JSONDecodeError as exc:
            yield line_no, None, f"line {line_no}: broken JSON ({exc.msg} at column {exc.colno})"


def read_csv(stream) -> Iterator[tuple[int, object | None, str | None]]:
    """(row number, dict or None, error or None) per CSV data row; the header must have ``query``.

    Bytes that are not UTF-8 are kept as surrogates and reported on their own row only.
    """
    text = io.TextIOWrapper(stream, encoding="utf-8", errors="surrogateescape", newline="")
    reader = csv.DictReader(text)
    header = reader.fieldnames or []
    if "query" not in header:
        raise InputFileError(f"CSV has no 'query' column (columns: {', '.join(header) or 'none'})")
    for row_no, row in enumerate(reader, 2):  # row 1 is the header
        if None in row:
            yield row_no, None, f"row {row_no}: more cells than columns"
            continue
        if any(isinstance(v, str) and any(0xDC80 <= ord(c) <= 0xDCFF for c in v) for v in row.values()):
            yield row_no, None, f"row {row_no}: not valid UTF-8"
            continue
        item = {k: (v if v != "" else None) for k, v in row.items()}
        error = None
        for column in CSV_JSON_COLUMNS:
            if item.get(column):
                try:
                    item[column] = json.loads(item[column])
                except json.JSONDecodeError as exc:
                    error = f"row {row_no}: {column}: broken JSON ({exc.msg})"
        if item.get("query") is None and "query" in row:
            item["query"] = ""  # an empty cell is an empty query, not a missing column
        yield (row_no, None, error) if error else (row_no, item, None)


def read_rows(path: str | Path, fmt: str | None = None) -> Iterator[tuple[int, object | None, str | None]]:
    """Every row of a JSONL or CSV file (``-`` is standard input), parsed or with its error."""
    reader = read_jsonl if detect_format(path, fmt) == "jsonl" else read_csv
    if str(path) == "-":
        yield from reader(sys.stdin.buffer)
        return
    if not Path(path).is_file():
        raise InputFileError(f"input file not found: {path}")
    with open(path, "rb") as stream:
        yield from reader(stream)
