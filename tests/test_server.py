"""`fastslow serve` as a client sees it: the real server in a subprocess on a free loopback port.

Every endpoint, every kind of bad input (each must get a 4xx naming the field, never a 5xx or a dead
worker), the start-up refusals of a model file that fails its checks, and a bounded schemathesis run
against the served OpenAPI schema. No timings are asserted here (see benchmarks/bench_server.py).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from conftest import copy_model, run_cli

MAX_ITEMS = 16
MAX_BODY = 64 * 1024
BODY_TIMEOUT = 2  # seconds (FASTSLOW_BODY_TIMEOUT) for a request body to arrive
START_TIMEOUT = 120


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A `fastslow serve` subprocess; ``stop()`` always ends it."""

    def __init__(self, folder: Path, *args, env: dict | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.out_path, self.err_path = folder / f"serve-{self.port}.out", folder / f"serve-{self.port}.err"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "fastslow.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port), *args],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})

    def wait_ready(self, timeout: float = START_TIMEOUT) -> "Server":
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode}:\n{self.stderr()}")
            try:
                if requests.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"server not ready after {timeout} s:\n{self.stderr()}")

    def wait_exit(self, timeout: float = START_TIMEOUT) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def stderr(self) -> str:
        return self.err_path.read_text(encoding="utf-8", errors="replace")

    def access_lines(self) -> list[dict]:
        out = []
        for line in self.out_path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:  # a line being written
                pass
        return out

    def post(self, path: str, payload=None, data: bytes | None = None, **kwargs) -> requests.Response:
        if data is None:
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        return requests.post(self.url + path, data=data, headers={"Content-Type": "application/json",
                                                                  **kwargs.pop("headers", {})}, timeout=30, **kwargs)

    def get(self, path: str, **kwargs) -> requests.Response:
        return requests.get(self.url + path, timeout=30, **kwargs)


@pytest.fixture(scope="module")
def server(trained, tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("serve"), "--model", str(trained["path"]),
                 "--max-batch-items", str(MAX_ITEMS), "--max-body-bytes", str(MAX_BODY),
                 env={"FASTSLOW_BODY_TIMEOUT": str(BODY_TIMEOUT)})
    try:
        yield srv.wait_ready()
    finally:
        srv.stop()


def cli_records(rows: list[dict], model_path: Path, tmp_path: Path) -> list[dict]:
    """What `fastslow score` writes for these rows (run in this process: the server is the process here)."""
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    result = run_cli("score", path, "--model", model_path)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]


ROWS = [
    {"id": "r1", "query": "把空调调到24度，然后打开座椅加热", "endpoint": "car"},
    {"id": 2, "query": "帮我规划一下周末去杭州的行程"},
    {"query": "太冷了，调一下空调", "endpoint": None, "context": None},
    {"id": "c", "query": "就按刚才那个来", "context": [
        {"role": "user", "system": None, "text": "导航去公司"},
        {"role": "assistant", "system": "fast", "text": "好的，已为你规划路线"}]},
    {"id": "t", "query": "下一首", "existing_tasks": [], "extra_column": "ignored"},
]


# ---------------------------------------------------------------------------------------------- endpoints


def test_health_and_readiness(server):
    assert server.get("/healthz").json() == {"status": "ok"}
    ready = server.get("/readyz")
    assert ready.status_code == 200 and ready.json()["ready"] is True


def test_model_endpoint_reports_version_run_sha_metrics_and_training_time(server, trained):
    info = server.get("/v1/model").json()
    manifest = trained["manifest"]
    assert info["model_version"] == manifest["model_version"]
    assert info["mlflow_run_id"] == trained["run_id"]
    assert info["sha256"] == manifest["sha256"]
    assert info["trained_at"] == manifest["trained_at"]
    assert info["fixture_metrics"]["fixture_label_accuracy"] == trained["metrics"]["fixture_label_accuracy"]
    assert all(k.startswith("fixture_") for k in info["fixture_metrics"])
    assert info["max_batch_items"] == MAX_ITEMS and info["max_body_bytes"] == MAX_BODY


def test_model_endpoint_names_the_model_file_not_where_it_lives(server, trained):
    info = server.get("/v1/model").json()
    assert info["path"] == trained["path"].name and str(trained["path"].parent) not in json.dumps(info)


def test_openapi_schema_is_served(server):
    schema = server.get("/openapi.json").json()
    assert {"/v1/route", "/v1/route/batch", "/v1/model", "/healthz", "/readyz"} <= set(schema["paths"])
    assert schema["components"]["schemas"]["BatchInput"]["properties"]["items"]["maxItems"] == MAX_ITEMS
    assert server.get("/docs").status_code == 200


