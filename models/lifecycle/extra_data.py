"""Extra labelled data for ``train.py --data``: reading (JSONL, CSV, Parquet) and validation.

A data scientist's reviewed log rows come in one file or several. Each row is a routing label, an
automation parse, or both, told apart by its columns:

- routing: ``query``, ``label``, ``primary_reason_code`` (``reason_codes``, ``context``, ``endpoint``
  optional), as in ``data/train/*.jsonl``;
- automation: ``query`` and ``automation``, the record's groups ``[{condition, querys: [{subquery,
  intent}]}]`` (a JSON string in CSV), with ``markup`` (the gold spans, see
  ``data/automation/README.md``) optional when every condition and subquery is said verbatim.

A Label Studio JSON export (``.json``, see ``label_studio``) is read as such: its annotated tasks are
rows; skipped and unannotated tasks are counted (``ExtraData.left_out``) and left out.

``validate_extra`` is pure: it returns the clean rows and every problem as ``FILE:ROW: message``, so
that ``train.py`` can print them all and stop before fitting anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from fastslow.models.automation.data import check_row
from fastslow.models.automation.metrics import groups_match, rules_output
from fastslow.models.automation.rules import Span, to_markup
from fastslow.data import DataError
from fastslow.models.lifecycle.dataset import check_labelled, query_key
from fastslow.data.io import InputFileError, Row, detect_format, read_parquet, read_rows

ROUTING_COLUMNS = ("label", "primary_reason_code")
AUTOMATION_COLUMNS = ("automation", "markup")


class ExtraDataError(DataError):
    """The extra data has problems; ``problems`` lists each as ``FILE:ROW: message``."""

    def __init__(self, problems: list[str]):
        super().__init__(f"{len(problems)} problem(s) in the extra data, nothing was trained:\n  "
                         + "\n  ".join(problems))
        self.problems = problems


@dataclass
class ExtraData:
    routing: list[dict] = field(default_factory=list)
    automation: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # file → {"routing": n, "automation": n}
    left_out: dict[str, dict[str, int]] = field(default_factory=dict)  # Label Studio export → {"skipped": n, "unannotated": n}

    def by_file(self) -> dict[str, list[dict]]:
        """Each file's valid rows, once each (a row with a label and a parse merged), in file order."""
        rows: dict[str, dict[str, dict]] = {name: {} for name in self.counts}
        for row in self.automation + self.routing:
            name = row["where"].rsplit(":", 1)[0]
            rows[name][row["where"]] = {**rows[name].get(row["where"], {}), **row}
        return {name: sorted(found.values(), key=lambda r: int(r["where"].rsplit(":", 1)[1]))
                for name, found in rows.items()}


@dataclass
class Reference:
    """What the extra rows are checked against: the corpus they join, and the held-out sets."""

    routing_train: list[dict] = field(default_factory=list)      # rows with "where" (FILE:ROW)
    automation_train: list[dict] = field(default_factory=list)
    held_out: dict[str, set[str]] = field(default_factory=dict)  # name → ``query_key``s never trained on
    intents: set | None = None
    lexicons: object = None


# --------------------------------------------------------------------------------------------------
# reading


def read_extra(path: str | Path) -> list[Row]:
    """Every row of an extra file, parsed or with its error; ``InputFileError`` when the file as a whole
    cannot be read."""
    path = Path(path)
    try:
        fmt = detect_format(path)
    except InputFileError:
        raise InputFileError(f"{path}: use .jsonl, .csv, .parquet or a Label Studio export (.json)") from None
    if not path.is_file():
        raise InputFileError(f"{path}: file not found")
    try:
        return list(read_parquet(path, all_columns=True) if fmt == "parquet" else read_rows(path, fmt))
    except InputFileError as exc:
        raise InputFileError(f"{path}: {exc}") from None


# --------------------------------------------------------------------------------------------------
# validation (pure)


def _is_given(obj: dict, column: str) -> bool:
    value = obj.get(column)
    return value is not None and value != ""


def derive_markup(text: str, groups: list[dict]) -> str | None:
    """Spans for groups whose condition and subqueries are said verbatim, in order; None otherwise."""
    spans, at = [], 0
    for g in groups:
        parts = ([("C", g["condition"])] if g["condition"] not in (None, "default") else [])
        parts += [("A", q["subquery"]) for q in g["querys"]]
        for kind, part in parts:
            start = text.find(part, at)
            if start < 0:
                return None
            spans.append(Span(kind, start, start + len(part), part))
            at = start + len(part)
    return to_markup(text, spans)


