"""The server's and the pipeline's fast paths give what the plain paths give: the micro-batcher (batched,
in the scoring thread or cancelled, every request gets the record of its own row), the body reader's shared deadline
sweep (a 408 only for a body that does not arrive), ``score_valid`` against ``score``, the capture
candidates against their definition, and the route order against the OpenAPI description. No timings
are asserted (see benchmarks/bench_server.py)."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from starlette.requests import Request

from fastslow.models.capture.candidates import (capture_candidates, group_signals, idempotency_key,
                                                is_capture_item, normalised_group)
from fastslow.models.capture.policy import run_capture_policy
from fastslow.models.record import validate_input
from fastslow.serve.metrics import MULTIPROC_ENV, Metrics
from fastslow.serve.server import HOT_PATHS, BadRequest, BodyDeadlines, MicroBatcher, read_json_body

ROOT = Path(__file__).resolve().parents[1]
AUTOMATION_FILES = ("data/fixtures/automation_v1.jsonl", "data/automation/dev/automation_dev.jsonl")


# ---------------------------------------------------------------------------------------------- batcher


class Scorer:
    """A stand-in for ``model.score_valid``: one record per row naming it, every call remembered."""

    def __init__(self, fail_on: str | None = None):
        self.calls: list[list[str]] = []
        self.fail_on = fail_on

    def __call__(self, items: list[dict]) -> list[dict]:
        self.calls.append([item["query"] for item in items])
        if self.fail_on in self.calls[-1]:
            raise RuntimeError("boom")
        return [{"record_of": item["query"]} for item in items]


def gather(batcher: MicroBatcher, queries: list[str]) -> list:
    async def run():
        return await asyncio.gather(*(batcher.score({"query": q}) for q in queries), return_exceptions=True)
    return asyncio.run(run())


def test_requests_that_arrive_together_are_scored_in_one_batch_each_with_its_own_record():
    scorer = Scorer()
    assert gather(MicroBatcher(scorer), list("abcde")) == [{"record_of": q} for q in "abcde"]
    assert scorer.calls == [list("abcde")]


def test_a_batch_holds_at_most_max_batch_rows():
    scorer = Scorer()
    batcher = MicroBatcher(scorer, max_batch=2)
    assert gather(batcher, list("abcde")) == [{"record_of": q} for q in "abcde"]
    assert scorer.calls == [["a", "b"], ["c", "d"], ["e"]]


class BlockingScorer(Scorer):
    """A ``Scorer`` whose first call waits until ``release`` is set: a batch being scored, for as long as a test needs."""

    def __init__(self):
        super().__init__()
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self, items):
        if not self.calls:
            self.started.set()
            assert self.release.wait(30)
        return super().__call__(items)


def test_the_event_loop_runs_while_a_batch_is_scored_and_requests_meanwhile_form_the_next_batch():
    scorer = BlockingScorer()

    async def run():
        with ThreadPoolExecutor(1) as executor:
            batcher = MicroBatcher(scorer, executor=executor)
            first = asyncio.ensure_future(batcher.score({"query": "a"}))
            while not scorer.started.is_set():  # the loop turns while "a" is scored in the thread
                await asyncio.sleep(0.01)
            later = [asyncio.ensure_future(batcher.score({"query": q})) for q in "bcd"]
            await asyncio.sleep(0.05)
            assert not first.done() and not any(f.done() for f in later)
            scorer.release.set()
            return await asyncio.gather(first, *later)

    assert asyncio.run(run()) == [{"record_of": q} for q in "abcd"]
    assert scorer.calls == [["a"], ["b", "c", "d"]]


def test_a_failing_row_gets_its_exception_and_the_others_their_records():
    scorer = Scorer(fail_on="b")
    results = gather(MicroBatcher(scorer), list("abc"))
    assert results[0] == {"record_of": "a"} and results[2] == {"record_of": "c"}
    assert isinstance(results[1], RuntimeError)
    assert scorer.calls[0] == list("abc")  # the batch, then one by one
    assert scorer.calls[1:] == [["a"], ["b"], ["c"]]


def test_the_others_in_a_batch_still_get_their_records_when_the_first_request_is_cancelled():
    scorer = Scorer()
    batcher = MicroBatcher(scorer)

    async def run():
        first = asyncio.ensure_future(batcher.score({"query": "a"}))
        others = [asyncio.ensure_future(batcher.score({"query": q})) for q in "bc"]
        await asyncio.sleep(0)  # all three have joined the batch
        assert [row["query"] for row, _ in batcher.open] == ["a", "b", "c"]
        first.cancel()
        results = await asyncio.gather(*others)
        with pytest.raises(asyncio.CancelledError):
            await first
        return results

    assert asyncio.run(run()) == [{"record_of": "b"}, {"record_of": "c"}]
    assert batcher.open is None and scorer.calls == [["a", "b", "c"]]


def test_the_batcher_gives_the_records_of_model_score(model):
    rows = [{"id": i, "query": q} for i, q in enumerate(["打开空调", "帮我规划一下周末去杭州的行程", "下一首",
                                                         "上车时打开空调", "太冷了，调一下空调"])]

    async def run(executor=None):
        batcher = MicroBatcher(model.score_valid, executor=executor)
        return await asyncio.gather(*(batcher.score(validate_input(row)) for row in rows))
    assert asyncio.run(run()) == model.score(rows)
    with ThreadPoolExecutor(1) as executor:
        assert asyncio.run(run(executor)) == model.score(rows)


# ---------------------------------------------------------------------------------------------- metrics


def test_every_metrics_label_takes_its_value_from_a_closed_set(monkeypatch):
    """A client's made-up HTTP methods are counted as ``other``: the exposition does not grow with them."""
    monkeypatch.delenv(MULTIPROC_ENV, raising=False)
    metrics = Metrics()
    metrics.observe_request("/healthz", "GET", 200, 0.001)
    size = len(metrics.exposition()[0])
    for i in range(500):
        metrics.observe_request("other", f"M{i:04d}", 405, 0.001)
    body = metrics.exposition()[0].decode()
    assert "M0001" not in body and 'method="other"' in body
    assert len(body) < 2 * size + 4000  # one more series, not 500