def test_single_and_batch_give_exactly_the_fastslow_score_records(server, trained, tmp_path):
    expected = cli_records(ROWS, trained["path"], tmp_path)
    single = [server.post("/v1/route", row) for row in ROWS]
    assert [r.status_code for r in single] == [200] * len(ROWS)
    assert [r.json() for r in single] == expected
    batch = server.post("/v1/route/batch", {"items": ROWS})
    assert batch.status_code == 200 and batch.json() == {"records": expected}


#: every input field, existing_tasks included: the tasks give an enrichment and an update proposal
ALL_FIELDS = [
    {"id": "e1", "query": "上车时打开空调", "endpoint": "car",
     "context": [{"role": "user", "system": None, "text": "导航去公司"},
                 {"role": "assistant", "system": "fast", "text": "好的，已为你规划路线"}],
     "existing_tasks": [{"id": "t-ac", "name": "上车开空调", "condition": "上车时",
                         "querys": [{"subquery": "打开空调", "intent": "设备控制"}]}]},
    {"id": "e2", "query": "修改上车习惯，上车时打开座椅加热", "endpoint": "car", "context": [],
     "existing_tasks": [{"id": 42, "name": "上车习惯", "condition": "上车时", "querys": [{"subquery": "打开空调"}]}]},
    {"id": "e3", "query": "就按刚才那个来", "endpoint": "speaker",
     "context": [{"role": "assistant", "system": "slow", "text": "周末去杭州的行程已规划好"}], "existing_tasks": None},
    {"id": "e4", "query": "每天早上八点提醒我喝水", "endpoint": "home", "context": None,
     "existing_tasks": [{"id": "m1", "name": None, "condition": None, "querys": None}]},
    {"id": "e5", "query": "打开空调", "existing_tasks": [{"id": " "}]},  # an error record, the same everywhere
]


def test_every_input_field_gives_the_same_record_through_cli_http_and_pyfunc(server, trained, tmp_path):
    import mlflow.pyfunc
    import pandas as pd

    from fastslow.models.lifecycle.pyfunc import INPUT_COLUMNS, save_pyfunc_model

    expected = cli_records(ALL_FIELDS, trained["path"], tmp_path)
    actions = [(c["outcome"], c.get("target_task_id")) for r in expected[:2] for c in r["candidates"]]
    assert ("propose_enrichment", "t-ac") in actions and ("propose_update", "42") in actions
    assert expected[-1]["error"].startswith("line 5: existing_tasks[0].id: ")
    http_expected = expected[:-1] + [{**expected[-1], "error": expected[-1]["error"].removeprefix("line 5: ")}]
    del http_expected[-1]["line"]
    assert [server.post("/v1/route", row).json() for row in ALL_FIELDS[:-1]] == http_expected[:-1]
    assert server.post("/v1/route/batch", {"items": ALL_FIELDS}).json() == {"records": http_expected}

    pyfunc = mlflow.pyfunc.load_model(str(save_pyfunc_model(trained["path"], tmp_path / "pyfunc")))
    frame = pd.DataFrame([{k: json.dumps(v, ensure_ascii=False) if k in ("context", "existing_tasks") and v is not None
                           else v for k, v in row.items()} for row in ALL_FIELDS], columns=list(INPUT_COLUMNS))
    lines = pyfunc.predict(frame)["record"].tolist()
    assert [json.loads(line) for line in lines] == http_expected
    assert lines[:-1] == [json.dumps(r, ensure_ascii=False) for r in expected[:-1]]  # byte for byte the CLI's


@pytest.mark.parametrize("body, field, shown", [('{"query": "打开空调", "id": 1e400}', "id", "Infinity"),
                                               ('{"query": "打开空调", "id": -1e400}', "id", "-Infinity"),
                                               ('{"query": "", "id": 1e400}', "id", "Infinity"),
                                               ('{"query": "打开空调", "id": [1, 1e400]}', "id[1]", "Infinity"),
                                               ('{"query": 1e400}', "query", "Infinity"),
                                               ('{"query": "打开空调", "context": [{"role": "user", "text": 1e999}]}',
                                                "context[0].text", "Infinity")])
