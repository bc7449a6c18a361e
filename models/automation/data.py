"""Annotated automation data: loading and validation (errors name file and row).

Every file (frozen fixture, training core and generated, dev set) holds JSON lines of the same shape:

```json
{"id": "...", "query": "上车时打开空调", "markup": "[C:上车时][A:打开空调]",
 "expected": [{"condition": "上车时", "querys": [{"subquery": "打开空调", "intent": "设备控制"}]}],
 "rules": ["bind_right"]}
```

``markup`` gives the gold spans (see ``models/automation/rules/markup.py``); ``expected`` the gold groups
(``intent: null`` where the source gives none: not compared); ``rules`` the spec rules the row
exercises (for per-rule accuracy). ``data/automation/README.md`` is the annotation guide.
"""

from __future__ import annotations

import json
from pathlib import Path

from fastslow.models.automation.rules import SPAN_KINDS, automation_text, parse_markup
from fastslow.data import DATA_DIR, DataError

AUTOMATION_DIR = DATA_DIR / "automation"
AUTOMATION_TRAIN_DIR = AUTOMATION_DIR / "train"
AUTOMATION_DEV_FILE = AUTOMATION_DIR / "dev" / "automation_dev.jsonl"
#: written from the spec alone by a writer apart from the training data; read for error analysis
AUTOMATION_DEV_V2_FILE = AUTOMATION_DIR / "dev" / "automation_dev_v2.jsonl"
#: the second automation blind set, retired to dev when the third arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V2_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v2.jsonl"
#: the third, retired when the fourth arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V3_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v3.jsonl"
#: the fourth, retired when the fifth arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V4_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v4.jsonl"
#: the fifth, retired when the sixth arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V5_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v5.jsonl"
#: the sixth, retired when the seventh arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V6_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v6.jsonl"
#: the seventh, retired when the eighth arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V7_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v7.jsonl"
#: the eighth, retired when the ninth arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V8_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v8.jsonl"
#: the ninth, retired when the tenth arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V9_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v9.jsonl"
#: the tenth, retired when the eleventh arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V10_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v10.jsonl"
#: the eleventh, retired when the twelfth arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V11_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v11.jsonl"
#: the twelfth, retired when the thirteenth arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V12_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v12.jsonl"
#: the thirteenth, retired when the fourteenth arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V13_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v13.jsonl"
#: the fourteenth, retired when the fifteenth arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V14_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v14.jsonl"
#: the fifteenth, retired when the sixteenth arrived (only its figures had been read)
AUTOMATION_RETIRED_BLIND_V15_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v15.jsonl"
#: the sixteenth, retired when the eighteenth arrived (its figures had been read several times)
AUTOMATION_RETIRED_BLIND_V16_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v16.jsonl"
#: the seventeenth, waiting in reserve, retired with the sixteenth (its figures had been read once)
AUTOMATION_RETIRED_BLIND_V17_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v17.jsonl"
#: the eighteenth, retired when the nineteenth arrived (its figures had been read twice)
AUTOMATION_RETIRED_BLIND_V18_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v18.jsonl"
#: the nineteenth, retired when the twentieth arrived (its figures had been read three times)
AUTOMATION_RETIRED_BLIND_V19_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v19.jsonl"
#: the twentieth, retired when the twenty-first arrived (its figures had been read three times)
AUTOMATION_RETIRED_BLIND_V20_FILE = AUTOMATION_DIR / "dev" / "automation_blind_v20.jsonl"
#: 200 queries written from the spec alone for study (70 built-in behaviours), read with its errors
AUTOMATION_STUDY_V3_FILE = AUTOMATION_DIR / "dev" / "automation_study_v3.jsonl"
#: dev sets scored every run beside the hand-written dev set (``train.py --automation-dev-also``)
AUTOMATION_EXTRA_DEV_FILES = (AUTOMATION_DEV_V2_FILE, AUTOMATION_RETIRED_BLIND_V2_FILE, AUTOMATION_RETIRED_BLIND_V3_FILE,
                              AUTOMATION_RETIRED_BLIND_V4_FILE, AUTOMATION_RETIRED_BLIND_V5_FILE,
                              AUTOMATION_RETIRED_BLIND_V6_FILE, AUTOMATION_RETIRED_BLIND_V7_FILE,
                              AUTOMATION_RETIRED_BLIND_V8_FILE, AUTOMATION_RETIRED_BLIND_V9_FILE,
                              AUTOMATION_RETIRED_BLIND_V10_FILE, AUTOMATION_RETIRED_BLIND_V11_FILE,
                              AUTOMATION_RETIRED_BLIND_V12_FILE, AUTOMATION_RETIRED_BLIND_V13_FILE,
                              AUTOMATION_RETIRED_BLIND_V14_FILE, AUTOMATION_RETIRED_BLIND_V15_FILE,
                              AUTOMATION_RETIRED_BLIND_V16_FILE, AUTOMATION_RETIRED_BLIND_V17_FILE,
                              AUTOMATION_RETIRED_BLIND_V18_FILE, AUTOMATION_RETIRED_BLIND_V19_FILE,
                              AUTOMATION_RETIRED_BLIND_V20_FILE, AUTOMATION_STUDY_V3_FILE)