# ---------------------------------------------------------------------------------------------- body reader


def request(messages: list[dict], headers: list[tuple[bytes, bytes]] | None = None, then_wait: bool = False):
    """A starlette Request whose receive hands out ``messages``, then waits forever (``then_wait``) or
    reports a disconnect."""
    queue = list(messages)

    async def receive():
        if queue:
            return queue.pop(0)
        if then_wait:
            await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    return Request({"type": "http", "method": "POST", "path": "/v1/route", "headers": headers or []}, receive)


def read(req: Request, deadlines: BodyDeadlines, max_bytes: int = 1000):
    async def run():
        task = asyncio.current_task()
        try:
            return await read_json_body(req, max_bytes, deadlines)
        finally:
            assert task.cancelling() == 0  # the sweep's cancel is taken back: the request goes on
    return asyncio.run(run())


def test_a_body_in_one_message_or_in_chunks_parses_as_a_whole():
    body = json.dumps({"query": "打开空调", "id": 7}, ensure_ascii=False).encode()
    deadlines = BodyDeadlines(5)
    assert read(request([{"type": "http.request", "body": body}]), deadlines) == {"query": "打开空调", "id": 7}
    chunks = [{"type": "http.request", "body": body[i: i + 3], "more_body": i + 3 < len(body)}
              for i in range(0, len(body), 3)]
    assert read(request(chunks), deadlines) == {"query": "打开空调", "id": 7}
    assert deadlines.reading == {} and deadlines.expired == set()


def test_a_body_that_stops_arriving_gets_a_408_and_a_closed_connection():
    deadlines = BodyDeadlines(0.05, resolution=0.01)
    half = request([{"type": "http.request", "body": b'{"query": "x', "more_body": True}], then_wait=True)
    with pytest.raises(BadRequest) as caught:
        read(half, deadlines)
    assert caught.value.status == 408 and caught.value.field == "body"
    assert caught.value.headers == {"connection": "close"} and "(12 bytes arrived)" in caught.value.message
    assert deadlines.reading == {} and deadlines.expired == set()


def test_the_deadline_holds_on_a_new_event_loop_after_the_first_one_has_gone():
    deadlines = BodyDeadlines(0.05, resolution=0.01)
    assert read(request([{"type": "http.request", "body": b'{"query": "x"}'}]), deadlines) == {"query": "x"}
    assert deadlines.sweep_loop is not None  # armed on a loop that asyncio.run has closed
    with pytest.raises(BadRequest) as caught:
        read(request([], then_wait=True), deadlines)
    assert caught.value.status == 408


def test_a_cancel_from_elsewhere_is_not_taken_for_the_deadline():
    deadlines = BodyDeadlines(60)
    waiting = request([], then_wait=True)

    async def run():
        task = asyncio.ensure_future(read_json_body(waiting, 1000, deadlines))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(run())
    assert deadlines.reading == {} and deadlines.expired == set()