def test_a_number_json_cannot_hold_is_refused_as_nan_is_never_a_500(server, body, field, shown):
    """``1e400`` parses to an infinite float, which no record can hold: refused as ``NaN`` is, naming the field."""
    response = server.post("/v1/route", data=body.encode())
    assert response.status_code == 400, response.text
    payload = json.loads(response.text, parse_constant=pytest.fail)
    assert (payload["field"], payload["error"]) == (field, f"{field}: {shown} is not valid JSON")
    batch = server.post("/v1/route/batch", data=('{"items": [%s, {"id": 2, "query": "打开空调"}]}' % body).encode())
    assert batch.status_code == 200, batch.text
    bad, good = json.loads(batch.text, parse_constant=pytest.fail)["records"]
    assert bad["id"] is None and bad["error"] == payload["error"]
    assert good["id"] == 2 and good["label"]


def test_the_schema_says_what_the_server_does_about_blank_text(server):
    r"""``\u001f`` is whitespace to Python (refused as blank) but not to JSON Schema's ``\S``; the schema
    spells out Python's whitespace, so both refuse it, and both accept ``\u0000``."""
    import jsonschema

    schema = server.get("/openapi.json").json()
    route_input = {**schema["components"]["schemas"]["RouteRequest"], "components": schema["components"]}
    validator = jsonschema.Draft202012Validator(route_input)
    for query, status in [("\u001f", 422), ("\u0085", 422), ("\u3000 ", 422), ("\u0000", 200), ("\ufeff", 200)]:
        assert server.post("/v1/route", {"query": query}).status_code == status, repr(query)
        assert validator.is_valid({"query": query}) == (status == 200), repr(query)


def test_batch_keeps_order_and_gives_bad_items_their_own_error_record(server, model):
    items = [{"id": "a", "query": "打开空调"}, {"id": "b", "query": ""}, {"id": "c", "query": 12}, "not an object",
             {"id": "e", "query": "开" * 1001}, {"id": {"x": 1}, "query": "开空调"}, {"id": "g", "endpoint": "tv"},
             {"id": "h", "query": "关车窗", "context": "earlier"}, {"id": "i", "query": "\udcff"},
             {"id": "j", "query": "打开车窗，播放周杰伦的歌"}]
    response = server.post("/v1/route/batch", data=json.dumps({"items": items}).encode("ascii"))
    assert response.status_code == 200
    records = response.json()["records"]
    assert len(records) == len(items)
    assert records[0]["label"] and records[-1]["label"] and records[-1]["id"] == "j"
    assert [r.get("error", "").split(":")[0] for r in records] == [
        "", "query", "query", "row", "query", "id", "query", "context", "query", ""]
    assert records[:-2] == model.score(items[:-2])  # the record module's own error records


def test_an_empty_batch_gives_no_records(server):
    response = server.post("/v1/route/batch", {"items": []})
    assert response.status_code == 200 and response.json() == {"records": []}


def test_concurrent_single_requests_get_their_own_records(server, model):
    """Requests that arrive together are scored together (micro-batching); each gets its own record."""
    rows = [{"id": i, "query": q} for i, q in enumerate(
        ["打开空调", "帮我规划一下周末去杭州的行程", "下一首", "把温度调到 24 度", "今天适合洗车吗",
         "太冷了，调一下空调", "提醒我明天早上八点开会", "关车窗"] * 8)]
    with ThreadPoolExecutor(16) as pool:
        responses = list(pool.map(lambda row: server.post("/v1/route", row), rows))
    assert [r.status_code for r in responses] == [200] * len(rows)
    assert [r.json() for r in responses] == [model.score([row])[0] for row in rows]


# ---------------------------------------------------------------------------------------------- bad input

NESTED = b'{"query": "x", "context": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"  # within the body limit

