"""The records of the bundled files: score them, compare two runs, and keep the committed snapshot.

Behaviour as a whole is pinned by ``tests/records/``: the records that the seed-13 model ``python
train.py`` trains by default makes of every bundled dev and fixture file, one file per input, without
``model_version`` (it hashes the code and lexicon files, so it changes with any edit).
``tests/test_records.py`` scores the same files with the model the test session trains and compares
record by record. A change of behaviour therefore goes:

    1. change the code, a lexicon or the data;
    2. the test fails and prints the first differing records, field by field;
    3. review them: every difference is either a bug to fix or the change you meant;
    4. python train.py && python tools/compare_records.py snapshot --update   # rewrites tests/records/
    5. commit tests/records/ with the change: its diff is part of the review.

``snapshot`` without ``--update`` compares a model's records with the snapshot, as the test does.
The blind sets (``data/blind/``) are never scored here: their rows are never shown. The training files
are left out of the snapshot (tens of thousands of records, mostly what the model was fitted on); a
refactoring that must not change behaviour compares them too, run against run:

    python tools/compare_records.py score --model M.joblib --out DIR      # DIR/<file>.jsonl, one per input
    python tools/compare_records.py compare BEFORE_DIR AFTER_DIR          # differing records, file by file
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT_DIR = ROOT / "tests" / "records"
#: the files of the snapshot: every bundled dev and fixture file of queries
SNAPSHOT_FILES = ("data/fixtures/routing_v1.jsonl", "data/fixtures/automation_v1.jsonl",
                  "data/dev/routing_dev.jsonl", "data/dev/routing_dev_v2.jsonl", "data/dev/routing_blind_v1.jsonl",
                  "data/dev/routing_blind_v2.jsonl", "data/dev/routing_blind_v3.jsonl", "data/dev/routing_blind_v4.jsonl",
                  "data/dev/routing_blind_v5.jsonl", "data/dev/routing_blind_v6.jsonl", "data/dev/routing_blind_v7.jsonl",
                  "data/dev/routing_blind_v8.jsonl", "data/dev/routing_blind_v9.jsonl", "data/dev/routing_blind_v10.jsonl",
                  "data/dev/routing_blind_v11.jsonl", "data/dev/routing_blind_v12.jsonl", "data/dev/routing_blind_v13.jsonl",
                  "data/dev/routing_blind_v14.jsonl", "data/dev/routing_blind_v15.jsonl",
                  "data/dev/routing_blind_v16.jsonl", "data/dev/routing_blind_v17.jsonl", "data/dev/routing_blind_v18.jsonl",
                  "data/dev/routing_blind_v19.jsonl", "data/dev/routing_blind_v20.jsonl",
                  "data/automation/dev/automation_dev.jsonl", "data/automation/dev/automation_dev_v2.jsonl",
                  "data/automation/dev/automation_spoken_dev.jsonl", "data/automation/dev/automation_study_v3.jsonl",
                  "data/automation/dev/automation_blind.jsonl", "data/automation/dev/automation_blind_v1.jsonl",
                  "data/automation/dev/automation_blind_v2.jsonl", "data/automation/dev/automation_blind_v3.jsonl",
                  "data/automation/dev/automation_blind_v4.jsonl", "data/automation/dev/automation_blind_v5.jsonl",
                  "data/automation/dev/automation_blind_v6.jsonl", "data/automation/dev/automation_blind_v7.jsonl",
                  "data/automation/dev/automation_blind_v8.jsonl", "data/automation/dev/automation_blind_v9.jsonl",
                  "data/automation/dev/automation_blind_v10.jsonl", "data/automation/dev/automation_blind_v11.jsonl",
                  "data/automation/dev/automation_blind_v12.jsonl", "data/automation/dev/automation_blind_v13.jsonl",
                  "data/automation/dev/automation_blind_v14.jsonl",
                  "data/automation/dev/automation_blind_v15.jsonl",
                  "data/automation/dev/automation_blind_v16.jsonl", "data/automation/dev/automation_blind_v17.jsonl",
                  "data/automation/dev/automation_blind_v18.jsonl",
                  "data/automation/dev/automation_blind_v19.jsonl",
                  "data/automation/dev/automation_blind_v20.jsonl")
TRAINING_FILES = ("data/train/core.jsonl", "data/train/generated.jsonl",
                  "data/automation/train/core.jsonl", "data/automation/train/generated.jsonl")
FILES = SNAPSHOT_FILES + TRAINING_FILES
IGNORED = ("model_version",)
SHOWN = 10  # differing records printed in full per file


def out_name(path: str) -> str:
    return path.replace("/", "__")


def default_model() -> Path:
    from fastslow.models.lifecycle.manifest import DEFAULT_MODEL_PATH

    return Path(DEFAULT_MODEL_PATH)


def score(model: Path, out: Path, files=FILES) -> None:
    """``fastslow score`` of each of ``files`` with ``model``, in this process, into ``out/<out_name>``."""
    from fastslow.cli import main

    out.mkdir(parents=True, exist_ok=True)
    for path in files:
        if main(["score", str(ROOT / path), "-o", str(out / out_name(path)), "--model", str(model), "--jobs", "1"]):
            raise SystemExit(f"fastslow score failed on {path}")


def comparable(line: str) -> dict:
    record = json.loads(line)
    for key in IGNORED:
        record.pop(key, None)
    return record


def read_records(path: Path) -> list[dict]:
    return [comparable(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def field_changes(before: dict, after: dict) -> list[str]:
    """One line per field whose value differs, in the record's order."""
    keys = list(before) + [k for k in after if k not in before]
    return [f"{key}: {json.dumps(before.get(key), ensure_ascii=False)} → {json.dumps(after.get(key), ensure_ascii=False)}"
            for key in keys if before.get(key) != after.get(key)]