def test_size_limits_and_broken_bodies_are_refused_as_before():
    deadlines = BodyDeadlines(5)
    with pytest.raises(BadRequest) as caught:
        read(request([{"type": "http.request", "body": b"{" + b" " * 2000 + b"}"}]), deadlines)
    assert caught.value.status == 413 and "2002 bytes (limit 1000)" in caught.value.message
    with pytest.raises(BadRequest) as caught:
        read(request([], headers=[(b"content-length", b"9000")]), deadlines)
    assert caught.value.status == 413 and "9000 bytes" in caught.value.message
    with pytest.raises(BadRequest) as caught:
        read(request([{"type": "http.request", "body": b"  "}]), deadlines)
    assert caught.value.status == 400 and caught.value.message.startswith("empty")
    from starlette.requests import ClientDisconnect
    with pytest.raises(ClientDisconnect):
        read(request([{"type": "http.request", "body": b"{", "more_body": True}]), deadlines)


# ---------------------------------------------------------------------------------------------- pipeline


def automation_rows() -> list[dict]:
    rows = []
    for name in AUTOMATION_FILES:
        for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append({"query": json.loads(line)["query"]})
    return rows


def test_score_valid_gives_the_records_of_score(model):
    rows = [{"id": i, **row} for i, row in enumerate(automation_rows()[:80])]
    rows += [{"query": "好的", "context": [{"role": "assistant", "system": "slow", "text": "要开启湿滑模式吗？"}]},
             {"query": "上车时打开空调", "endpoint": "car", "explain": True}]
    assert model.score_valid([validate_input(row) for row in rows]) == model.score(rows)


def reference_candidates(item: dict, groups: list[dict], confidences, fallback) -> list[dict]:
    """``capture_candidates`` as the module doc defines it, from its public parts, one group at a time."""
    seen: dict[str, int] = {}
    out = []
    for group, confidence in zip(groups, confidences or [None] * len(groups)):
        if not is_capture_item(group):
            continue
        identity = normalised_group(group)
        occurrence = seen[identity] = seen.get(identity, -1) + 1
        signals = group_signals(item["query"], group, fallback if confidence is None else confidence,
                                item.get("existing_tasks") or [])
        result = run_capture_policy(signals)
        entry = {"outcome": result.outcome.value, "interruption": result.interruption.value,
                 "candidate_action": result.candidate_action.value if result.candidate_action else None,
                 "condition": group["condition"], "querys": [dict(q) for q in group.get("querys") or []],
                 "capture_confidence": signals.capture_confidence,
                 "idempotency_key": idempotency_key(item.get("id"), item["query"], group, occurrence)}
        target = signals.duplicate_of or signals.refines_task
        if target is not None and result.candidate_action is not None and result.candidate_action.value != "create":
            entry["target_task_id"] = target
        out.append(entry)
    return out


def test_capture_candidates_are_their_definition_on_every_bundled_automation_query(model):
    items = [validate_input(row) for row in automation_rows()]
    groups, confidences = model.automation.parse_many_with_confidence([item["query"] for item in items])
    checked = 0
    for item, item_groups, item_confidences in zip(items, groups, confidences):
        capture = [g for g in item_groups if is_capture_item(g)]
        tasks = [{"id": "t1", "name": "回家模式", "condition": g["condition"],
                  "querys": [dict(q) for q in g.get("querys") or []]} for g in capture[:1]]
        for variant in ({**item, "id": None}, {**item, "id": "r1"}, {**item, "existing_tasks": tasks},
                        {**item, "query": "把回家模式改成" + item["query"], "existing_tasks": tasks}):
            assert (capture_candidates(variant, item_groups, item_confidences, 0.9)
                    == reference_candidates(variant, item_groups, item_confidences, 0.9)), variant["query"]
        checked += bool(capture)
    assert checked > 50


# ---------------------------------------------------------------------------------------------- routes


def test_traffic_routes_are_matched_first_and_the_openapi_description_keeps_declaration_order(trained):
    from fastslow.serve.server import create_app

    app = create_app(trained["path"])
    assert [r.path for r in app.routes[: len(HOT_PATHS)]] == list(HOT_PATHS)
    assert sorted(r.path for r in app.routes) == sorted({r.path for r in app.routes})  # no path twice
    assert list(app.openapi()["paths"]) == ["/healthz", "/readyz", "/v1/model", "/v1/route", "/v1/route/batch"]
