"""A challenger scored beside the served model on live traffic, off the response path:

    fastslow serve --model models:/fastslow@champion --shadow models:/fastslow@challenger

Every query a worker answers is also handed to a challenger process of its own (spawned at start, with
the challenger loaded, checked like any model, and warmed up), through a bounded queue: the response
never waits for it, and when the challenger falls behind, the queue is full and the request is dropped
(counted) rather than queued without end. The challenger scores what it receives in batches and sends
back, per request, its label and primary reason code beside the served ones; a thread of the worker
counts them on ``/metrics`` and writes one access-log line per request (joined to the request's own line
by ``request_id``). Metrics, all with closed label sets (labels 快/慢/模糊, the taxonomy's reason codes):

- ``fastslow_shadow_label_agreement_total{label,agrees}``: queries by the served label, and whether the
  challenger gave the same label; ``..._code_agreement_total{reason_code,agrees}`` the same by primary code;
- ``fastslow_shadow_labels_total{label,challenger_label}``: the two labels side by side (which way they
  disagree; ``challenger_label="error"`` for an input the challenger refuses);
- ``fastslow_shadow_dropped_total``: queries the challenger never saw (its queue was full);
  ``fastslow_shadow_errors_total``: queries it failed to score (a bug: the traceback is in its log);
- ``fastslow_shadow_model_info{model_version,sha256}``: 1 for the challenger.

The challenger's trust is its own: it is vouched for by its signature, by the registry's pin of its
``models:/`` URI, or by ``--trust-unsigned``; a ``--expect-sha256`` pins the served model only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import os
import queue
import threading
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

from prometheus_client import Counter, Gauge

from fastslow.models.lifecycle.manifest import ModelLoadError
from fastslow.models.lifecycle.signing import EXPECT_ENV, EXPECT_FROM_ENV
from fastslow.models.taxonomy import LABELS, REASON_CODES

#: the challenger's bundle (a local file: ``run`` resolves a ``models:/`` URI once, before the workers start),
#: and the registry's pin of it
SHADOW_ENV = "FASTSLOW_SHADOW"
SHADOW_PIN_ENV = "FASTSLOW_SHADOW_SHA256"
SHADOW_PINNED_BY_ENV = "FASTSLOW_SHADOW_PINNED_BY"
#: requests waiting for the challenger at most; a request that finds the queue full is dropped
QUEUE_REQUESTS = 1024
#: queries the challenger scores in one call at most
MAX_BATCH = 256
#: seconds the challenger may take to load and warm up
START_TIMEOUT = 300.0
#: disagreements written in full on a request's shadow line at most (a batch can hold hundreds)
LOGGED_DISAGREEMENTS = 10

log = logging.getLogger("fastslow.server")


def export_challenger(model: str | Path | None) -> None:
    """Resolve the challenger (a path or a model URI) once, into the environment the workers read;
    ``ModelLoadError`` when it does not resolve. Nothing when ``model`` is None."""
    if model is None:
        return
    from fastslow.models.lifecycle.registry import RegistryError, resolve

    try:
        resolved = resolve(model)
    except RegistryError as exc:
        raise ModelLoadError(f"--shadow: {exc}") from None
    os.environ[SHADOW_ENV] = str(resolved.path)
    os.environ[SHADOW_PIN_ENV], os.environ[SHADOW_PINNED_BY_ENV] = resolved.sha256 or "", resolved.pinned_by


class ShadowMetrics:
    """The challenger's metric families, in the served metrics' registry (None in multiprocess mode)."""

    def __init__(self, registry):
        reg = {"registry": registry}
        self.labels = Counter("fastslow_shadow_labels", "queries scored by the shadow challenger too, by the served "
                                                        "label and the challenger's", ("label", "challenger_label"),
                              **reg)
        self.label_agreement = Counter("fastslow_shadow_label_agreement", "queries scored by the shadow challenger "
                                       "too, by the served label and whether the challenger's is the same",
                                       ("label", "agrees"), **reg)
        self.code_agreement = Counter("fastslow_shadow_code_agreement", "queries scored by the shadow challenger "
                                      "too, by the served primary reason code and whether the challenger's is the "
                                      "same", ("reason_code", "agrees"), **reg)
        self.dropped = Counter("fastslow_shadow_dropped", "queries the shadow challenger did not score: its queue "
                                                          "was full", **reg)
        self.errors = Counter("fastslow_shadow_errors", "queries the shadow challenger failed to score", **reg)
        self.model = Gauge("fastslow_shadow_model_info", "the shadow challenger (value 1)",
                           ("model_version", "sha256"), multiprocess_mode="max", **reg)

    def count(self, label: str, code: str, challenger_label: str, challenger_code: str | None) -> None:
        challenger_label = challenger_label if challenger_label in LABELS else "error"
        self.labels.labels(label, challenger_label).inc()
        self.label_agreement.labels(label, str(label == challenger_label).lower()).inc()
        self.code_agreement.labels(code if code in REASON_CODES else "other",
                                   str(code == challenger_code).lower()).inc()


class Shadow:
    """The challenger process of one worker, the bounded queue of requests waiting for it, and two threads:
    one hands the queue to the process (so that the response path never blocks on a full pipe), one counts
    what the process sends back."""

    def __init__(self, path: Path, sha256: str | None, pinned_by: str, metrics_registry, access_log: logging.Logger):
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no state of the event loop copied
        self.pending: queue.Queue = queue.Queue(QUEUE_REQUESTS)
        requests_out, requests_in = context.Pipe(duplex=False)
        results_out, results_in = context.Pipe(duplex=False)
        self.process = context.Process(target=challenger_main, args=(str(path), sha256, pinned_by, requests_out,
                                                                     results_in),
                                       name="fastslow-shadow", daemon=True)
        self.process.start()
        requests_out.close(), results_in.close()  # the process's ends: its exit is then an end of file here
        self.requests, self.results = requests_in, results_out
        self.version, self.sha256 = self._wait_ready(path)
        self.metrics = ShadowMetrics(metrics_registry)
        self.metrics.model.labels(self.version, self.sha256).set(1)
        self.access_log = access_log
        self.threads = [threading.Thread(target=target, name=name, daemon=True)
                        for target, name in ((self._feed, "fastslow-shadow-feed"), (self._read, "fastslow-shadow-read"))]
        for thread in self.threads:
            thread.start()
        log.info("worker %d: shadow challenger %s (sha256 %s…) loaded from %s in process %d", os.getpid(),
                 self.version, self.sha256[:12], path, self.process.pid)

    @classmethod
    def from_env(cls, metrics_registry, access_log: logging.Logger) -> "Shadow | None":
        """The challenger ``export_challenger`` put in the environment, started; None when there is none.
        ``ModelLoadError`` when it cannot be trusted or used."""
        if not os.environ.get(SHADOW_ENV):
            return None
        return cls(Path(os.environ[SHADOW_ENV]), os.environ.get(SHADOW_PIN_ENV) or None,
                   os.environ.get(SHADOW_PINNED_BY_ENV, ""), metrics_registry, access_log)

    def _wait_ready(self, path: Path) -> tuple[str, str]:
        deadline = time.monotonic() + START_TIMEOUT
        try:
            while time.monotonic() < deadline:
                if self.results.poll(0.2):
                    message = self.results.recv()
                    if message[0] == "ready":
                        return message[1], message[2]
                    raise ModelLoadError(f"shadow model: {message[1]}")
                if not self.process.is_alive():
                    raise ModelLoadError(f"shadow model {path}: its process exited with {self.process.exitcode} "
                                         "before it loaded")
            raise ModelLoadError(f"shadow model {path}: not loaded after {START_TIMEOUT:g} s")
        except (ModelLoadError, EOFError, OSError) as exc:
            self._stop_process()
            if isinstance(exc, ModelLoadError):
                raise
            raise ModelLoadError(f"shadow model {path}: its process exited before it loaded") from None

    def submit(self, request_id: str | None, rows: list, records: list[dict]) -> str:
        """Hand the rows the served model gave a record (not an error record) to the challenger without
        waiting: ``"queued"``, or ``"dropped"`` when its queue is full."""
        compared = [(i, row, record["label"], record["primary_reason_code"])
                    for i, (row, record) in enumerate(zip(rows, records)) if "error" not in record]
        if not compared:
            return "none"
        try:
            self.pending.put_nowait((request_id, compared))
        except queue.Full:
            self.metrics.dropped.inc(len(compared))
            return "dropped"
        return "queued"

    def _feed(self) -> None:
        while True:
            message = self.pending.get()
            try:
                self.requests.send(message)
            except OSError:  # the process has gone (``_read`` says so)
                return
            if message is None:
                return

    def _read(self) -> None:
        while True:
            try:
                message = self.results.recv()
            except (EOFError, OSError):  # the process has ended: told to by ``close``, or it failed
                self.process.join(10)
                if self.process.exitcode != 0:
                    log.error("worker %d: the shadow challenger's process exited with %s: no more comparisons",
                              os.getpid(), self.process.exitcode)
                return
            for request_id, compared in message:
                self._record(request_id, compared)

    def _record(self, request_id: str | None, compared: list) -> None:
        """Count one request's comparisons and write its shadow access-log line."""
        disagreements, label_agrees, code_agrees, errors = [], 0, 0, 0
        for i, label, code, challenger_label, challenger_code in compared:
            if challenger_label is None:  # the challenger failed on this batch
                errors += 1
                continue
            self.metrics.count(label, code, challenger_label, challenger_code)
            label_agrees += label == challenger_label
            code_agrees += code == challenger_code
            if (label, code) != (challenger_label, challenger_code) and len(disagreements) < LOGGED_DISAGREEMENTS:
                disagreements.append({"item": i, "label": label, "challenger_label": challenger_label,
                                      "code": code, "challenger_code": challenger_code})
        if errors:
            self.metrics.errors.inc(errors)
        if self.access_log.isEnabledFor(logging.INFO):
            line = {"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "request_id": request_id,
                    "pid": os.getpid(), "shadow": self.version, "items": len(compared) - errors,
                    "label_agrees": label_agrees, "code_agrees": code_agrees, "disagreements": disagreements}
            if errors:
                line["errors"] = errors
            self.access_log.info(json.dumps(line, ensure_ascii=False))

    def close(self) -> None:
        """Stop the challenger after the requests already queued (it also stops when its worker exits)."""
        while True:
            try:
                self.pending.put_nowait(None)
                break
            except queue.Full:  # make room for the stop: the oldest waiting request is let go
                with contextlib.suppress(queue.Empty):
                    self.metrics.dropped.inc(len(self.pending.get_nowait()[1]))
        for thread in self.threads:
            thread.join(30)
        self._stop_process()

    def _stop_process(self) -> None:
        self.process.join(10)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(10)
        self.requests.close()
        self.results.close()


