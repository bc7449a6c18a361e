"""A challenger scored beside the served model on live traffic, off the response path:

    fastslow serve --model models:/fastslow@champion --shadow models:/fastslow@challenger

Every query a worker answers is also handed to a challenger process of its own (spawned at start, with
the challenger loaded, checked like any model, and warmed up). The response path only appends the
request to a bounded list (a request that finds it full is dropped, and counted); a thread of the
worker sends the list to the process every ``SEND_EVERY`` seconds, so that a request wakes no thread and
costs the worker no pickling while it is answered. The process scores what it receives in batches,
writes one access-log line per request (beside the request's own line on standard output, joined by
``request_id``: the worker never formats them), and sends back the counts of (served label, served code,
challenger label, challenger code), which a second thread of the worker adds to ``/metrics``. Metrics,
all with closed label sets (labels 快/慢/模糊, the taxonomy's reason codes):

- ``fastslow_shadow_label_agreement_total{label,agrees}``: queries by the served label, and whether the
  challenger gave the same label; ``..._code_agreement_total{reason_code,agrees}`` the same by primary code;
- ``fastslow_shadow_labels_total{label,challenger_label}``: the two labels side by side (which way they
  disagree; ``challenger_label="error"`` for an input the challenger refuses);
- ``fastslow_shadow_dropped_total``: queries the challenger never saw (its queue was full);
  ``fastslow_shadow_errors_total``: queries it failed to score (a bug: the traceback is in the server log);
- ``fastslow_shadow_model_info{model_version,sha256}``: 1 for the challenger.

The challenger's trust is its own: it is vouched for by its signature, by the registry's pin of its
``models:/`` URI, or by ``--trust-unsigned``; a ``--expect-sha256`` pins the served model only.
"""

from __future__ import annotations

import collections
import json
import logging
import multiprocessing
import os
import threading
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

from prometheus_client import Counter, Gauge

from fastslow.models.lifecycle.manifest import ModelLoadError
from fastslow.models.lifecycle.signing import EXPECT_ENV, EXPECT_FROM_ENV, scoped_env
from fastslow.models.taxonomy import LABELS, REASON_CODES

#: the challenger's bundle (a local file: ``run`` resolves a ``models:/`` URI once, before the workers start),
#: and the registry's pin of it
SHADOW_ENV = "FASTSLOW_SHADOW"
SHADOW_PIN_ENV = "FASTSLOW_SHADOW_SHA256"
SHADOW_PINNED_BY_ENV = "FASTSLOW_SHADOW_PINNED_BY"
#: requests waiting for the challenger at most; a request that finds the queue full is dropped
QUEUE_REQUESTS = 1024
#: seconds between two sends of the waiting requests to the challenger
SEND_EVERY = 0.05
#: requests in one message to the challenger at most
SEND_AT_MOST = 64
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


def without_served_pin() -> None:
    """Drop the served model's pin (``--expect-sha256``) from this process's environment: it pins that one
    file, never the challenger."""
    for name in (EXPECT_ENV, EXPECT_FROM_ENV):
        os.environ.pop(name, None)


def check_challenger(model: str | Path) -> None:
    """The challenger's own checks (``resolve``, then ``verify_bundle`` without unpickling) as its process will
    make them, without the served model's pin: ``ModelLoadError`` saying why it would be refused. For a
    refusal before anything is loaded; the challenger's process checks what it loads again."""
    from fastslow.models.lifecycle.registry import RegistryError, resolve

    with scoped_env():
        without_served_pin()
        try:
            resolved = resolve(model)
        except RegistryError as exc:
            raise ModelLoadError(f"--shadow: {exc}") from None
        try:
            resolved.verify()
        except ModelLoadError as exc:
            raise ModelLoadError(f"shadow model: {exc}") from None


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

    def count(self, label: str, code: str, challenger_label: str, challenger_code: str | None, n: int = 1) -> None:
        """``n`` queries the served model gave ``label`` and ``code``, the challenger the others."""
        challenger_label = challenger_label if challenger_label in LABELS else "error"
        self.labels.labels(label, challenger_label).inc(n)
        self.label_agreement.labels(label, str(label == challenger_label).lower()).inc(n)
        self.code_agreement.labels(code if code in REASON_CODES else "other",
                                   str(code == challenger_code).lower()).inc(n)


