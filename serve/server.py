"""The lightweight HTTP server: one joblib bundle per worker, the `fastslow score` record over HTTP.

    fastslow serve [--model PATH] [--host 127.0.0.1] [--port 8000] [--workers N]

Endpoints: ``POST /v1/route`` (one input → one record), ``POST /v1/route/batch`` (``{"items": [...]}`` →
``{"records": [...]}``), ``GET /healthz``, ``GET /readyz``, ``GET /v1/model``, ``GET /metrics`` (Prometheus,
``serve/metrics.py``); the OpenAPI schema at ``/openapi.json`` (``/docs`` to browse it), from the record
schema's models (``models.record``) and the envelopes below.

Input rules are the record's own (``models.record.validate_input``); this module only turns HTTP bodies
into input rows and records or errors into responses. It imports nothing used only for training
(no MLflow, no pandas-based evaluation) so that a worker starts fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import gc
import json
import logging
import logging.config
import math
import os
import re
import sys
import tempfile
import time
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional, Union

import h11
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from uvicorn.protocols.http.h11_impl import H11Protocol

from fastslow.data.io import NAME, NUMBER, bad_json_value
from fastslow.models.lifecycle.bundle import DEFAULT_MODEL_PATH, FastslowModel, ModelLoadError, load_bundle, warmed
from fastslow.models.lifecycle.manifest import MODEL_ENV
from fastslow.models.record import INPUT_FIELDS, ErrorRecord, InputError, Record, RouteInput, error_record, validate_input
from fastslow.serve import settings
from fastslow.serve.docs_assets import add_offline_docs
from fastslow.serve.metrics import MULTIPROC_ENV, Metrics
from fastslow.serve.shadow import Shadow, export_challenger

MAX_ITEMS_ENV, MAX_BODY_ENV, BODY_TIMEOUT_ENV = (settings.ENV[name] for name in ("max_batch_items", "max_body_bytes",
                                                                                     "body_timeout"))
DEFAULT_MAX_ITEMS = settings.Limits.max_batch_items
DEFAULT_MAX_BODY_BYTES = settings.Limits.max_body_bytes
#: seconds a request's whole body may take to arrive after its headers; a client that sends part of a
#: body and stops gets a 408 and its connection closed instead of holding it open
DEFAULT_BODY_TIMEOUT = settings.Limits.body_timeout
#: a body over the limit is still read (and dropped) up to this many times the limit, so the client
#: reads a 413 rather than a connection reset; beyond it the connection is closed
DRAIN_FACTOR = 8
#: queued single requests scored together at most (micro-batching, see ``MicroBatcher``)
MAX_MICRO_BATCH = 64
#: a batch request is scored this many items at a time, so that single requests queued meanwhile are
#: scored between its slices rather than after all of it
BATCH_SLICE = 32
#: the fields of an input a record reads (``validate_input``): only their values are checked for text that
#: is not UTF-8 or numbers JSON cannot write; other fields are ignored, as ``fastslow score`` ignores them
CHECKED_FIELDS = (*INPUT_FIELDS, "explain")
#: the routes matched first, in this order (``create_app``)
HOT_PATHS = ("/v1/route", "/v1/route/batch", "/healthz", "/readyz", "/metrics", "/v1/model")
_REQUEST_ID_OK = re.compile(r"[A-Za-z0-9._:\-]{1,128}")

log = logging.getLogger("fastslow.server")
access_log = logging.getLogger("fastslow.access")


class BadRequest(Exception):
    """A request the server refuses; ``field`` names what is wrong (``body``, ``query``, ``items``, ...)."""

    def __init__(self, status: int, field: str | None, message: str, extra: dict | None = None,
                 headers: dict | None = None):
        super().__init__(f"{field}: {message}" if field else message)
        self.status, self.field, self.message, self.extra = status, field, message, extra or {}
        self.headers = headers


# --------------------------------------------------------------------------------------------------
# responses


#: ``json.dumps(payload, ensure_ascii=..., allow_nan=False, separators=(",", ":"))``, built once rather than per call,
#: without the check for circular references (a payload is a tree of fresh dicts and lists): the same bytes,
#: in about half the time of a record (the check keeps every container's id in a dict while it is written)
_UTF8_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"), check_circular=False)
_ASCII_JSON = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"), check_circular=False)


def _dumps(payload: Any) -> bytes:
    """Compact UTF-8 JSON; text that cannot be UTF-8 encoded (a lone surrogate sent as ``\\ud800`` in a
    pass-through field such as ``id``) falls back to ASCII escapes instead of failing the response."""
    try:
        return _UTF8_JSON.encode(payload).encode("utf-8")
    except UnicodeEncodeError:
        return _ASCII_JSON.encode(payload).encode("ascii")


def json_response(payload: Any, status: int = 200, headers: dict | None = None) -> Response:
    return Response(_dumps(payload), status_code=status, media_type="application/json", headers=headers)


def error_response(request: Request, status: int, field: str | None, message: str, extra: dict | None = None,
                   headers: dict | None = None) -> Response:
    text = f"{field}: {message}" if field else message
    body = {**(extra or {}), "error": text, "field": field, "request_id": _request_id(request)}
    _note(request, error=text)
    return json_response(body, status, headers)


# --------------------------------------------------------------------------------------------------
# request id and the access log (a plain ASGI middleware: cheaper than BaseHTTPMiddleware)


def _request_id(request: Request) -> str | None:
    return request.scope.get("state", {}).get("request_id")


def _note(request: Request, **fields) -> None:
    """Add fields to this request's access-log line."""
    request.scope.setdefault("state", {}).setdefault("access", {}).update(fields)


