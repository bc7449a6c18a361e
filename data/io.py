"""Reading input rows (JSONL, CSV or Parquet) without losing any: every row comes out, parsed or with
an error, one at a time, so a file of any size streams in constant memory."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from pathlib import Path
from typing import Iterator

FORMATS = ("jsonl", "csv", "parquet")
JSON_COLUMNS = ("context", "existing_tasks")  # nested input fields: a JSON string in a CSV or Parquet cell
INPUT_COLUMNS = ("query", "id", "context", "endpoint", "existing_tasks")
CSV_FIELD_LIMIT = 64 << 20  # a cell longer than this makes the file unreadable (Python's default: 128 KiB)
csv.field_size_limit(CSV_FIELD_LIMIT)  # for every CSV read here and in fastslow.data.sinks (a 1 MB query is a row)

Row = tuple[int | None, object | None, str | None]  # (line or row number, None off a file; parsed or None; error or None)


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
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if str(path) == "-":
        return "jsonl"
    raise InputFileError(f"cannot tell the format of {path} from its extension; "
                         "use .jsonl, .csv or .parquet (or --format)")


def read_jsonl(stream, text_col: str = "query", id_col: str = "id") -> Iterator[Row]:
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
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            yield line_no, None, f"line {line_no}: broken JSON ({exc.msg} at column {exc.colno})"
            continue
        yield line_no, rename_columns(obj, text_col, id_col), None


def rename_columns(obj, text_col: str = "query", id_col: str = "id"):
    """The row with ``text_col`` as ``query`` and ``id_col`` as ``id`` (``--text-col``/``--id-col``)."""
    if not isinstance(obj, dict) or (text_col == "query" and id_col == "id"):
        return obj
    item = {k: v for k, v in obj.items() if k not in ("query", "id")}
    for source, target in ((text_col, "query"), (id_col, "id")):
        if source in obj:
            item[target] = obj[source]
    return item


def _missing_column(kind: str, text_col: str, header) -> InputFileError:
    return InputFileError(f"{kind} has no {text_col!r} column (columns: {', '.join(header) or 'none'})")


def parse_json_cells(item: dict) -> str | None:
    """Decode the JSON string cells of nested fields (``context``, ``existing_tasks``) in place, as
    CSV, Parquet and Spark tables carry them; the error of the first broken one, else None."""
    for column in JSON_COLUMNS:
        if isinstance(item.get(column), str) and item[column]:
            try:
                item[column] = json.loads(item[column])
            except json.JSONDecodeError as exc:
                return f"{column}: broken JSON ({exc.msg})"
    return None


def _table_row(row_no: int, item: dict) -> Row:
    error = parse_json_cells(item)
    return (row_no, None, f"row {row_no}: {error}") if error else (row_no, item, None)


def read_csv(stream, text_col: str = "query", id_col: str = "id") -> Iterator[Row]:
    """(row number, dict or None, error or None) per CSV data row; the header must have ``text_col``.

    Bytes that are not UTF-8 are kept as surrogates and reported on their own row only.
    """
    text = io.TextIOWrapper(stream, encoding="utf-8", errors="surrogateescape", newline="")
    reader = csv.DictReader(text)
    header = reader.fieldnames or []
    if text_col not in header:
        raise _missing_column("CSV", text_col, header)
    rows = enumerate(reader, 2)  # row 1 is the header
    while True:
        try:
            row_no, row = next(rows)
        except StopIteration:
            return
        except csv.Error as exc:  # e.g. an unclosed quote swallowing the rest of the file
            raise InputFileError(f"CSV unreadable after line {reader.line_num}: {exc}") from None
        if None in row:
            yield row_no, None, f"row {row_no}: more cells than columns"
            continue
        if any(isinstance(v, str) and any(0xDC80 <= ord(c) <= 0xDCFF for c in v) for v in row.values()):
            yield row_no, None, f"row {row_no}: not valid UTF-8"
            continue
        item = rename_columns({k: (v if v != "" else None) for k, v in row.items()}, text_col, id_col)
        if item.get("query") is None:
            item["query"] = ""  # an empty cell is an empty query, not a missing column
        yield _table_row(row_no, item)


def read_parquet(path: str | Path, text_col: str = "query", id_col: str = "id",
                 batch_rows: int = 2048, all_columns: bool = False) -> Iterator[Row]:
    """(1-based row index, dict or None, error or None) per Parquet row, read in record batches of
    the columns fastslow scores with (every column with ``all_columns``: labelled data for training);
    nested fields may be JSON strings (as in CSV) or lists of structs."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid for a file that is not Parquet
        raise InputFileError(f"not a readable Parquet file ({exc})") from None
    header = parquet.schema_arrow.names
    if text_col not in header:
        raise _missing_column("Parquet file", text_col, header)
    wanted = {text_col, id_col, *INPUT_COLUMNS}
    columns = None if all_columns else [name for name in header if name in wanted]
    row_no = 0
    for batch in parquet.iter_batches(batch_size=batch_rows, columns=columns):
        for row in batch.to_pylist():
            row_no += 1
            yield _table_row(row_no, rename_columns(row, text_col, id_col))


class RowSource:
    """The rows of one input (a path, or ``-`` for standard input), with how far reading has got
    (``done()``, a fraction, or None when the size is unknown) for a progress bar."""

    def __init__(self, path: str | Path, fmt: str | None = None, text_col: str = "query", id_col: str = "id"):
        self.path, self.text_col, self.id_col = str(path), text_col, id_col
        self.format = detect_format(path, fmt)
        self.stdin = self.path == "-"
        if self.stdin and self.format == "parquet":
            raise InputFileError("Parquet cannot be read from standard input; give the file's path")
        if not self.stdin and not Path(path).is_file():
            raise InputFileError(f"input file not found: {path}")
        self.size = None if self.stdin else os.path.getsize(path)
        self._stream = None
        self._rows_read = 0
        self._total_rows = None

    def __iter__(self) -> Iterator[Row]:
        if self.format == "parquet":
            import pyarrow.parquet as pq

            try:
                self._total_rows = pq.ParquetFile(self.path).metadata.num_rows
            except Exception:
                self._total_rows = None  # read_parquet says why
            for row in read_parquet(self.path, self.text_col, self.id_col):
                self._rows_read += 1
                yield row
            return
        reader = read_jsonl if self.format == "jsonl" else read_csv
        if self.stdin:
            yield from reader(sys.stdin.buffer, self.text_col, self.id_col)
            return
        with open(self.path, "rb") as self._stream:
            yield from reader(self._stream, self.text_col, self.id_col)

    def done(self) -> float | None:
        if self._total_rows:
            return min(1.0, self._rows_read / self._total_rows)
        if self.size and self._stream is not None and not self._stream.closed:
            return min(1.0, self._stream.tell() / self.size)
        return None


def read_rows(path: str | Path, fmt: str | None = None, text_col: str = "query", id_col: str = "id") -> Iterator[Row]:
    """Every row of a JSONL, CSV or Parquet file (``-`` is standard input), parsed or with its error."""
    yield from RowSource(path, fmt, text_col, id_col)