def _automation_row(obj: dict, where: str, ref: Reference) -> dict:
    groups = obj.get("automation")
    if isinstance(groups, str):
        try:
            groups = json.loads(groups)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: automation is not JSON ({exc.msg} at column {exc.colno})") from None
    if groups is None:
        raise DataError(f"{where}: 'markup' needs its 'automation' groups")
    markup = obj.get("markup") or None
    if markup is not None and not isinstance(markup, str):
        raise DataError(f"{where}: markup must be a string like '[C:上车时][A:打开空调]'")
    row = {"query": obj["query"], "expected": groups, "markup": markup}
    checked = check_row(row, where, ref.intents)
    if checked["spans"] is None:
        markup = derive_markup(checked["text"], checked["expected"])
        if markup is None:
            raise DataError(f"{where}: the automation's conditions and subqueries are not all said verbatim in "
                            f"the query, so their spans cannot be placed; add a 'markup' column "
                            f"(data/automation/README.md, 'How to mark spans')")
        checked = check_row({**row, "markup": markup}, where, ref.intents)
    if ref.lexicons is not None:
        made = rules_output(checked["text"], checked["spans"], ref.lexicons)
        if not groups_match(made, checked["expected"], intents=False):
            raise DataError(f"{where}: the spans {checked['markup']!r} give the groups "
                            f"{json.dumps(made, ensure_ascii=False)}, not the automation given; fix the "
                            f"markup or the groups")
    missing = [q["subquery"] for g in checked["expected"] for q in g["querys"] if not q.get("intent")]
    if missing:
        raise DataError(f"{where}: every subquery needs its intent for training, {missing[0]!r} has none")
    return {**checked, "source": f"extra:{Path(where.rsplit(':', 1)[0]).name}", "where": where}


def _routing_identity(row: dict) -> str:
    return query_key(row) + "\x1f" + str(row.get("endpoint"))


def validate_extra(files: dict[str, list[Row]], ref: Reference) -> ExtraData:
    """Check every row of every extra file; return the clean rows and every problem (``FILE:ROW: …``).

    Problems: a row that cannot be read, neither routing nor automation columns, unknown labels, reason
    codes or intents, a label that is not its reason code's group, malformed automation JSON, spans
    that do not give the groups, a query of a held-out set (the frozen fixtures, the dev sets, the blind sets), and
    duplicates that contradict each other (within the extra data or against the training corpus).
    """
    out = ExtraData()
    routing_seen = {_routing_identity(r): (r["where"], r["label"], r["primary_reason_code"]) for r in ref.routing_train}
    automation_seen = {r["text"]: (r["where"], r["expected"]) for r in ref.automation_train}
    for name, raw_rows in files.items():
        counts = out.counts.setdefault(name, {"routing": 0, "automation": 0})
        for row_no, obj, error in raw_rows:
            where = f"{name}:{row_no}"
            if error:
                out.problems.append(f"{where}: {error.split(': ', 1)[-1]}")
                continue
            if not isinstance(obj, dict):
                out.problems.append(f"{where}: must be an object with a 'query', got {type(obj).__name__}")
                continue
            is_routing = any(_is_given(obj, c) for c in ROUTING_COLUMNS)
            is_automation = any(_is_given(obj, c) for c in AUTOMATION_COLUMNS)
            if not is_routing and not is_automation:
                out.problems.append(f"{where}: neither routing labels (label, primary_reason_code) nor an "
                                    f"automation parse (automation); columns: {', '.join(obj)}")
                continue
            query, context = obj.get("query"), obj.get("context")
            if isinstance(query, str) and query.strip():
                key = query_key({"query": query, "context": context if isinstance(context, list) else []})
                held = [n for n, keys in ref.held_out.items() if key in keys]
                if held:  # a blind set's queries are not echoed: only its figures are ever shown
                    shown = "this query" if held[0].startswith("blind") else repr(query)
                    out.problems.append(f"{where}: {shown} is in the {held[0]}, which is never trained on "
                                        f"(it measures the model); drop this row")
                    continue
            if is_routing:
                try:
                    row = {**check_labelled(obj, where), "source": f"extra:{Path(name).name}", "where": where}
                except DataError as exc:
                    out.problems.append(str(exc))
                else:
                    key, gold = _routing_identity(row), (row["label"], row["primary_reason_code"])
                    seen = routing_seen.get(key)
                    if seen and seen[1:] != gold:
                        out.problems.append(f"{where}: {row['query']!r} is labelled {'/'.join(gold)} here but "
                                            f"{'/'.join(seen[1:])} in {seen[0]}")
                    else:
                        routing_seen.setdefault(key, (where, *gold))
                        out.routing.append(row)
                        counts["routing"] += 1
            if is_automation:
                try:
                    row = _automation_row(obj, where, ref)
                except DataError as exc:
                    out.problems.append(str(exc))
                else:
                    seen = automation_seen.get(row["text"])
                    if seen and not groups_match(row["expected"], seen[1], intents=True):
                        out.problems.append(f"{where}: {row['query']!r} has other automation groups in {seen[0]}")
                    else:
                        automation_seen.setdefault(row["text"], (where, row["expected"]))
                        out.automation.append(row)
                        counts["automation"] += 1
    return out


def load_extra(paths: list[Path], ref: Reference) -> ExtraData:
    """Read and validate every extra file; a file that cannot be read at all is one problem. A ``.json``
    file is a Label Studio export: its rows are numbered by task id."""
    from fastslow.models.lifecycle.label_studio import ExportError, read_export

    files, problems, left_out = {}, [], {}
    for path in paths:
        try:
            if Path(path).suffix.lower() == ".json":
                export = read_export(path)
                files[str(path)] = export.rows
                left_out[str(path)] = {"skipped": export.skipped, "unannotated": export.unannotated}
            else:
                files[str(path)] = read_extra(path)
        except (InputFileError, ExportError) as exc:
            problems.append(str(exc))
    data = validate_extra(files, ref)
    data.problems[:0] = problems
    data.left_out = left_out
    return data
