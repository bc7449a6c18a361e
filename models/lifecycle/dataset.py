"""Labelled routing data: loading, validation (errors name file and row) and digests."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from fastslow.models.record import InputError, validate_input
from fastslow.data import DATA_DIR, FIXTURES_DIR, DataError
from fastslow.models.taxonomy import CODE_LABEL, LABELS
from fastslow.data.io import read_rows

TRAIN_DIR = DATA_DIR / "train"
DEV_FILE = DATA_DIR / "dev" / "routing_dev.jsonl"
#: the first blind set, retired to dev after its errors were studied: scored every run as ``dev_blind_v1``
RETIRED_BLIND_FILE = DATA_DIR / "dev" / "routing_blind_v1.jsonl"
#: the second blind set, retired when the third arrived (only its figures had been read): ``dev_blind_v2``
RETIRED_BLIND_V2_FILE = DATA_DIR / "dev" / "routing_blind_v2.jsonl"
#: the third blind set, retired when the fourth arrived (only its figures had been read, twice): ``dev_blind_v3``
RETIRED_BLIND_V3_FILE = DATA_DIR / "dev" / "routing_blind_v3.jsonl"
#: the fourth, retired when the fifth arrived (only its figures had been read, but often enough to steer
#: changes): ``dev_blind_v4``
RETIRED_BLIND_V4_FILE = DATA_DIR / "dev" / "routing_blind_v4.jsonl"
#: the fifth, retired when the sixth arrived (its figures had been read, a few times): ``dev_blind_v5``
RETIRED_BLIND_V5_FILE = DATA_DIR / "dev" / "routing_blind_v5.jsonl"
#: the sixth, retired when the seventh arrived (only its figures had been read, but every run): ``dev_blind_v6``
RETIRED_BLIND_V6_FILE = DATA_DIR / "dev" / "routing_blind_v6.jsonl"
#: the seventh, retired when the eighth arrived (only its figures had been read, but every run): ``dev_blind_v7``
RETIRED_BLIND_V7_FILE = DATA_DIR / "dev" / "routing_blind_v7.jsonl"
#: the eighth, retired when the ninth arrived (only its figures had been read, but every run): ``dev_blind_v8``
RETIRED_BLIND_V8_FILE = DATA_DIR / "dev" / "routing_blind_v8.jsonl"
#: the ninth, retired when the tenth arrived (only its figures had been read, but every run): ``dev_blind_v9``
RETIRED_BLIND_V9_FILE = DATA_DIR / "dev" / "routing_blind_v9.jsonl"
#: the tenth, retired when the eleventh arrived (only its figures had been read, but every run): ``dev_blind_v10``
RETIRED_BLIND_V10_FILE = DATA_DIR / "dev" / "routing_blind_v10.jsonl"
#: the eleventh, retired when the twelfth arrived (only its figures had been read, but every run): ``dev_blind_v11``
RETIRED_BLIND_V11_FILE = DATA_DIR / "dev" / "routing_blind_v11.jsonl"
#: the twelfth, retired when the thirteenth arrived (only its figures had been read, but every run): ``dev_blind_v12``
RETIRED_BLIND_V12_FILE = DATA_DIR / "dev" / "routing_blind_v12.jsonl"
#: the thirteenth, retired when the fourteenth arrived (only its figures had been read, but every run): ``dev_blind_v13``
RETIRED_BLIND_V13_FILE = DATA_DIR / "dev" / "routing_blind_v13.jsonl"
#: the fourteenth, retired when the fifteenth arrived (only its figures had been read, but every run): ``dev_blind_v14``
RETIRED_BLIND_V14_FILE = DATA_DIR / "dev" / "routing_blind_v14.jsonl"
#: the fifteenth, retired when the sixteenth arrived (only its figures had been read, but every run): ``dev_blind_v15``
RETIRED_BLIND_V15_FILE = DATA_DIR / "dev" / "routing_blind_v15.jsonl"
#: the sixteenth, retired when the eighteenth arrived (its figures had been read several times): ``dev_blind_v16``
RETIRED_BLIND_V16_FILE = DATA_DIR / "dev" / "routing_blind_v16.jsonl"
#: the seventeenth, kept in reserve and retired with the sixteenth (its figures had been read once): ``dev_blind_v17``
RETIRED_BLIND_V17_FILE = DATA_DIR / "dev" / "routing_blind_v17.jsonl"
#: the eighteenth, retired when the nineteenth arrived (its figures had been read twice): ``dev_blind_v18``
RETIRED_BLIND_V18_FILE = DATA_DIR / "dev" / "routing_blind_v18.jsonl"
#: the nineteenth, retired when the twentieth arrived (its figures had been read three times): ``dev_blind_v19``
RETIRED_BLIND_V19_FILE = DATA_DIR / "dev" / "routing_blind_v19.jsonl"
#: the twentieth, retired when the twenty-first arrived (its figures had been read three times): ``dev_blind_v20``
RETIRED_BLIND_V20_FILE = DATA_DIR / "dev" / "routing_blind_v20.jsonl"
#: written from the specs alone by someone who never saw the training data, and never studied: the
#: router's temperature is fitted on it (its rows and errors are not read while changing the model)
CALIBRATION_FILE = DATA_DIR / "calibration" / "routing_calibration.jsonl"
#: written from the specs alone, apart from the training data, for error analysis (studied: optimistic)
DEV_V2_FILE = DATA_DIR / "dev" / "routing_dev_v2.jsonl"
#: dev sets scored every run beside the hand-written dev set
EXTRA_DEV_FILES = (RETIRED_BLIND_FILE, RETIRED_BLIND_V2_FILE, RETIRED_BLIND_V3_FILE, RETIRED_BLIND_V4_FILE,
                   RETIRED_BLIND_V5_FILE, RETIRED_BLIND_V6_FILE, RETIRED_BLIND_V7_FILE, RETIRED_BLIND_V8_FILE,
                   RETIRED_BLIND_V9_FILE, RETIRED_BLIND_V10_FILE, RETIRED_BLIND_V11_FILE, RETIRED_BLIND_V12_FILE,
                   RETIRED_BLIND_V13_FILE, RETIRED_BLIND_V14_FILE, RETIRED_BLIND_V15_FILE,
                   RETIRED_BLIND_V16_FILE, RETIRED_BLIND_V17_FILE, RETIRED_BLIND_V18_FILE,
                   RETIRED_BLIND_V19_FILE, RETIRED_BLIND_V20_FILE, DEV_V2_FILE)
FIXTURE_FILE = FIXTURES_DIR / "routing_v1.jsonl"
BLIND_DIR = DATA_DIR / "blind"
BLIND_FILE = BLIND_DIR / "routing_blind.jsonl"


def check_labelled(obj, where: str) -> dict:
    """One labelled row, validated: the input fields plus label, primary code and reason codes."""
    try:
        item = validate_input(obj)
    except InputError as exc:
        raise DataError(f"{where}: {exc}") from None
    label, code = obj.get("label"), obj.get("primary_reason_code")
    if label not in LABELS:
        raise DataError(f"{where}: label must be one of {list(LABELS)}, got {label!r}")
    if code not in CODE_LABEL:
        raise DataError(f"{where}: unknown primary_reason_code {code!r}")
    if CODE_LABEL[code] != label:
        raise DataError(f"{where}: label {label} disagrees with {code}, whose group is {CODE_LABEL[code]}")
    codes = obj.get("reason_codes") or [code]
    unknown = [c for c in codes if c not in CODE_LABEL]
    if unknown or codes[0] != code:
        raise DataError(f"{where}: reason_codes must start with the primary code and hold known codes, got {codes}")
    return {**item, "label": label, "primary_reason_code": code, "reason_codes": list(codes),
            "source": obj.get("source") or obj.get("spec_section") or ""}


def load_labelled(path: str | Path, max_errors: int = 20) -> list[dict]:
    """Every row of a labelled JSONL/CSV file, or ``DataError`` listing the bad rows."""
    rows, errors = [], []
    for line, obj, error in read_rows(path):
        where = f"{path}:{line}"
        try:
            if error:
                raise DataError(f"{path}: {error}")
            rows.append({**check_labelled(obj, where), "where": where})
        except DataError as exc:
            errors.append(str(exc))
    if errors:
        shown = "\n  ".join(errors[:max_errors])
        more = f"\n  … and {len(errors) - max_errors} more" if len(errors) > max_errors else ""
        raise DataError(f"{len(errors)} bad row(s) in {path}:\n  {shown}{more}")
    return rows


def load_blind(path: str | Path, loader=None, **kwargs) -> list[dict]:
    """The rows of a blind set (``loader``: ``load_labelled`` unless given). When some cannot be read,
    the ``DataError`` says how many and in which file, never what they hold: a blind set is only ever
    scored, and only its aggregate figures are printed."""
    try:
        return (loader or load_labelled)(path, **kwargs)
    except DataError as exc:
        first = str(exc).splitlines()[0].rstrip(":")
        raise DataError(f"{first} (not shown: the blind set's content stays unread)") from None


def training_files(train_dir: Path = TRAIN_DIR) -> list[Path]:
    return sorted(train_dir.glob("*.jsonl"))


def load_training(train_dir: Path = TRAIN_DIR) -> list[dict]:
    rows = []
    for path in training_files(train_dir):
        rows.extend(load_labelled(path))
    if not rows:
        raise DataError(f"no training data under {train_dir}")
    return rows


def query_key(row: dict) -> str:
    """Identity of a query for leakage checks: its normalised text and context."""
    from fastslow.features.normalise import normalise

    return normalise(row["query"]) + "\x1f" + json.dumps(row.get("context") or [], ensure_ascii=False)


def digest(rows: list[dict]) -> str:
    """SHA-256 over the rows' query, context, endpoint and labels, in order."""
    h = hashlib.sha256()
    for r in rows:
        h.update(json.dumps([r["query"], r.get("context") or [], r.get("endpoint"), r["label"],
                             r["primary_reason_code"]], ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()


def without(rows: list[dict], held_out: list[dict], key=None) -> tuple[list[dict], int]:
    """``rows`` less those whose query (``key``: ``query_key``) is a query of ``held_out``, and how many
    were dropped. For the blind set: nobody may read it to take its queries out of the corpus by hand,
    so the training data that happens to hold one (a short command said the same way) loses it here."""
    key = key or query_key
    keys = {key(r) for r in held_out}
    kept = [r for r in rows if key(r) not in keys]
    return kept, len(rows) - len(kept)


def leak_error(overlap: list[str], name: str, blind: bool = False) -> str:
    """The message of a leak: a count and, except for a blind set, a few of the leaked queries."""
    examples = "" if blind else f", e.g. {overlap[:3]}"
    return f"{len(overlap)} {name} queries are in the training data{examples}; they are never trained on"


def leaked(train: list[dict], held_out: list[dict]) -> list[str]:
    """Queries of ``held_out`` that also appear (normalised, same context) in ``train``."""
    seen = {query_key(r) for r in train}
    return [r["query"] for r in held_out if query_key(r) in seen]
