"""The XA4.1 labels and reason codes, read once from ``data/taxonomy/reason_codes.tsv``."""

from __future__ import annotations

import csv
from pathlib import Path

from fastslow.data import TAXONOMY_DIR

REASON_CODES_FILE = TAXONOMY_DIR / "reason_codes.tsv"

FAST, SLOW, AMBIGUOUS = "快", "慢", "模糊"
LABELS = (FAST, SLOW, AMBIGUOUS)
#: ASCII names for metric keys and file names.
LABEL_SLUGS = {FAST: "fast", SLOW: "slow", AMBIGUOUS: "ambiguous"}
#: 规则 "能力与默认路由": fixed derivation, never learned.
DEFAULT_ROUTE = {FAST: "快系统", SLOW: "慢系统", AMBIGUOUS: "慢系统"}
ENDPOINTS = ("car", "speaker", "home")


def _read_codes(path: Path = REASON_CODES_FILE) -> dict[str, str]:
    with path.open(encoding="utf-8", newline="") as f:
        return {row["code"]: row["label"] for row in csv.DictReader(f, delimiter="\t")}


#: reason code -> label group, in the spec's order.
CODE_LABEL: dict[str, str] = _read_codes()
REASON_CODES: tuple[str, ...] = tuple(CODE_LABEL)

DIRECT_ACTION = "DIRECT_ACTION"
DIRECT_DETERMINISTIC_QUERY = "DIRECT_DETERMINISTIC_QUERY"
EXPLICIT_DEVICE_MULTI_ACTION = "EXPLICIT_DEVICE_MULTI_ACTION"
MULTI_STEP_PLANNING = "MULTI_STEP_PLANNING"
CONTEXT_REQUIRED = "CONTEXT_REQUIRED"
POLICY_UNCERTAIN = "POLICY_UNCERTAIN"
AUTOMATION_SLOW_POLICY = "AUTOMATION_SLOW_POLICY"
MISSING_REQUIRED_SLOT = "MISSING_REQUIRED_SLOT"

assert set(CODE_LABEL.values()) == set(LABELS), "reason_codes.tsv must use exactly 快/慢/模糊"


def label_of(code: str) -> str:
    """The label group of a reason code; KeyError for an unknown code."""
    return CODE_LABEL[code]