class Shadow:
    """The challenger process of one worker, the bounded list of requests waiting for it, and two threads:
    one sends the waiting requests to the process, one adds the counts it sends back to the metrics."""

    def __init__(self, path: Path, sha256: str | None, pinned_by: str, metrics_registry, access_log: logging.Logger):
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no state of the event loop copied
        self.pending: collections.deque = collections.deque()
        self.stopping = threading.Event()
        requests_out, requests_in = context.Pipe(duplex=False)
        results_out, results_in = context.Pipe(duplex=False)
        self.process = context.Process(target=challenger_main,
                                       args=(str(path), sha256, pinned_by, requests_out, results_in,
                                             access_log.isEnabledFor(logging.INFO)),
                                       name="fastslow-shadow", daemon=True)
        self.process.start()
        requests_out.close()  # the process's ends: its exit is then an end of file here
        results_in.close()
        self.requests, self.results = requests_in, results_out
        self.version, self.sha256 = self._wait_ready(path)
        self.metrics = ShadowMetrics(metrics_registry)
        self.metrics.model.labels(self.version, self.sha256).set(1)
        self.threads = [threading.Thread(target=target, name=name, daemon=True)
                        for target, name in ((self._send, "fastslow-shadow-send"), (self._read, "fastslow-shadow-read"))]
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
        waiting: ``"queued"``, or ``"dropped"`` when ``QUEUE_REQUESTS`` requests are already waiting."""
        compared = [(i, row, record["label"], record["primary_reason_code"])
                    for i, (row, record) in enumerate(zip(rows, records)) if "error" not in record]
        if not compared:
            return "none"
        if len(self.pending) >= QUEUE_REQUESTS or self.stopping.is_set():
            self.metrics.dropped.inc(len(compared))
            return "dropped"
        self.pending.append((request_id, compared))
        return "queued"

    def _send(self) -> None:
        """Every ``SEND_EVERY`` seconds, the waiting requests to the process in one message (blocking here,
        not on the response path, while the process is behind); at ``close``, the rest and then None."""
        while True:
            stopping = self.stopping.wait(SEND_EVERY)
            batch = [self.pending.popleft() for _ in range(len(self.pending))]  # appended meanwhile: the next send
            try:
                for start in range(0, len(batch), SEND_AT_MOST):  # short pickling: the event loop waits on the GIL
                    self.requests.send(batch[start:start + SEND_AT_MOST])
                if stopping:
                    self.requests.send(None)
                    return
            except OSError:  # the process has gone (``_read`` says so)
                return

    def _read(self) -> None:
        while True:
            try:
                counts = self.results.recv()
            except (EOFError, OSError):  # the process has ended: told to by ``close``, or it failed
                self.process.join(10)
                if self.process.exitcode != 0:
                    log.error("worker %d: the shadow challenger's process exited with %s: no more comparisons",
                              os.getpid(), self.process.exitcode)
                return
            for (label, code, challenger_label, challenger_code), n in counts.items():
                if challenger_label is None:  # the challenger failed on these
                    self.metrics.errors.inc(n)
                else:
                    self.metrics.count(label, code, challenger_label, challenger_code, n)

    def close(self) -> None:
        """Stop the challenger after the requests already waiting (it also stops when its worker exits)."""
        self.stopping.set()
        for thread in self.threads:
            thread.join(60)
        self._stop_process()

    def _stop_process(self) -> None:
        self.process.join(10)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(10)
        self.requests.close()
        self.results.close()


def challenger_main(path: str, sha256: str | None, pinned_by: str, requests, results, log_access: bool) -> None:
    """The challenger process: load the model, say it is ready, then score what arrives until told to stop
    (None) or until its worker has gone (the end of its pipe): one access-log line per request, and the
    counts of each batch sent back."""
    from fastslow.models.lifecycle.bundle import load_bundle, warmed

    without_served_pin()
    try:
        model = warmed(load_bundle(path, expect_sha256=sha256, pinned_by=pinned_by), path)
    except ModelLoadError as exc:
        results.send(("failed", str(exc)))
        return
    results.send(("ready", model.version, model.info["sha256"]))
    worker = multiprocessing.parent_process().pid
    try:
        while True:
            batch = requests.recv()
            if batch is None:
                return
            for start in range(0, len(batch), MAX_BATCH):
                compared = score_batch(model, batch[start:start + MAX_BATCH])
                if log_access:
                    for request_id, verdicts in compared:
                        os.write(1, access_line(request_id, worker, model.version, verdicts))  # one line, one write
                results.send(collections.Counter(verdict[1:] for _, verdicts in compared for verdict in verdicts))
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


def access_line(request_id: str | None, worker: int, version: str, verdicts: list) -> bytes:
    """One request's shadow access-log line: how many of its queries the challenger agreed with, and the
    first ``LOGGED_DISAGREEMENTS`` disagreements in full."""
    scored = [v for v in verdicts if v[3] is not None]
    line = {"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "request_id": request_id,
            "pid": worker, "shadow": version, "items": len(scored),
            "label_agrees": sum(label == other for _, label, _, other, _ in scored),
            "code_agrees": sum(code == other for _, _, code, _, other in scored),
            "disagreements": [{"item": i, "label": label, "challenger_label": other_label, "code": code,
                               "challenger_code": other_code}
                              for i, label, code, other_label, other_code in scored
                              if (label, code) != (other_label, other_code)][:LOGGED_DISAGREEMENTS]}
    if len(scored) < len(verdicts):
        line["errors"] = len(verdicts) - len(scored)
    return (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")


def _challenger_answer(record: dict) -> tuple[str | None, str | None]:
    if not record:
        return None, None
    if "error" in record:
        return "error", None
    return record["label"], record["primary_reason_code"]
