"""Score the bundled dev sets, fixtures and training files, or compare two such runs record by record.

    python tools/compare_records.py score --model M.joblib --out DIR     # DIR/<file>.jsonl, one per input
    python tools/compare_records.py compare BEFORE_DIR AFTER_DIR         # differing records, file by file

A refactoring that must not change behaviour scores with a model trained before it (old code) and
with one trained after it (new code), then compares: every differing record is printed with its
line (for a file whose name holds ``blind`` only the count is printed: its rows are never shown).
Records are compared as parsed JSON without ``model_version`` (it hashes the code and lexicon files).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ("data/dev/routing_dev.jsonl", "data/fixtures/routing_v1.jsonl", "data/fixtures/automation_v1.jsonl",
         "data/automation/dev/automation_dev.jsonl", "data/automation/dev/automation_blind.jsonl",
         "data/train/core.jsonl", "data/train/generated.jsonl",
         "data/automation/train/core.jsonl", "data/automation/train/generated.jsonl")
IGNORED = ("model_version",)


def out_name(path: str) -> str:
    return path.replace("/", "__")


def score(model: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for path in FILES:
        subprocess.run([sys.executable, "-m", "fastslow.cli", "score", str(ROOT / path), "-o",
                        str(out / out_name(path)), "--model", str(model), "--jobs", "1"], check=True)


def comparable(line: str) -> dict:
    record = json.loads(line)
    for key in IGNORED:
        record.pop(key, None)
    return record


def compare(before: Path, after: Path) -> int:
    total_diff = 0
    for path in FILES:
        a = (before / out_name(path)).read_text(encoding="utf-8").splitlines()
        b = (after / out_name(path)).read_text(encoding="utf-8").splitlines()
        if len(a) != len(b):
            print(f"{path}: {len(a)} records before, {len(b)} after")
            total_diff += 1
            continue
        diffs = [i for i, (x, y) in enumerate(zip(a, b), 1) if comparable(x) != comparable(y)]
        total_diff += len(diffs)
        print(f"{path}: {len(a)} records, {len(diffs)} differ")
        if "blind" in path:
            continue
        for i in diffs:
            print(f"  line {i}\n    before {a[i - 1]}\n    after  {b[i - 1]}")
    return 1 if total_diff else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("score")
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("compare")
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "score":
        score(args.model, args.out)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