AUTOMATION_FIXTURE_FILE = DATA_DIR / "fixtures" / "automation_v1.jsonl"
AUTOMATION_BLIND_FILE = DATA_DIR / "blind" / "automation_blind.jsonl"  # ``expected`` groups, no markup


def _check_groups(groups, where: str, intents: set | None) -> list[dict]:
    if not isinstance(groups, list):
        raise DataError(f"{where}: expected must be a list of groups")
    out = []
    for i, g in enumerate(groups):
        if not isinstance(g, dict) or "condition" not in g or not isinstance(g.get("querys"), list):
            raise DataError(f"{where}: group {i} must be {{condition, querys: [...]}}")
        if g["condition"] is not None and (not isinstance(g["condition"], str) or not g["condition"]):
            raise DataError(f"{where}: group {i} condition must be a non-empty string, 'default' or null")
        for q in g["querys"]:
            if not isinstance(q, dict) or not isinstance(q.get("subquery"), str) or not q["subquery"]:
                raise DataError(f"{where}: group {i} has a query without a subquery: {q!r}")
            if q.get("intent") is not None and intents is not None and q["intent"] not in intents:
                raise DataError(f"{where}: unknown intent {q['intent']!r} (see data/taxonomy/intents.tsv)")
        group = {"condition": g["condition"],
                 "querys": [{"subquery": q["subquery"], "intent": q.get("intent")} for q in g["querys"]]}
        if g.get("builtin"):
            group["builtin"] = True
        out.append(group)
    return out


def check_row(obj, where: str, intents: set | None = None) -> dict:
    """One annotated row: query, its text, gold spans, gold groups (optional), rules."""
    if not isinstance(obj, dict) or not isinstance(obj.get("query"), str) or not obj["query"].strip():
        raise DataError(f"{where}: a row needs a non-empty 'query'")
    text = automation_text(obj["query"])
    spans = None
    if obj.get("markup") is not None:
        marked, spans = parse_markup(obj["markup"])
        if marked != text:
            raise DataError(f"{where}: markup text {marked!r} differs from the query {text!r}")
        if any(s.kind not in SPAN_KINDS for s in spans):
            raise DataError(f"{where}: unknown span kind in {obj['markup']!r}")
    expected = _check_groups(obj["expected"], where, intents) if "expected" in obj else None
    if spans is None and expected is None:
        raise DataError(f"{where}: a row needs 'markup', 'expected' or both")
    return {"id": obj.get("id"), "query": obj["query"], "text": text, "markup": obj.get("markup"),
            "spans": spans, "expected": expected, "rules": list(obj.get("rules") or []),
            "source": obj.get("source") or obj.get("spec_section") or ""}


def load_automation(path: str | Path, intents: set | None = None, max_errors: int = 20) -> list[dict]:
    """Every row of an annotated JSONL file, or ``DataError`` listing the bad rows."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"automation data not found: {path}")
    rows, errors = [], []
    for line_no, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{path}:{line_no}"
        try:
            rows.append({**check_row(json.loads(raw), where, intents), "where": where})
        except json.JSONDecodeError as exc:
            errors.append(f"{where}: not JSON ({exc.msg})")
        except DataError as exc:
            errors.append(str(exc))
    if errors:
        shown = "\n  ".join(errors[:max_errors])
        raise DataError(f"{len(errors)} bad row(s) in {path}:\n  {shown}")
    return rows


def automation_training_files(train_dir: Path = AUTOMATION_TRAIN_DIR) -> list[Path]:
    return sorted(Path(train_dir).glob("*.jsonl"))


def load_automation_training(train_dir: Path = AUTOMATION_TRAIN_DIR, intents: set | None = None) -> list[dict]:
    rows = []
    for path in automation_training_files(train_dir):
        rows.extend(load_automation(path, intents))
    if not rows:
        raise DataError(f"no automation training data under {train_dir}")
    missing = [r["query"] for r in rows if r["spans"] is None]
    if missing:
        raise DataError(f"training rows need markup (gold spans), e.g. {missing[:3]}")
    return rows


def automation_leaked(train: list[dict], held_out: list[dict]) -> list[str]:
    """Queries of ``held_out`` whose text also appears in ``train``."""
    seen = {r["text"] for r in train}
    return [r["query"] for r in held_out if r["text"] in seen]


def automation_digest(rows: list[dict]) -> str:
    import hashlib

    h = hashlib.sha256()
    for r in rows:
        h.update(json.dumps([r["query"], r["markup"], r["expected"]], ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()