class AccessLogMiddleware:
    """Gives each request an id (kept from a well-formed ``X-Request-ID`` header, else a new one), echoes
    it in the response, writes one JSON access-log line per request (latency, status, label) and counts
    it in the metrics by endpoint (a path of ``paths``, else ``other``)."""

    def __init__(self, app, metrics: Metrics, paths: frozenset[str]):
        self.app, self.metrics, self.paths = app, metrics, paths

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        given = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"x-request-id"), "")
        request_id = given if _REQUEST_ID_OK.fullmatch(given) else uuid.uuid4().hex
        state = scope.setdefault("state", {})
        state["request_id"], state["access"] = request_id, {}
        status = 500

        async def send_with_id(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"x-request-id", request_id.encode("latin-1"))]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            state["access"]["error"] = "internal error (traceback in the server log)"
            raise
        finally:
            seconds = time.perf_counter() - started
            endpoint = scope["path"] if scope["path"] in self.paths else "other"
            self.metrics.observe_request(endpoint, scope["method"], status, seconds)
            if access_log.isEnabledFor(logging.INFO):
                line = {"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
                        "request_id": request_id, "pid": os.getpid(), "method": scope["method"],
                        "path": scope["path"],
                        "status": status, "latency_ms": round(seconds * 1000, 3),
                        **state["access"]}
                access_log.info(json.dumps(line, ensure_ascii=False))


# --------------------------------------------------------------------------------------------------
# connections: uvicorn's HTTP/1.1 protocol with the two limits it lacks


class ConnectionGuard:
    """One worker's open connections, against the header timeout and the connection limit (``settings.Limits``).

    ``waiting`` holds the connections waiting for a request's headers, oldest first: a connection that
    has not sent them within ``header_timeout`` is closed (a client that opens connections and never
    finishes a request holds no file descriptor for long), and when a new connection takes the worker
    over ``max_connections``, the one that has waited longest is closed to make room (or the new one,
    if every connection is busy with a request). A flood is reported by ``Throttled``: one log line per
    interval with the counts, never one per connection.
    """

    def __init__(self, limits: settings.Limits):
        self.limits = limits
        self.waiting: dict[Any, None] = {}  # protocol -> None, in the order they began waiting
        self.report = Throttled(log)

    def opened(self, protocol) -> bool:
        """Make room for ``protocol`` (just connected); False when it is the one closed."""
        if len(protocol.connections) <= self.limits.max_connections:
            return True
        oldest = next(iter(self.waiting), None)
        if oldest is None:
            self.report.count("connections refused: every connection busy (max_connections %d)",
                              self.limits.max_connections)
            protocol.transport.close()
            return False
        self.waiting.pop(oldest)
        oldest.drop_idle()
        self.report.count("idle connections closed to make room for new ones (max_connections %d)",
                          self.limits.max_connections)
        return True


class Throttled:
    """Counts of repeated events, logged at most once per ``every`` seconds per kind of event: a flood
    (connections, failed accepts) costs one warning line per interval, not one per event."""

    def __init__(self, logger: logging.Logger, every: float = 10.0):
        self.logger, self.every = logger, every
        self.pending: dict[str, tuple[int, float]] = {}  # what -> (events not yet logged, time of the first)
        self.logged: dict[str, float] = {}  # what -> when it was last logged

    def count(self, message: str, *args) -> None:
        what = message % args if args else message
        now = time.monotonic()
        events, since = self.pending.get(what, (0, now))
        if now - self.logged.get(what, -math.inf) < self.every:
            self.pending[what] = (events + 1, since)
            return
        self.logger.warning("%s: %d in the last %.1f s", what, events + 1, now - since)
        self.pending.pop(what, None)
        self.logged[what] = now


_guard: ConnectionGuard | None = None
HTTP_PROTOCOL = "fastslow.serve.server:GuardedH11Protocol"


def connection_guard() -> ConnectionGuard:
    """This worker's guard, with the limits of the environment (``run`` exports them before uvicorn starts)."""
    global _guard
    if _guard is None:
        _guard = ConnectionGuard(settings.limits())
    return _guard