BAD_SINGLE = [
    # (name, raw body, status, field)
    ("missing query", b'{"id": "a"}', 422, "query"),
    ("null query", b'{"query": null}', 422, "query"),
    ("empty query", b'{"query": ""}', 422, "query"),
    ("blank query", b'{"query": "  \\n "}', 422, "query"),
    ("query a number", b'{"query": 12}', 422, "query"),
    ("query a list", b'{"query": ["open"]}', 422, "query"),
    ("query too long", json.dumps({"query": "开" * 1001}).encode(), 422, "query"),
    ("id an object", b'{"query": "x", "id": {"a": 1}}', 422, "id"),
    ("id a boolean", b'{"query": "x", "id": true}', 422, "id"),
    ("id a float", b'{"query": "x", "id": 1.5}', 422, "id"),
    ("unknown endpoint", b'{"query": "x", "endpoint": "tv"}', 422, "endpoint"),
    ("context not a list", b'{"query": "x", "context": "hi"}', 422, "context"),
    ("context turn not an object", b'{"query": "x", "context": [1]}', 422, "context[0]"),
    ("context bad role", b'{"query": "x", "context": [{"role": "bot", "text": "a"}]}', 422, "context[0].role"),
    ("context text missing", b'{"query": "x", "context": [{"role": "user"}]}', 422, "context[0].text"),
    ("existing_tasks not a list", b'{"query": "x", "existing_tasks": {}}', 422, "existing_tasks"),
    ("body a list", b'[{"query": "x"}]', 422, "body"),
    ("body a string", b'"x"', 422, "body"),
    ("broken JSON", b'{"query": "x"', 400, "body"),
    ("not JSON at all", b"query=x", 400, "body"),
    ("empty body", b"", 400, "body"),
    ("NaN id", b'{"query": "x", "id": NaN}', 400, "id"),
    ("Infinity in a context turn", b'{"query": "x", "context": [{"role": "user", "text": -Infinity}]}', 400,
     "context[0].text"),
    ("nested too deep", NESTED, 400, "body"),
    ("integer too long", b'{"query": "x", "id": ' + b"9" * 5000 + b"}", 400, "body"),
    ("non-UTF-8 bytes in query", b'{"query": "\xff\xfe\xe5"}', 400, "query"),
    ("non-UTF-8 bytes in a context turn", b'{"query": "x", "context": [{"role": "user", "text": "\xc3"}]}',
     400, "context[0].text"),
    ("lone surrogate escape in id", b'{"query": "x", "id": "\\ud800"}', 400, "id"),
    ("non-UTF-8 outside strings", b'{"query": "x"\xff}', 400, "body"),
    ("UTF-16 body", '{"query": "开空调"}'.encode("utf-16"), 400, "body"),
    ("body over the limit", json.dumps({"query": "x", "pad": "a" * MAX_BODY}).encode(), 413, "body"),
]


@pytest.mark.parametrize("name, body, status, field", BAD_SINGLE, ids=[b[0] for b in BAD_SINGLE])
def test_bad_input_to_route_gets_a_4xx_naming_the_field(server, name, body, status, field):
    response = server.post("/v1/route", data=body)
    assert response.status_code == status, response.text
    payload = response.json()
    assert payload["field"] == field
    assert payload["error"].startswith(f"{field}: ")
    assert payload["request_id"] == response.headers["x-request-id"]


BAD_BATCH = [
    ("body a list", b"[]", 422, "body"),
    ("items missing", b'{"query": "x"}', 422, "items"),
    ("items not a list", b'{"items": {"query": "x"}}', 422, "items"),
    ("items null", b'{"items": null}', 422, "items"),
    ("too many items", json.dumps({"items": [{"query": "开空调"}] * (MAX_ITEMS + 1)}).encode(), 422, "items"),
    ("broken JSON", b'{"items": [', 400, "body"),
    ("body over the limit", json.dumps({"items": [{"query": "开" * 1000}] * MAX_ITEMS}).encode(), 413, "body"),
]


@pytest.mark.parametrize("name, body, status, field", BAD_BATCH, ids=[b[0] for b in BAD_BATCH])
def test_bad_batch_gets_a_4xx_naming_the_field(server, name, body, status, field):
    response = server.post("/v1/route/batch", data=body)
    assert response.status_code == status, response.text
    assert response.json()["field"] == field and response.json()["error"].startswith(f"{field}: ")


def test_non_utf8_bytes_or_nan_in_one_batch_item_give_only_that_item_an_error_record(server):
    body = (b'{"items": [{"id": 1, "query": "\xff\xfe"}, {"id": 2, "query": "' + "打开空调".encode()
            + b'"}, {"id": NaN, "query": "x"}]}')
    records = server.post("/v1/route/batch", data=body).json()["records"]
    assert records[0] == {"id": 1, "query": None, "error": "query: not valid UTF-8 text"}
    assert records[1]["id"] == 2 and records[1]["label"]
    assert records[2] == {"id": None, "query": "x", "error": "id: NaN is not valid JSON"}


