"""The routing half's and the server's fast paths give what their definitions give, on the bundled
texts: the server's JSON encoder against ``json.dumps``, and the router's entry builders against the
plain ones. No timings are asserted (see benchmarks/)."""

from __future__ import annotations

import json
from pathlib import Path

from fastslow.serve.server import _dumps

ROOT = Path(__file__).resolve().parents[1]
ROUTING_FILES = ("data/dev/routing_dev.jsonl", "data/fixtures/routing_v1.jsonl", "data/train/core.jsonl")


def bundled_routing_queries() -> list[str]:
    return sorted({json.loads(line)["query"] for path in ROUTING_FILES
                   for line in (ROOT / path).read_text(encoding="utf-8").splitlines() if line.strip()})


def test_the_servers_json_is_json_dumps_byte_for_byte(model):
    """The encoder without the check for circular references writes what ``json.dumps`` writes, on the
    record of every bundled query (explanations too: floats of every size) and on text that UTF-8 cannot
    hold (the ASCII fallback)."""
    queries = bundled_routing_queries()
    records = model.score([{"id": i, "query": q, "explain": i % 7 == 0} for i, q in enumerate(queries)])
    for payload in [*records, {"records": records[:50]}, {"id": "\ud800", "x": [1e-05, 1e16, -0.0, 2**70]}]:
        try:
            expected = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError:
            expected = json.dumps(payload, allow_nan=False, separators=(",", ":")).encode("ascii")
        assert _dumps(payload) == expected