def _throttled_loop_errors(loop: asyncio.AbstractEventLoop) -> None:
    """The loop's errors outside any request (a failed ``accept()`` when file descriptors run out, ...),
    through ``Throttled``: one line per kind per interval instead of a traceback per event."""
    if getattr(loop, "_fastslow_throttled", False):
        return
    report = Throttled(logging.getLogger("fastslow.server"))

    def handler(loop, context):
        exc = context.get("exception")
        report.count("event loop errors: %s%s", context.get("message", "error"),
                     f" ({type(exc).__name__}: {exc})" if exc else "")

    loop.set_exception_handler(handler)
    loop._fastslow_throttled = True


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, plus a header timeout and a bound on connections (``ConnectionGuard``).
    uvicorn times out only an idle keep-alive connection, and only after a response: a connection that
    sent nothing, or part of a request line, held its file descriptor for ever. ``run`` names it to
    uvicorn as ``HTTP_PROTOCOL`` (an import path, which several workers can use too)."""

    header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self.guard = connection_guard()
        _throttled_loop_errors(self.loop)
        if self.guard.opened(self):
            self._await_headers()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow_state()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow_state()

    def connection_lost(self, exc) -> None:
        self._headers_in()
        super().connection_lost(exc)

    def _follow_state(self) -> None:
        """Wait for headers while h11 has no request from the client (IDLE), not once it has one."""
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._await_headers()
        else:
            self._headers_in()

    def _await_headers(self) -> None:
        if self.header_timer is None:  # from the first byte awaited, however slowly the rest trickles in
            self.header_timer = self.loop.call_later(self.guard.limits.header_timeout, self._headers_late)
            self.guard.waiting[self] = None

    def _headers_in(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None
        self.guard.waiting.pop(self, None)

    def _headers_late(self) -> None:
        self.header_timer = None
        self.guard.waiting.pop(self, None)
        if self.conn.their_state is h11.IDLE:
            self.guard.report.count("connections closed: no request headers within %g s",
                                    self.guard.limits.header_timeout)
            self.drop_idle()

    def drop_idle(self) -> None:
        """Close this connection, which is between requests."""
        self._headers_in()
        self.transport.close()


# --------------------------------------------------------------------------------------------------
# reading bodies


class BodyDeadlines:
    """The body timeout of every request of one app, kept by one coarse timer rather than one per request.

    ``asyncio.timeout`` arms and cancels a timer per request, which costs a /v1/route request more than
    reading its body; a body nearly always arrives with its headers, so a read only registers its task
    here and unregisters it. While some read is registered, a sweep every ``resolution`` seconds cancels
    the reads past their deadline (``stop`` then tells the reader it was the deadline, not a shutdown):
    a body gets between ``timeout`` and ``timeout + resolution`` seconds to arrive.
    """

    def __init__(self, timeout: float, resolution: float | None = None):
        self.timeout = timeout
        self.resolution = resolution if resolution is not None else min(1.0, timeout / 4)
        self.reading: dict[asyncio.Task, float] = {}  # task -> deadline (loop time)
        self.expired: set[asyncio.Task] = set()
        self.sweep_loop: asyncio.AbstractEventLoop | None = None  # the loop a sweep is armed on

    def start(self) -> asyncio.Task:
        """Register the current task's read; returns the task for ``stop``."""
        task = asyncio.current_task()
        loop = task.get_loop()
        self.reading[task] = loop.time() + self.timeout
        if self.sweep_loop is not loop:  # none armed, or on a loop that has gone (an app reused by tests)
            self.sweep_loop = loop
            loop.call_later(self.resolution, self._sweep, loop)
        return task

    def stop(self, task: asyncio.Task) -> bool:
        """Unregister ``task``'s read; True if its deadline passed and the sweep cancelled it."""
        self.reading.pop(task, None)
        if task in self.expired:
            self.expired.discard(task)
            return True
        return False

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.sweep_loop is not loop:  # a sweep armed on another loop since
            return
        now = loop.time()
        mine = [task for task in self.reading if task.get_loop() is loop]
        for task in mine:
            if self.reading[task] <= now:
                del self.reading[task]
                self.expired.add(task)
                task.cancel()
        if any(task in self.reading for task in mine):
            loop.call_later(self.resolution, self._sweep, loop)
        else:
            self.sweep_loop = None