def challenger_main(path: str, sha256: str | None, pinned_by: str, requests, results) -> None:
    """The challenger process: load the model, say it is ready, then score what arrives, in batches, until
    told to stop (None) or until its worker has gone (the end of its pipe)."""
    from fastslow.models.lifecycle.bundle import load_bundle, warmed

    for name in (EXPECT_ENV, EXPECT_FROM_ENV):  # the served model's pin, not the challenger's
        os.environ.pop(name, None)
    try:
        model = warmed(load_bundle(path, expect_sha256=sha256, pinned_by=pinned_by), path)
    except ModelLoadError as exc:
        results.send(("failed", str(exc)))
        return
    results.send(("ready", model.version, model.info["sha256"]))
    try:
        while True:
            batch = [requests.recv()]
            if batch[0] is None:
                return
            stop = False
            while sum(len(compared) for _, compared in batch) < MAX_BATCH and requests.poll():
                more = requests.recv()
                if more is None:
                    stop = True
                    break
                batch.append(more)
            results.send(score_batch(model, batch))
            if stop:
                return
    except (EOFError, BrokenPipeError):  # the worker has gone
        return


def score_batch(model, batch: list) -> list:
    """``[(request_id, [(item, label, code, challenger_label, challenger_code), ...]), ...]`` for the
    requests of ``batch``; challenger_label None for every query when scoring raised."""
    rows = [{k: v for k, v in row.items() if k != "explain"} for _, compared in batch for _, row, _, _ in compared]
    try:
        records = iter(model.score(rows, values_checked=True))
    except Exception:  # noqa: BLE001 - a bug in the challenger must not stop the comparison of later requests
        traceback.print_exc()
        records = iter([{}] * len(rows))
    return [(request_id, [(i, label, code, *_challenger_answer(next(records))) for i, _, label, code in compared])
            for request_id, compared in batch]


def _challenger_answer(record: dict) -> tuple[str | None, str | None]:
    if not record:
        return None, None
    if "error" in record:
        return "error", None
    return record["label"], record["primary_reason_code"]