def test_a_body_over_the_limit_without_content_length_is_refused(server):
    chunks = (b'{"query": "' + b"a" * 8192 for _ in range(MAX_BODY // 8192 + 2))
    response = requests.post(server.url + "/v1/route", data=chunks, timeout=30)  # chunked transfer encoding
    assert response.status_code == 413 and response.json()["field"] == "body"


def test_a_huge_declared_body_is_refused_before_it_is_read(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(b"POST /v1/route HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 999999999999\r\n\r\n")
        reply = b""
        while b'"request_id"' not in reply:
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 413 ") and b'"field":"body"' in reply


@pytest.mark.parametrize("method, path, status", [("get", "/v1/route", 405), ("post", "/healthz", 405),
                                                  ("get", "/nowhere", 404)])
def test_wrong_method_or_path_gets_a_clear_4xx(server, method, path, status):
    response = requests.request(method, server.url + path, timeout=30)
    assert response.status_code == status and response.json()["field"] in ("method", "path")


def test_no_bad_input_killed_the_worker(server):
    """Runs after the bad-input tests (file order): the same process still answers."""
    assert server.proc.poll() is None
    assert server.post("/v1/route", {"query": "打开空调"}).status_code == 200


# ---------------------------------------------------------------------------------------------- logging


def test_request_id_and_one_access_log_line_per_request(server):
    response = server.post("/v1/route", {"query": "打开空调"}, headers={"X-Request-ID": "trace-42.a"})
    assert response.headers["x-request-id"] == "trace-42.a"
    refused = server.post("/v1/route", {"query": ""}, headers={"X-Request-ID": "bad id\twith spaces"})
    generated = refused.headers["x-request-id"]
    assert generated != "bad id\twith spaces" and len(generated) == 32
    batch = server.post("/v1/route/batch", {"items": [{"query": "打开空调"}, {"query": ""}]})
    wanted = {"trace-42.a", generated, batch.headers["x-request-id"]}
    deadline = time.monotonic() + 30
    while not wanted <= {line["request_id"] for line in server.access_lines()} and time.monotonic() < deadline:
        time.sleep(0.1)  # a line is written once its response has been sent
    lines = server.access_lines()
    by_id = {}
    for line in lines:
        by_id.setdefault(line["request_id"], []).append(line)
    [ok] = by_id["trace-42.a"]
    assert ok["path"] == "/v1/route" and ok["status"] == 200 and ok["label"] == response.json()["label"]
    assert isinstance(ok["latency_ms"], float) and ok["method"] == "POST"
    [bad] = by_id[generated]
    assert bad["status"] == 422 and bad["error"] == "query: empty or whitespace only"
    [b] = by_id[batch.headers["x-request-id"]]
    assert b["items"] == 2 and sum(b["labels"].values()) == 2 and b["labels"]["error"] == 1
    assert all(len(v) == 1 for v in by_id.values())


def test_a_partial_body_does_not_hold_the_connection_open(server):
    """Half a body, then nothing: a 408 and the connection closed once the body timeout has passed."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=BODY_TIMEOUT + 20) as s:
        s.sendall(b"POST /v1/route HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 100\r\n\r\n{\"query\": \"\xe6\x89\x93")
        started, reply = time.monotonic(), b""
        while chunk := s.recv(65536):  # b"" once the server has closed the connection
            reply += chunk
        waited = time.monotonic() - started
    assert BODY_TIMEOUT - 0.5 <= waited <= BODY_TIMEOUT + 5, waited
    assert reply.startswith(b"HTTP/1.1 408 ") and b'"field":"body"' in reply


def test_a_value_json_cannot_hold_in_an_unknown_field_is_ignored_as_by_score(server, trained, tmp_path):
    """Unknown fields are ignored by `fastslow score` and the server alike, whatever their values."""
    rows = [{"id": 1, "query": "打开空调", "note": float("nan")}, {"id": 2, "query": "下一首", "weight": float("inf")}]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")  # NaN, Infinity
    result = run_cli("score", path, "--model", trained["path"])
    expected = [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]
    assert len(expected) == 2 and not any("error" in r for r in expected)
    body = '{"id": 1, "query": "打开空调", "note": 1e400}'.encode("utf-8")
    assert server.post("/v1/route", data=body).json() == expected[0]
    batch = server.post("/v1/route/batch", data=("{\"items\": [" + path.read_text(encoding="utf-8").replace("\n", ",")
                                                 .rstrip(",") + "]}").encode("utf-8"))
    assert batch.json()["records"] == expected


# ---------------------------------------------------------------------------------------------- metrics


def scrape(srv) -> dict[str, float]:
    """``/metrics`` as ``{'name{labels}': value}`` (the text format, one sample a line)."""
    response = srv.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    samples = {}
    for line in response.text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_metrics_count_requests_records_reviews_and_confidence(server, model):
    rows = [{"query": "打开空调"}, {"query": "帮我规划一下周末去杭州的行程"}, {"query": "就按刚才那个来"}]
    before = scrape(server)
    for row in rows:
        assert server.post("/v1/route", row).status_code == 200
    assert server.post("/v1/route", {"query": ""}).status_code == 422
    assert server.post("/v1/route/batch", {"items": [*rows, {"query": "x", "context": "?"}]}).status_code == 200
    after = scrape(server)
    delta = lambda key: after.get(key, 0) - before.get(key, 0)  # noqa: E731
    assert delta('fastslow_http_requests_total{endpoint="/v1/route",method="POST",status="200"}') == 3
    assert delta('fastslow_http_requests_total{endpoint="/v1/route",method="POST",status="422"}') == 1
    assert delta('fastslow_http_requests_total{endpoint="/v1/route/batch",method="POST",status="200"}') == 1
    assert delta('fastslow_http_request_duration_seconds_count{endpoint="/v1/route"}') == 4
    records = model.score(rows)
    for label in {r["label"] for r in records}:
        mine = [r for r in records if r["label"] == label]
        for code in {r["primary_reason_code"] for r in mine}:
            n = sum(r["primary_reason_code"] == code for r in mine)
            assert delta(f'fastslow_records_total{{label="{label}",reason_code="{code}"}}') == 2 * n
        assert delta(f'fastslow_confidence_count{{label="{label}"}}') == 2 * len(mine)
        assert delta(f'fastslow_review_required_total{{label="{label}"}}') == 2 * sum(r["review_required"] for r in mine)
    assert delta('fastslow_records_total{label="error",reason_code="context"}') == 1
    info = server.get("/v1/model").json()
    assert after[f'fastslow_model_info{{model_version="{info["model_version"]}",sha256="{info["sha256"]}"}}'] == 1
    server.get("/no/such/path")
    assert 'fastslow_http_requests_total{endpoint="other",method="GET",status="404"}' in scrape(server)


# ---------------------------------------------------------------------------------------------- fuzzing


def test_schemathesis_finds_no_server_error_and_no_schema_drift(server, tmp_path):
    """A bounded run (50 examples per operation, fixed seed) of positive and negative cases."""
    import schemathesis  # noqa: F401  (in the dev extra: pip install -e ".[dev]")

    checks = ("not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,"
              "negative_data_rejection,positive_data_acceptance")
    result = subprocess.run(
        [sys.executable, "-m", "schemathesis.cli", "run", server.url + "/openapi.json", "--checks", checks,
         "--max-examples", "50", "--seed", "20240607", "--phases", "examples,coverage,fuzzing",
         "--request-timeout", "20", "--no-color"],
        capture_output=True, cwd=tmp_path, timeout=240)
    output = result.stdout.decode("utf-8", "replace")
    assert result.returncode == 0, output[-6000:] + result.stderr.decode("utf-8", "replace")[-2000:]
    assert server.proc.poll() is None


# ---------------------------------------------------------------------------------------------- start-up


def refused(folder: Path, *args, env=None) -> tuple[int, str]:
    srv = Server(folder, *args, env=env)
    try:
        code = srv.wait_exit()
    finally:
        srv.stop()
    return code, srv.stderr()


def test_a_tampered_model_file_is_refused_at_start(trained, tmp_path):
    path = copy_model(trained, tmp_path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    code, err = refused(tmp_path, "--model", str(path))
    assert code == 2
    assert "refusing to load" in err and "does not match the manifest" in err


def test_a_tampered_model_is_refused_with_several_workers_too(trained, tmp_path):
    path = copy_model(trained, tmp_path)
    with open(path, "ab") as f:
        f.write(b"\x00")
    code, err = refused(tmp_path, "--model", str(path), "--workers", "2")
    assert code == 2 and "does not match the manifest" in err


def test_a_missing_manifest_is_refused_at_start(trained, tmp_path):
    path = copy_model(trained, tmp_path)
    path.with_suffix(".manifest.json").unlink()
    code, err = refused(tmp_path, env={"FASTSLOW_MODEL": str(path)})  # the path from the environment
    assert code == 2 and f"manifest {path.stem}.manifest.json is missing" in err


def test_a_wrong_library_version_is_refused_at_start(trained, tmp_path, signing_key):
    from fastslow.models.lifecycle.signing import sign

    path = copy_model(trained, tmp_path)
    mpath = path.with_suffix(".manifest.json")
    manifest = json.loads(mpath.read_text(encoding="utf-8"))
    manifest["libraries"]["scikit-learn"] = "0.0.1"
    manifest["signature"] = sign(manifest, signing_key)  # a genuine model, trained with another version
    mpath.write_text(json.dumps(manifest), encoding="utf-8")
    code, err = refused(tmp_path, "--model", str(path))
    assert code == 2 and "library version mismatch (scikit-learn trained with 0.0.1" in err


def test_a_missing_model_file_is_refused_at_start(tmp_path):
    code, err = refused(tmp_path, "--model", str(tmp_path / "none.joblib"))
    assert code == 2 and "model file not found" in err


def test_several_workers_each_load_the_model_named_by_the_environment(trained, tmp_path):
    srv = Server(tmp_path, "--workers", "2", env={"FASTSLOW_MODEL": str(trained["path"])})
    try:
        srv.wait_ready()  # at least one worker answers
        assert srv.get("/v1/model").json()["sha256"] == trained["manifest"]["sha256"]
        assert srv.post("/v1/route", {"query": "打开空调"}).status_code == 200
        deadline = time.monotonic() + START_TIMEOUT
        while srv.stderr().count("jieba initialised") < 2 and time.monotonic() < deadline:
            time.sleep(0.2)  # the other worker may still be loading
        loaded = [line for line in srv.stderr().splitlines() if "jieba initialised" in line]
        assert len({re.search(r"worker (\d+)", line).group(1) for line in loaded}) == 2, srv.stderr()

        # the metrics are the whole server's, whichever worker answers the scrape (multiprocess mode)
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda i: srv.post("/v1/route", {"id": i, "query": "打开空调"}).status_code, range(40)))
        assert codes == [200] * 40
        deadline = time.monotonic() + 30
        while len({line["pid"] for line in srv.access_lines() if line["path"] == "/v1/route"}) < 2:
            assert time.monotonic() < deadline, "one worker served every request"
            time.sleep(0.1)
        key = 'fastslow_http_requests_total{endpoint="/v1/route",method="POST",status="200"}'
        deadline = time.monotonic() + 30
        while scrape(srv).get(key, 0) < 41:  # a request is counted once its response has been sent
            assert time.monotonic() < deadline, scrape(srv).get(key)
            time.sleep(0.1)
        assert [scrape(srv)[key] for _ in range(6)] == [41] * 6
    finally:
        srv.stop()
    assert srv.proc.returncode is not None


def test_the_serving_path_imports_nothing_used_only_for_training(trained):
    code = ("import sys; from fastslow.serve.server import create_app; create_app(sys.argv[1]); "
            "print(sorted(m for m in ('mlflow', 'train', 'matplotlib', 'fastslow.models.routing.metrics', 'fastslow.models.lifecycle.dataset') "
            "if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code, str(trained["path"])], capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().strip().splitlines()[-1] == "[]"


def test_a_model_that_loads_but_cannot_score_is_refused_at_start(tmp_path):
    """E.g. a file written by an older fastslow: its SHA-256 is right, but the code no longer fits it."""
    from fastslow.models.lifecycle.bundle import FastslowModel, save_bundle

    path = tmp_path / "broken.joblib"
    save_bundle(FastslowModel(router=None, splitter=None, version="fastslow-broken"), path)
    code, err = refused(tmp_path, "--model", str(path))
    assert code == 2 and "loaded but cannot score: AttributeError" in err


def test_explain_true_adds_the_explanation_of_fastslow_score_to_that_record_only(server, trained, tmp_path):
    rows = [{"id": "x", "query": "上车时打开空调", "endpoint": "car", "explain": True},
            {"id": "y", "query": "帮我规划一下周末去杭州的行程"}]
    expected = cli_records(rows, trained["path"], tmp_path)
    assert "explanation" in expected[0] and "explanation" not in expected[1]
    single = server.post("/v1/route", rows[0])
    assert single.status_code == 200 and single.json() == expected[0]
    parts = single.json()["explanation"]
    assert parts["routing"][0]["label"] == single.json()["label"]
    assert [s["kind"] for s in parts["automation"]["spans"]] == ["condition", "action"]
    batch = server.post("/v1/route/batch", {"items": rows})
    assert batch.status_code == 200 and batch.json() == {"records": expected}
    refused = server.post("/v1/route", {"query": "打开空调", "explain": "yes"})
    assert refused.status_code == 422 and refused.json()["field"] == "explain"


# ---------------------------------------------------------------------------------------------- abuse
# A server of its own with a header timeout of HEADER_TIMEOUT s and at most MAX_CONNECTIONS connections, the
# other limits at their defaults.

HEADER_TIMEOUT = 1
MAX_CONNECTIONS = 8


@pytest.fixture(scope="module")
def guarded(trained, tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("guarded"), "--model", str(trained["path"]),
                 env={"FASTSLOW_HEADER_TIMEOUT": str(HEADER_TIMEOUT), "FASTSLOW_MAX_CONNECTIONS": str(MAX_CONNECTIONS)})
    try:
        yield srv.wait_ready()
    finally:
        srv.stop()


def closed_by_server(sock: socket.socket, wait: float) -> bool:
    """Whether the server closes ``sock`` within ``wait`` seconds (reads until end of stream)."""
    sock.settimeout(wait)
    try:
        while sock.recv(65536):
            pass
        return True
    except (socket.timeout, ConnectionResetError):
        return False


@pytest.mark.parametrize("sent", [b"", b"GET /healthz HT", b"GET /healthz HTTP/1.1\r\nHost: x\r\n"],
                         ids=["nothing", "half a request line", "headers without their end"])
def test_a_connection_that_does_not_finish_its_headers_is_closed_after_the_header_timeout(guarded, sent):
    with socket.create_connection(("127.0.0.1", guarded.port), timeout=10) as sock:
        if sent:
            sock.sendall(sent)
        assert closed_by_server(sock, HEADER_TIMEOUT + 4)


def test_a_keep_alive_connection_between_requests_gets_the_header_timeout_too(guarded):
    with socket.create_connection(("127.0.0.1", guarded.port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = b""
        while b'{"status":"ok"}' not in reply:
            reply += sock.recv(65536)
        sock.sendall(b"GET /hea")  # the next request starts, and stalls
        assert closed_by_server(sock, HEADER_TIMEOUT + 4)


def test_connections_over_the_limit_close_the_longest_waiting_and_a_flood_logs_a_line_not_a_line_each(guarded):
    flood = [socket.create_connection(("127.0.0.1", guarded.port), timeout=10) for _ in range(5 * MAX_CONNECTIONS)]
    try:
        assert requests.get(guarded.url + "/healthz", timeout=30).json() == {"status": "ok"}  # room is made for it
        assert all(closed_by_server(sock, HEADER_TIMEOUT + 4) for sock in flood)
    finally:
        for sock in flood:
            sock.close()
    made_room = [line for line in guarded.stderr().splitlines() if "closed to make room" in line]
    assert 1 <= len(made_room) <= 2, made_room  # one line per interval, with the count
    assert guarded.get("/healthz").status_code == 200


def test_healthz_answers_while_a_large_batch_is_being_scored(guarded):
    """Batches of long queries within the default limits are scored beside the event loop, not on it.

    Four batches wait in turn for the one scoring thread, and every query is said once only (the parser's
    memo would answer a repeat at once) and so is every clause in it (the stripper drops a clause said again),
    so the last batch ends seconds after the health check is sent."""
    batches = [[{"id": i, "query": (f"第{b}批第{i}句" + "".join(f"打开空调然后播放第{k}首歌，" for k in range(100)))[:1000]}
                for i in range(64)] for b in range(4)]
    finished: list[str] = []

    def batch(items):
        response = guarded.post("/v1/route/batch", {"items": items})
        finished.append("batch")
        return response

    with ThreadPoolExecutor(len(batches)) as pool:
        pending = [pool.submit(batch, items) for items in batches]
        time.sleep(0.3)  # the bodies are read and scoring has begun (not a timing assertion)
        assert guarded.get("/healthz").json() == {"status": "ok"}
        finished.append("healthz")
        responses = [future.result(timeout=300) for future in pending]
    for items, response in zip(batches, responses):
        assert response.status_code == 200 and len(response.json()["records"]) == len(items)
    assert finished.index("healthz") < len(batches), finished  # answered while a batch was still being scored


def test_a_batch_over_the_text_limit_is_refused_naming_items(guarded):
    items = [{"query": "打" * 1000} for _ in range(256)]  # 256 items of 1,000 characters: within bytes and items
    response = guarded.post("/v1/route/batch", {"items": items})
    assert response.status_code == 422 and response.json()["field"] == "items"
    assert "256000 characters" in response.json()["error"] and "65536" in response.json()["error"]


@pytest.mark.parametrize("name, value", [("FASTSLOW_BODY_TIMEOUT", "abc"), ("FASTSLOW_BODY_TIMEOUT", "-1"),
                                         ("FASTSLOW_BODY_TIMEOUT", "nan"), ("FASTSLOW_MAX_BODY_BYTES", "0x10"),
                                         ("FASTSLOW_MAX_BATCH_ITEMS", "-5"), ("FASTSLOW_HEADER_TIMEOUT", "inf"),
                                         ("FASTSLOW_MAX_CONNECTIONS", "0"), ("FASTSLOW_MAX_BATCH_CHARS", "1.5")])
def test_a_bad_limit_in_the_environment_is_refused_in_one_line_before_the_model_loads(tmp_path, name, value):
    result = subprocess.run([sys.executable, "-m", "fastslow.cli", "serve", "--model", str(tmp_path / "none.joblib"),
                             "--port", "0"], env={**os.environ, name: value}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"fastslow serve: {name}: must be "
                                                  + ("a number of seconds above 0" if "TIMEOUT" in name else
                                                     "a whole number of at least 1") + f", got {value!r}"]