def differences(name: str, before: list[dict], after: list[dict], shown: int = SHOWN) -> tuple[int, list[str]]:
    """How many records of one file differ, and a readable report of the first ``shown`` of them."""
    if len(before) != len(after):
        return max(len(before), len(after)), [f"{name}: {len(before)} records before, {len(after)} after"]
    diffs = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    lines = [f"{name}: {len(before)} records, {len(diffs)} differ"] if diffs else []
    for i in diffs[:shown]:
        a, b = before[i], after[i]
        lines.append(f"  line {i + 1} ({a.get('id')}, {a.get('query')!r})")
        lines += [f"    {change}" for change in field_changes(a, b)]
    if len(diffs) > shown:
        lines.append(f"  ... and {len(diffs) - shown} more")
    return len(diffs), lines


def compare(before: Path, after: Path, files=FILES) -> int:
    """Print the differing records of every file scored in both runs; 1 when any differs."""
    total = 0
    for path in files:
        a, b = before / out_name(path), after / out_name(path)
        if not a.exists() and not b.exists():
            continue
        if not b.exists():
            print(f"{path}: scored before, missing after ({b})")
            total += 1
            continue
        if not a.exists():  # a newer tool scores more files than an older run holds
            print(f"{path}: scored only after, not compared")
            continue
        count, lines = differences(path, read_records(a), read_records(b), shown=sys.maxsize)
        total += count
        print("\n".join(lines) if lines else f"{path}: the same records")
    return 1 if total else 0


def write_snapshot(scored: Path, snapshot: Path = SNAPSHOT_DIR) -> None:
    """``snapshot/<out_name>`` for each snapshot file: its records without the ignored fields."""
    snapshot.mkdir(parents=True, exist_ok=True)
    for path in SNAPSHOT_FILES:
        records = read_records(scored / out_name(path))
        (snapshot / out_name(path)).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                                               encoding="utf-8")


def main(argv=None) -> int:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("score", help="score the bundled files into DIR")
    p.add_argument("--model", type=Path, default=None, help="default: the model `python train.py` writes")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--no-training", action="store_true", help="only the dev and fixture files")
    p = sub.add_parser("compare", help="compare two scored directories record by record")
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    p = sub.add_parser("snapshot", help="compare a model's records with tests/records/, or rewrite it")
    p.add_argument("--model", type=Path, default=None, help="default: the model `python train.py` writes")
    p.add_argument("--update", action="store_true", help="rewrite tests/records/ with the model's records")
    args = parser.parse_args(argv)
    if args.command == "compare":
        return compare(args.before, args.after)
    model = args.model or default_model()
    if args.command == "score":
        score(model, args.out, SNAPSHOT_FILES if args.no_training else FILES)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        score(model, Path(tmp), SNAPSHOT_FILES)
        if args.update:
            write_snapshot(Path(tmp))
            print(f"{SNAPSHOT_DIR.relative_to(ROOT)}: rewritten; review `git diff` before committing")
            return 0
        return compare(SNAPSHOT_DIR, Path(tmp), SNAPSHOT_FILES)


if __name__ == "__main__":
    sys.exit(main())
