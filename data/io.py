"""Reading input rows (JSONL, CSV or Parquet) without losing any: every row comes out, parsed or with
an error, one at a time, so a file of any size streams in constant memory."""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import re
import sys
from functools import partial
from pathlib import Path
from typing import Iterator, NamedTuple

FORMATS = ("jsonl", "csv", "parquet")
JSON_COLUMNS = ("context", "existing_tasks")  # nested input fields: a JSON string in a CSV or Parquet cell
INPUT_COLUMNS = ("query", "id", "context", "endpoint", "existing_tasks")
CSV_FIELD_LIMIT = 64 << 20  # a cell longer than this makes the file unreadable (Python's default: 128 KiB)
csv.field_size_limit(CSV_FIELD_LIMIT)  # for every CSV read here and in fastslow.data.sinks (a 1 MB query is a row)

CSV_MAX_LINES_PER_ROW = 50  # a quoted cell may hold line breaks; one running past this many lines is a stray quote

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


_SURROGATE = re.compile("[\ud800-\udfff]")  # one search in C, not a Python test per character
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # JSON's \ud800 ... \udfff: a surrogate, maybe lone


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a UTF-16 surrogate code point (a JSON ``\\ud800`` escape decodes to one),
    which no UTF-8 writer or hash can encode."""
    return _SURROGATE.search(text) is not None


class BadValue(NamedTuple):
    """The first thing in a parsed JSON value that no record can hold (``bad_json_value``)."""

    path: str  # where it is: "" (the value itself), "id", "context[0].text"; for a field name, the object's path
    kind: str  # SURROGATE (a string holds one), NAME (a field name holds one) or NUMBER (NaN or an infinity)
    shown: str  # the surrogate as its escape (``\\ud800``) or the number as JSON would need it (``NaN``, ``-Infinity``)


SURROGATE, NAME, NUMBER = "surrogate", "field name", "number"


def bad_json_value(value, path: str = "") -> BadValue | None:
    """The first string, field name or number in a parsed JSON value that a record cannot hold, or None:
    text holding a lone UTF-16 surrogate (a ``\\ud800`` escape decodes to one, and so do bytes that were
    not UTF-8 when read with ``surrogateescape``: no UTF-8 writer or hash can encode it), or a float that
    JSON cannot write (``NaN``, ``Infinity``; ``1e400`` parses to an infinite float). Depth first, in the
    value's order; ``path`` names ``value`` itself (children: ``path.key``, ``path[i]``).

    Nearly every value is clean, and ``json_clean`` says so without a path string per child value; only
    a value it refuses is walked again by ``_first_bad`` (the definition) to name what it found."""
    return None if json_clean(value) else _first_bad(value, path)


def json_clean(value) -> bool:
    """``_first_bad(value, path) is None``: the same tests of the same values, no paths built."""
    if isinstance(value, str):
        return _SURROGATE.search(value) is None
    if isinstance(value, float):
        return value - value == 0.0  # finite (inf - inf and nan - nan are nan)
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and _SURROGATE.search(key) or not json_clean(item):
                return False
    elif isinstance(value, list):
        for item in value:  # one Python frame per level, as deep as ``_first_bad`` goes
            if not json_clean(item):
                return False
    return True


def _first_bad(value, path: str) -> BadValue | None:
    """``bad_json_value`` by its definition: the walk that names the first bad thing's path."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        return BadValue(path, SURROGATE, f"\\u{ord(found.group()):04x}") if found else None
    if isinstance(value, float):
        if value - value == 0.0:  # finite (inf - inf and nan - nan are nan)
            return None
        return BadValue(path, NUMBER, "NaN" if value != value else "Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and (found := _SURROGATE.search(key)):
                return BadValue(path, NAME, f"\\u{ord(found.group()):04x}")
            found = _first_bad(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _first_bad(item, f"{path}[{i}]")
            if found:
                return found
    return None


def bad_value_error(bad: BadValue, top: str = "row") -> tuple[str, str]:
    """``(field, why)`` of a ``BadValue`` as rows' error records say it (``context[0].text``, ``a lone
    surrogate (\\ud800) is not Unicode text``); ``top`` names the value itself (a row, a request body)."""
    field = top + bad.path if bad.path.startswith("[") or not bad.path else bad.path
    if bad.kind == NUMBER:
        return field, f"{bad.shown} is not valid JSON"
    field = "a field name" if bad.kind == NAME else field
    return field, f"a lone surrogate ({bad.shown}) is not Unicode text"


def surrogate_error(text: str, value, where: str = "") -> str | None:
    """The error for a parsed value whose JSON ``text`` escapes a lone surrogate, else None (cheap: the
    value is walked only when the text holds such an escape; the walk names the first value no record
    can hold, which may be a ``NaN`` before the surrogate)."""
    if "\\u" not in text or not _SURROGATE_ESCAPE.search(text):
        return None
    found = bad_json_value(value, where)
    if found is None:
        return None
    return ": ".join(bad_value_error(found))


def read_jsonl(stream, text_col: str = "query", id_col: str = "id", blank_rows: bool = False) -> Iterator[Row]:
    """(line number, parsed object or None, error or None) for every non-blank line; with ``blank_rows``
    (scoring: every line yields one record) a blank line is a row too, its error ``empty line``."""
    for line_no, raw in enumerate(stream, 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield line_no, None, f"line {line_no}: not valid UTF-8 (byte {exc.start})"
            continue
        if line_no == 1:
            text = text.removeprefix("\ufeff")  # a byte order mark is not part of the first row
        if not text.strip():
            if blank_rows:
                yield line_no, None, f"line {line_no}: empty line"
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            yield line_no, None, f"line {line_no}: broken JSON ({exc.msg} at column {exc.colno})"
            continue
        error = surrogate_error(text, obj)
        if error:
            yield line_no, None, f"line {line_no}: {error}"
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
            text = item[column]
            try:
                item[column] = json.loads(text)
            except json.JSONDecodeError as exc:
                return f"{column}: broken JSON ({exc.msg})"
            error = surrogate_error(text, item[column], column)
            if error:
                return error
    return None


def _table_row(row_no: int, item: dict) -> Row:
    error = parse_json_cells(item)
    return (row_no, None, f"row {row_no}: {error}") if error else (row_no, item, None)


class _StrayQuote(Exception):
    """A quoted CSV field still open where its row must have ended; the message says where."""


class _CsvLines:
    """The physical lines of a CSV text stream as ``csv`` asks for them, watching the row being read: a
    quoted field still open after ``CSV_MAX_LINES_PER_ROW`` lines, or at the end of the file, is a stray
    quote swallowing the rows after it (``csv`` itself would return them all as one cell)."""

    def __init__(self, text):
        self.text, self.row_lines, self.at_end = text, [], False

    def __iter__(self):
        return self

    def __next__(self) -> str:
        if len(self.row_lines) >= CSV_MAX_LINES_PER_ROW:
            raise _StrayQuote(f"not closed within {CSV_MAX_LINES_PER_ROW} lines")
        line = next(self.text, None)
        if line is None:
            self.at_end = True
            raise StopIteration
        self.row_lines.append(line)
        return line

    def read_row(self, reader: csv.DictReader, row_no: int, header: bool = False):
        """The next row of ``reader`` (its field names with ``header``); ``InputFileError`` naming row
        ``row_no`` and its first line when a quote opened in it is not closed."""
        first_line = reader.line_num + 1
        self.row_lines = []
        try:
            row = reader.fieldnames if header else next(reader)
            if self.at_end and self.row_lines:  # ended by the end of the file: inside a quote?
                try:
                    list(csv.reader(self.row_lines, strict=True))
                except csv.Error as exc:
                    if "unexpected end of data" in str(exc):
                        raise _StrayQuote("not closed by the end of the file") from None
            return row
        except _StrayQuote as exc:
            first_line += next((i for i, line in enumerate(self.row_lines) if line.strip("\r\n")), 0)
            raise InputFileError(f"row {row_no} (line {first_line}): a quoted field opened here is {exc} "
                                 "(a stray '\"'?); the rows after it cannot be told apart") from None
        except csv.Error as exc:  # e.g. a NUL byte
            raise InputFileError(f"CSV unreadable after line {reader.line_num}: {exc}") from None


def read_csv(stream, text_col: str = "query", id_col: str = "id") -> Iterator[Row]:
    """(row number, dict or None, error or None) per CSV data row; the header must have ``text_col``.

    Bytes that are not UTF-8 are kept as surrogates and reported on their own row only; a byte order
    mark before the header is dropped. A quoted field not closed within ``CSV_MAX_LINES_PER_ROW`` lines
    or by the end of the file fails the file with ``InputFileError`` naming the row where it opened.
    """
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="surrogateescape", newline="")
    lines = _CsvLines(text)
    reader = csv.DictReader(lines)
    header = lines.read_row(reader, 1, header=True) or []
    if text_col not in header:
        raise _missing_column("CSV", text_col, header)
    for row_no in itertools.count(2):  # row 1 is the header
        try:
            row = lines.read_row(reader, row_no)
        except StopIteration:
            return
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
    (``done()``, a fraction, or None when the size is unknown) for a progress bar. Blank JSONL lines are
    rows (with an error) unless ``blank_rows`` is off: every line of a scored log yields a record."""

    def __init__(self, path: str | Path, fmt: str | None = None, text_col: str = "query", id_col: str = "id",
                 blank_rows: bool = True):
        self.path, self.text_col, self.id_col, self.blank_rows = str(path), text_col, id_col, blank_rows
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
        if self.format == "jsonl":
            reader = partial(read_jsonl, blank_rows=self.blank_rows)
        else:
            reader = read_csv
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
    """Every row of a JSONL, CSV or Parquet file (``-`` is standard input), parsed or with its error;
    blank JSONL lines are skipped (labelled data for training)."""
    yield from RowSource(path, fmt, text_col, id_col, blank_rows=False)