async def read_json_body(request: Request, max_bytes: int, deadlines: BodyDeadlines) -> Any:
    """The parsed JSON body, or ``BadRequest``: over the size limit (413), broken JSON or empty (400), not
    all there within the timeout of ``deadlines`` (408, and the connection is closed).

    A body over the limit is read to its end and dropped (up to ``DRAIN_FACTOR`` times the limit) so
    that the client gets the 413 instead of a reset connection. Bytes that are not UTF-8 are kept as
    lone surrogates (as the CSV reader does) so that the field holding them can be named; see
    ``bad_text_path``.
    """
    declared = next((v.decode("latin-1") for k, v in request.scope["headers"] if k == b"content-length"), None)
    if declared is not None:
        try:
            declared_n = int(declared)
        except ValueError:
            raise BadRequest(400, "content-length", f"not a number: {declared[:40]!r}") from None
        if declared_n > max_bytes * DRAIN_FACTOR:
            raise BadRequest(413, "body", f"too large: {declared_n} bytes (limit {max_bytes})")
    chunks, size = [], 0
    receive = request.receive
    task = deadlines.start()
    try:
        while True:  # Request.stream() without its generator: the ASGI messages of the body
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnect()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size <= max_bytes:
                chunks.append(chunk)
            elif size > max_bytes * DRAIN_FACTOR:
                break
            if not message.get("more_body", False):
                break
    except asyncio.CancelledError:
        if not deadlines.stop(task):
            raise
        task.uncancel()
        raise BadRequest(408, "body", f"not received in {deadlines.timeout:g} s ({size} bytes arrived)",
                         headers={"connection": "close"}) from None
    finally:
        deadlines.stop(task)
    if size > max_bytes:
        raise BadRequest(413, "body", f"too large: {'over ' if size > max_bytes * DRAIN_FACTOR else ''}"
                                      f"{size} bytes (limit {max_bytes})")
    raw = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if not raw.strip():
        raise BadRequest(400, "body", "empty; send a JSON object")
    text = raw.decode("utf-8", errors="surrogateescape")
    try:
        return json.loads(text)  # NaN, Infinity and 1e400 parse to floats: invalid_value names them
    except json.JSONDecodeError as exc:
        raise BadRequest(400, "body", f"broken JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:  # nested too deep, an integer with too many digits
        raise BadRequest(400, "body", f"JSON not accepted ({type(exc).__name__}: {str(exc)[:120]})") from None


def invalid_value(value: Any) -> tuple[str, str] | None:
    """``(where, why)`` of the first value a record cannot hold (``fastslow.data.io.bad_json_value``), or
    None: text that is not valid UTF-8 (bytes that did not decode, or a lone surrogate sent as an escape)
    or a number JSON cannot write (``NaN``, ``Infinity``, ``1e400``). ``where`` is a field path such as
    ``query`` or ``context[0].text``, ``body`` for the body itself."""
    bad = bad_json_value(value)
    if bad is None:
        return None
    where = bad.path if bad.path and not bad.path.startswith("[") else f"body{bad.path}"
    if bad.kind == NUMBER:
        return where, f"{bad.shown} is not valid JSON"
    return where, "a field name is not valid UTF-8 text" if bad.kind == NAME else "not valid UTF-8 text"


def invalid_input_value(item: Any) -> tuple[str, str] | None:
    """``invalid_value`` of the fields of an input that a record reads (``CHECKED_FIELDS``); the others are
    ignored, as ``fastslow score`` ignores them, so a row is accepted or refused alike by both."""
    if not isinstance(item, dict):
        return invalid_value(item)
    return invalid_value({name: item[name] for name in CHECKED_FIELDS if name in item})


def text_chars(items: list) -> int:
    """Characters of query and context text in a batch's items: what its scoring work grows with."""
    total = 0
    for item in items:
        if isinstance(item, dict):
            query, context = item.get("query"), item.get("context")
            total += len(query) if isinstance(query, str) else 0
            if isinstance(context, list):
                total += sum(len(turn["text"]) for turn in context
                             if isinstance(turn, dict) and isinstance(turn.get("text"), str))
    return total


# --------------------------------------------------------------------------------------------------
# scoring


def score_isolated(score: Callable[[list], list[dict]], items: list) -> list[dict | Exception]:
    """``score(items)`` (``model.score``, or ``model.score_valid`` for validated items); if it raises (a bug,
    never bad input: bad rows get error records), the items are scored one by one so that only the item
    that fails gets the exception."""
    try:
        return score(items)
    except Exception:  # noqa: BLE001 - isolate the failing item, log it, keep the worker alive
        log.exception("scoring a batch of %d items failed; scoring them one by one", len(items))
    out: list[dict | Exception] = []
    for item in items:
        try:
            out.append(score([item])[0])
        except Exception as exc:  # noqa: BLE001
            log.error("scoring one item failed: %s", "".join(traceback.format_exception(exc)))
            out.append(exc)
    return out


class MicroBatcher:
    """Scores single requests that arrive together in one ``score`` call (``model.score_valid``: the
    server has validated each input already), off the event loop.

    Scoring runs in ``executor`` (the app's one scoring thread), so that the event loop goes on reading
    requests and answering ``/healthz`` while rows are scored: one thread, because scoring holds the GIL
    and a second would only contend for it. A request that finds no batch open opens one and schedules
    it; the requests read before it starts (under load, all those that arrive while the previous batch is
    being scored) join it, up to ``max_batch`` rows; a batch of rows costs far less per row than rows one
    by one. Batches are scored one after the other, each in its own task, so a follower gets its record
    even if the request that opened the batch has gone. The records are the same either way: every row
    is scored on its own features. Without an executor (tests), batches are scored on the loop.
    """

    def __init__(self, score: Callable[[list], list[dict]], max_batch: int = MAX_MICRO_BATCH, executor=None):
        self.score_rows, self.max_batch, self.executor = score, max_batch, executor
        self.open: list[tuple[dict, asyncio.Future]] | None = None  # the batch that requests may still join
        self.last: asyncio.Future | None = None  # done when the latest batch scheduled is scored
        self.tasks: set[asyncio.Task] = set()

    async def score(self, item: dict) -> dict:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        if self.open is not None and len(self.open) < self.max_batch:
            self.open.append((item, future))
        else:
            batch = self.open = [(item, future)]
            previous, self.last = self.last, loop.create_future()
            task = loop.create_task(self._score_batch(batch, previous, self.last))
            self.tasks.add(task)  # a reference, until it is done
            task.add_done_callback(self.tasks.discard)
        result = await future
        if isinstance(result, Exception):
            raise result
        return result

    async def _score_batch(self, batch: list, previous: asyncio.Future | None, done: asyncio.Future) -> None:
        try:
            if previous is not None and not previous.done():
                await previous  # one batch at a time; requests join this one meanwhile
            if self.open is batch:
                self.open = None
            results = await score_off_loop(self.executor, self.score_rows, [row for row, _ in batch])
        except Exception as exc:  # noqa: BLE001 - every waiting request hears of it
            results = [exc] * len(batch)
        finally:
            if self.open is batch:
                self.open = None
            if self.last is done:
                self.last = None
            done.set_result(None)
        for (_, future), result in zip(batch, results):
            if not future.done():  # a client may have gone
                future.set_result(result)


async def score_off_loop(executor, score: Callable[[list], list[dict]], items: list) -> list[dict | Exception]:
    """``score_isolated(score, items)`` in ``executor`` (the scoring thread), or on the loop without one."""
    if executor is None:
        return score_isolated(score, items)
    return await asyncio.get_running_loop().run_in_executor(executor, score_isolated, score, items)


# --------------------------------------------------------------------------------------------------
# the OpenAPI description: the record schema's models (``models.record``) and the HTTP envelopes below.
# The handlers read and check bodies themselves (413/400/422 naming the field, error records per batch
# item), so the models document them; tests/test_server.py runs schemathesis to hold the two together.


class BatchInput(BaseModel):
    """A batch of queries; each item is an input as for ``/v1/route``. An invalid item gets an error
    record in its place, the others are scored."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"example": {"items": [
        {"id": 1, "query": "打开空调"}, {"id": 2, "query": "帮我规划一下周末去杭州的行程"}]}})
    items: list[Any] = Field(max_length=DEFAULT_MAX_ITEMS, description="input objects as for /v1/route")


class BatchOutput(BaseModel):
    """One record per item, in order."""

    records: list[Union[Record, ErrorRecord]]


class Error(BaseModel):
    """A refused request; ``field`` names what is wrong (``query``, ``items``, ``body``, ...). A refused
    ``/v1/route`` input also echoes its ``id`` and ``query`` as its error record would."""

    error: str
    field: Optional[str]
    request_id: str
    id: Any = None
    query: Optional[str] = None


class ModelInfo(BaseModel):
    """The loaded model and the server's limits."""

    model_version: str
    mlflow_run_id: Optional[str]
    sha256: Optional[str]
    trained_at: Optional[str]
    fixture_metrics: dict[str, Any]
    libraries: dict[str, Any]
    train_rows: Optional[int] = None
    review_threshold: float
    max_query_chars: int
    max_batch_items: int
    max_batch_chars: int
    max_body_bytes: int
    loaded_at: str
    path: str = Field(description="the model file's name (not where it lives on the server)")


class RouteRequest(RouteInput):
    """One query over HTTP: the record's input, and whether to explain it (a request option, not a
    column of a log: `fastslow score --explain` is the batch's)."""

    explain: Optional[bool] = Field(None, description="true: the record gets an `explanation` (the features "
                                                      "that decided its label, the automation spans; see "
                                                      "`fastslow explain`)")


SCHEMA_MODELS = (RouteRequest, BatchInput, Record, ErrorRecord, BatchOutput, Error, ModelInfo)


def openapi_components(max_query_chars: int, max_items: int) -> dict:
    """The component schemas of the OpenAPI description, from the models, with this server's limits."""
    _, top = models_json_schema([(m, "validation") for m in SCHEMA_MODELS],
                                ref_template="#/components/schemas/{model}")
    schemas = top["$defs"]
    schemas["RouteRequest"]["properties"]["query"]["maxLength"] = max_query_chars
    schemas["BatchInput"]["properties"]["items"]["maxItems"] = max_items
    return schemas


def _json_body(name: str) -> dict:
    return {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}


def _errors(*codes: int) -> dict:
    what = {400: "broken JSON, not UTF-8, or an empty body", 408: "the body did not arrive in time",
            413: "body over the size limit", 422: "a bad field (named in `field`), or too many batch items"}
    return {code: {"description": what[code], **_json_body("Error")} for code in codes}


# --------------------------------------------------------------------------------------------------
# the app


def create_app(model_path: str | Path | None = None, *, model: FastslowModel | None = None,
               max_items: int | None = None, max_body_bytes: int | None = None,
               body_timeout: float | None = None, max_batch_chars: int | None = None) -> FastAPI:
    """Load the bundle (SHA-256 and library versions checked first), initialise jieba, build the app.
    Limits not given come from the environment (``serve.settings``).

    Raises ``ModelLoadError`` when the bundle cannot be trusted or used, ``settings.SettingError`` for a bad limit.
    """
    limits = settings.limits(max_batch_items=max_items, max_body_bytes=max_body_bytes, body_timeout=body_timeout,
                             max_batch_chars=max_batch_chars)
    max_items, max_body_bytes, max_chars = limits.max_batch_items, limits.max_body_bytes, limits.max_batch_chars
    resolved = _resolve(model_path)
    path = resolved.path
    started = time.perf_counter()
    model = load_model(path, model, expect_sha256=resolved.sha256, pinned_by=resolved.pinned_by)
    gc.collect()
    gc.freeze()  # the model and jieba's dictionary live as long as the worker: keep them out of every GC pass
    manifest = model.info.get("manifest", {})
    info = {
        "model_version": model.version,
        "mlflow_run_id": manifest.get("mlflow_run_id"),
        "sha256": model.info.get("sha256") or manifest.get("sha256"),
        "trained_at": manifest.get("trained_at") or model.info.get("trained_at"),
        "fixture_metrics": {k: v for k, v in manifest.get("metrics", {}).items() if k.startswith("fixture_")},
        "libraries": manifest.get("libraries", {}),
        "train_rows": manifest.get("train_rows"),
        "review_threshold": model.review_threshold,
        "max_query_chars": model.max_query_chars,
        "max_batch_items": max_items,
        "max_batch_chars": max_chars,
        "max_body_bytes": max_body_bytes,
        "loaded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "path": path.name,  # the file's name: where it lives on the server is no client's business
    }
    log.info("worker %d: model %s (sha256 %s…) loaded from %s in %.1f s; jieba initialised",
             os.getpid(), model.version, str(info["sha256"])[:12], path, time.perf_counter() - started)

    app = FastAPI(title="fastslow", version=_package_version(), docs_url=None, redoc_url=None,
                  description="Fast/slow routing of Chinese voice-assistant queries (XA4.1): "
                              "one record per query, the same as `fastslow score`.")
    app.state.model, app.state.info, app.state.ready = model, info, True
    scoring = ThreadPoolExecutor(1, thread_name_prefix="fastslow-scoring")  # see MicroBatcher
    batcher = MicroBatcher(model.score_valid, executor=scoring)
    score_checked = functools.partial(model.score, values_checked=True)
    deadlines = BodyDeadlines(limits.body_timeout)
    metrics = Metrics()
    metrics.set_model(model.version, info["sha256"])
    shadow = app.state.shadow = Shadow.from_env(metrics.registry, access_log)  # --shadow: None without one

    @app.exception_handler(BadRequest)
    async def _bad_request(request: Request, exc: BadRequest):
        return error_response(request, exc.status, exc.field, exc.message, exc.extra, exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        field = "path" if exc.status_code == 404 else ("method" if exc.status_code == 405 else None)
        return error_response(request, exc.status_code, field, str(exc.detail).lower(), headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        first = (exc.errors() or [{}])[0]
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
        return error_response(request, 422, where, str(first.get("msg", "invalid")))

    @app.exception_handler(Exception)
    async def _internal_error(request: Request, exc: Exception):
        log.error("request %s failed: %s", _request_id(request), "".join(traceback.format_exception(exc)))
        return error_response(request, 500, None, "internal error while handling the request; "
                                                  "the server log has the traceback under this request id")

    @app.get("/healthz", summary="Alive", tags=["health"])
    async def healthz():
        return json_response({"status": "ok"})

    @app.get("/readyz", summary="Model loaded and jieba initialised", tags=["health"],
             responses={503: {"description": "not ready"}})
    async def readyz(request: Request):
        if not getattr(request.app.state, "ready", False):
            return json_response({"ready": False}, 503)
        return json_response({"ready": True, "model_version": info["model_version"]})

    @app.get("/v1/model", summary="The loaded model: version, MLflow run, SHA-256, fixture metrics",
             tags=["model"], responses={200: {"description": "model metadata", **_json_body("ModelInfo")}})
    async def model_info():
        return json_response(info)

    @app.post("/v1/route", summary="Route one query", tags=["route"],
              openapi_extra={"requestBody": {"required": True, **_json_body("RouteRequest")}},
              responses={200: {"description": "the record", **_json_body("Record")}, **_errors(400, 408, 413, 422)})
    async def route(request: Request):
        raw = await read_json_body(request, max_body_bytes, deadlines)
        if not isinstance(raw, dict):
            raise BadRequest(422, "body", f"must be a JSON object with a 'query', got {_json_type(raw)}")
        invalid = invalid_input_value(raw)
        if invalid:
            raise BadRequest(400, *invalid)
        try:  # invalid_input_value(raw) was None: every field the record reads is clean
            item = validate_input(raw, model.max_query_chars, values_checked=True)
        except InputError as exc:  # the error record's fields, with the field named on its own
            record = error_record(raw.get("id"), raw.get("query"), str(exc))
            raise BadRequest(422, exc.field, str(exc).removeprefix(f"{exc.field}: "),
                             {"id": record["id"], "query": record["query"]}) from None
        record = await batcher.score(item)  # validated once, here: scored without a second check
        _note(request, label=record["label"], code=record["primary_reason_code"])
        metrics.observe_records([record])
        if shadow:
            _note(request, shadow=shadow.submit(_request_id(request), [item], [record]))
        return json_response(record)

    @app.post("/v1/route/batch", summary="Route a batch of queries, one record each, in order", tags=["route"],
              openapi_extra={"requestBody": {"required": True, **_json_body("BatchInput")}},
              responses={200: {"description": "one record per item", **_json_body("BatchOutput")},
                         **_errors(400, 408, 413, 422)})
    async def route_batch(request: Request):
        raw = await read_json_body(request, max_body_bytes, deadlines)
        if not isinstance(raw, dict):
            raise BadRequest(422, "body", f"must be a JSON object with 'items', got {_json_type(raw)}")
        if "items" not in raw:
            raise BadRequest(422, "items", "missing; send {\"items\": [{\"query\": ...}, ...]}")
        items = raw["items"]
        if not isinstance(items, list):
            raise BadRequest(422, "items", f"must be a list, got {_json_type(items)}")
        if len(items) > max_items:
            raise BadRequest(422, "items", f"too many: {len(items)} (limit {max_items} per request; split the batch)")
        chars = text_chars(items)
        if chars > max_chars:
            raise BadRequest(422, "items", f"too much text: {chars} characters of query and context (limit "
                                           f"{max_chars} per request; split the batch)")
        bad = {i: found for i, item in enumerate(items) if (found := invalid_input_value(item))}
        clean = [item for i, item in enumerate(items) if i not in bad]
        # invalid_input_value(item) was None for every clean item: validated once, without a second walk
        scored = []
        for start in range(0, len(clean), BATCH_SLICE):  # slices: single requests are scored in between
            scored += await score_off_loop(scoring, score_checked, clean[start:start + BATCH_SLICE])
        scored = iter(scored)
        records = []
        for i, item in enumerate(items):
            if i in bad:  # the item's own error record, as `fastslow score` gives a line that is not UTF-8
                records.append(_invalid_value_record(item, *bad[i]))
                continue
            result = next(scored)
            if isinstance(result, Exception):
                qid = item.get("id") if isinstance(item, dict) else None
                query = item.get("query") if isinstance(item, dict) else None
                result = error_record(qid, query, "internal error while scoring this item; see the server log")
            records.append(result)
        labels: dict[str, int] = {}
        for record in records:
            key = record.get("label", "error")
            labels[key] = labels.get(key, 0) + 1
        _note(request, items=len(records), labels=labels)
        metrics.observe_records(records)
        if shadow:
            _note(request, shadow=shadow.submit(_request_id(request), items, records))
        return json_response({"records": records})

    @app.get("/metrics", include_in_schema=False)
    async def prometheus_metrics():
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    def openapi():
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=declared)
            schema.setdefault("components", {}).setdefault("schemas", {}).update(
                openapi_components(model.max_query_chars, max_items))
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi
    add_offline_docs(app)
    # a request is matched against the routes in order: the ones that carry traffic first, the
    # documentation's (which FastAPI adds first) last; every path is distinct, so no answer changes
    hot = {path: rank for rank, path in enumerate(HOT_PATHS)}
    declared = list(app.router.routes)  # the OpenAPI description lists them as declared
    app.router.routes.sort(key=lambda r: hot.get(getattr(r, "path", None), len(hot)))
    app.add_middleware(AccessLogMiddleware, metrics=metrics, paths=frozenset(r.path for r in app.routes))
    return app


def load_model(path: Path, model: FastslowModel | None = None, *, expect_sha256: str | None = None,
               pinned_by: str = "the caller") -> FastslowModel:
    """``load_bundle`` (SHA-256, manifest, signature or pin, library versions) and a warm-up (jieba's dictionary,
    first-call costs) now rather than on the first request. Any failure becomes a ``ModelLoadError`` that says why."""
    if model is None:
        model = load_bundle(path, expect_sha256=expect_sha256, pinned_by=pinned_by)
    return warmed(model, path)


def app_from_env() -> FastAPI:
    """The app factory uvicorn calls in each worker (``--workers`` > 1): settings from the environment.
    A worker that cannot load the model exits with uvicorn's start-up failure status, which stops the
    parent instead of restarting the worker forever."""
    from uvicorn.config import STARTUP_FAILURE

    try:
        return create_app(os.environ.get(MODEL_ENV))
    except (ModelLoadError, settings.SettingError) as exc:
        log.error("fastslow serve: worker %d: %s", os.getpid(), exc)
        sys.exit(STARTUP_FAILURE)


def _invalid_value_record(item: Any, where: str, why: str) -> dict:
    qid = item.get("id") if isinstance(item, dict) else None
    query = item.get("query") if isinstance(item, dict) else None
    return error_record(None if invalid_value(qid) else qid, None if invalid_value(query) else query,
                        f"{where}: {why}")


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _package_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("fastslow")
    except metadata.PackageNotFoundError:
        return "0"


def resolve_model_path(model_path: str | Path | None = None) -> Path:
    """``--model``, else ``$FASTSLOW_MODEL``, else the artifact ``train.py`` writes; a model URI
    (``models:/fastslow@champion``) becomes its downloaded bundle (``ModelLoadError`` if it does not resolve)."""
    return _resolve(model_path).path


def _resolve(model_path: str | Path | None = None):
    """``resolve_model_path``'s bundle with the registry's pin of a ``models:/`` URI (``registry.ResolvedModel``)."""
    from fastslow.models.lifecycle.registry import RegistryError, resolve

    try:
        return resolve(model_path or os.environ.get(MODEL_ENV) or DEFAULT_MODEL_PATH)
    except RegistryError as exc:
        raise ModelLoadError(str(exc)) from None


def log_config(level: str = "info") -> dict:
    """uvicorn's logging, plus ``fastslow.access`` (one JSON line per request, standard output) and
    ``fastslow.server`` (start-up and errors, standard error)."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["plain"] = {"format": "%(message)s"}
    config["handlers"]["fastslow_access"] = {"class": "logging.StreamHandler", "formatter": "plain",
                                             "stream": "ext://sys.stdout"}
    config["loggers"]["fastslow.access"] = {"handlers": ["fastslow_access"], "level": "INFO", "propagate": False}
    config["loggers"]["fastslow.server"] = {"handlers": ["default"], "level": level.upper(), "propagate": False}
    return config


@contextlib.contextmanager
def metrics_folder():
    """The folder the workers share their metrics in (prometheus_client's multiprocess mode): the
    operator's ``$PROMETHEUS_MULTIPROC_DIR``, else a fresh one removed when the server stops. Set before
    the workers start, so each imports prometheus_client with it."""
    if os.environ.get(MULTIPROC_ENV):
        yield os.environ[MULTIPROC_ENV]
        return
    with tempfile.TemporaryDirectory(prefix="fastslow-metrics-") as folder:
        os.environ[MULTIPROC_ENV] = folder
        try:
            yield folder
        finally:
            del os.environ[MULTIPROC_ENV]


def run(model_path: str | Path | None = None, host: str = "127.0.0.1", port: int = 8000, workers: int = 1,
        log_level: str = "info", shadow: str | Path | None = None, **given) -> int:
    """Serve until interrupted. ``shadow``: a challenger model scored beside every request. ``given``:
    limits (fields of ``settings.Limits``) that override the environment's. A bad limit or a model that
    fails its checks is refused in one line before any port is opened (exit status 2)."""
    import uvicorn

    from fastslow.models.lifecycle.signing import SigningKeyError, export

    try:
        limits = settings.limits(**given)
        resolved = _resolve(model_path)
        export(expect_sha256=resolved.sha256, pinned_by=resolved.pinned_by)  # the registry's pin, for the workers
        export_challenger(shadow)  # --shadow, resolved once, for the workers
    except (settings.SettingError, ModelLoadError, SigningKeyError) as exc:
        print(f"fastslow serve: {exc}", file=sys.stderr)
        return 2
    path = resolved.path
    logging.config.dictConfig(log_config(log_level))
    os.environ[MODEL_ENV] = str(path)  # the workers (separate processes) read their settings from here
    settings.export(limits)
    common = dict(host=host, port=port, log_config=log_config(log_level), log_level=log_level, http=HTTP_PROTOCOL,
                  access_log=False, server_header=False, proxy_headers=False)
    try:
        if workers <= 1:
            uvicorn.run(create_app(path), **common)
        else:
            load_model(path)  # refuse a bad file here, once, with a clear message, before any worker starts
            with metrics_folder():
                uvicorn.run("fastslow.serve.server:app_from_env", factory=True, workers=workers, **common)
    except ModelLoadError as exc:
        print(f"fastslow serve: {exc}", file=sys.stderr)
        return 2
    return 0
