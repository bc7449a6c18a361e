"""The routing half's and the server's fast paths give what their definitions give, on the bundled
texts: the server's JSON encoder against ``json.dumps``, and the router's entry builders against the
plain ones. No timings are asserted (see benchmarks/)."""

from __future__ import annotations

import json

from conftest import ROUTING_FILES, bundled_queries, bundled_rows
from fastslow.models.record import InputError, validate_input
from fastslow.serve.server import _dumps, invalid_value

def test_the_servers_json_is_json_dumps_byte_for_byte(model):
    """The encoder without the check for circular references writes what ``json.dumps`` writes, on the
    record of every bundled query (explanations too: floats of every size) and on text that UTF-8 cannot
    hold (the ASCII fallback)."""
    queries = bundled_queries(ROUTING_FILES)
    records = model.score([{"id": i, "query": q, "explain": i % 7 == 0} for i, q in enumerate(queries)])
    for payload in [*records, {"records": records[:50]}, {"id": "\ud800", "x": [1e-05, 1e16, -0.0, 2**70]}]:
        try:
            expected = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError:
            expected = json.dumps(payload, allow_nan=False, separators=(",", ":")).encode("ascii")
        assert _dumps(payload) == expected


def _validated(raw, **options):
    try:
        return validate_input(raw, **options)
    except InputError as exc:
        return str(exc)


def test_validation_after_the_servers_value_check_is_the_full_validation():
    """``values_checked`` skips only checks that cannot fail once ``invalid_value`` passed the body: the same
    clean item, or the same error, on every bundled input and on inputs wrong in other ways."""
    rows = bundled_rows((*ROUTING_FILES, "data/fixtures/automation_v1.jsonl"))
    rows += [{"query": " "}, {"query": 3}, {"query": "开空调", "id": True}, {"query": "开空调", "endpoint": "moon"},
             {"query": "开空调", "context": [{"role": "robot", "text": "x"}]}, {"query": "开空调", "explain": "yes"},
             {"query": "开空调", "existing_tasks": [{"id": "t1", "querys": [{"subquery": 1}]}]}, {"query": "开" * 1001}]
    checked = [raw for raw in rows if invalid_value(raw) is None]
    assert len(checked) == len(rows)
    assert [_validated(raw, values_checked=True) for raw in checked] == [_validated(raw) for raw in checked]
