"""The server's Prometheus metrics (``GET /metrics``, text format, by ``prometheus_client``).

- ``fastslow_http_requests_total{endpoint,method,status}`` and
  ``fastslow_http_request_duration_seconds{endpoint}``: every request, by route (unknown paths count
  as ``other``, and so do methods outside ``METHODS``, so a scanner cannot grow the series without bound);
- ``fastslow_records_total{label,reason_code}``: records served (both routes), an error record as
  ``label="error"`` with the field it names as ``reason_code``;
- ``fastslow_review_required_total{label}``: records with ``review_required``; the review share is
  ``sum(rate(fastslow_review_required_total[1h])) / sum(rate(fastslow_records_total{label!="error"}[1h]))``;
- ``fastslow_confidence{label}``: histogram of the records' confidence;
- ``fastslow_model_info{model_version,sha256}``: 1 for the loaded model.

Several workers (``fastslow serve --workers N``): ``run`` points ``PROMETHEUS_MULTIPROC_DIR`` at a fresh
folder before the workers start, every worker writes its values there, and whichever worker answers
``/metrics`` reports the sum over all of them (prometheus_client's multiprocess mode), so one scrape
target sees the whole server.
"""

from __future__ import annotations

import os
import re

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import disable_created_metrics, multiprocess

from fastslow.models.record import INPUT_FIELDS

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
disable_created_metrics()  # no ``*_created`` series: Prometheus does not use them, they double the scrape

#: the HTTP methods counted by name; any other a client sends is counted as ``other``
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))

CONFIDENCE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0)


def error_field(error: str) -> str:
    """The top-level input field an error names (``context`` for ``context[0].role: ...``), ``row`` for a
    row that is not an object, else ``other``: a bounded set, whatever fields a client sends."""
    field = re.split(r"[\[.:]", error, maxsplit=1)[0]
    return field if field in (*INPUT_FIELDS, "row") else "other"


class Metrics:
    """The metric families of one app; in multiprocess mode their values live in files shared by the
    workers, otherwise in this registry."""

    def __init__(self):
        self.multiprocess = bool(os.environ.get(MULTIPROC_ENV))
        self.registry = None if self.multiprocess else CollectorRegistry()
        reg = {"registry": self.registry}  # None in multiprocess mode: the files are the registry
        self.requests = Counter("fastslow_http_requests", "HTTP requests by endpoint, method and status",
                                ("endpoint", "method", "status"), **reg)
        self.latency = Histogram("fastslow_http_request_duration_seconds", "HTTP request latency by endpoint",
                                 ("endpoint",), buckets=LATENCY_BUCKETS, **reg)
        self.records = Counter("fastslow_records", "records served by label and primary reason code "
                                                   "(error records: label 'error', reason_code the field)",
                               ("label", "reason_code"), **reg)
        self.review = Counter("fastslow_review_required", "records that need a person's review, by label",
                              ("label",), **reg)
        self.confidence = Histogram("fastslow_confidence", "confidence of the records served, by label",
                                    ("label",), buckets=CONFIDENCE_BUCKETS, **reg)
        self.model = Gauge("fastslow_model_info", "the loaded model (value 1)", ("model_version", "sha256"),
                           multiprocess_mode="max", **reg)
        # the children ``labels()`` returned so far, by their label values: ``labels()`` checks its arguments
        # and takes a lock on every call, a dict lookup does not
        self._request_children: dict[tuple, tuple] = {}
        self._record_children: dict[tuple, tuple] = {}
        self._review_children: dict[str, Counter] = {}

    def set_model(self, version: str, sha256: str | None) -> None:
        self.model.labels(version, sha256 or "").set(1)

    def observe_request(self, endpoint: str, method: str, status: int, seconds: float) -> None:
        """Count a request. Every label takes its value from a closed set: ``endpoint`` is a route or
        ``other`` (the caller's), ``method`` one of ``METHODS`` or ``other``, ``status`` the server's own."""
        if method not in METHODS:
            method = "other"
        key = (endpoint, method, status)
        children = self._request_children.get(key)
        if children is None:
            children = self._request_children[key] = (self.requests.labels(endpoint, method, str(status)),
                                                       self.latency.labels(endpoint))
        children[0].inc()
        children[1].observe(seconds)

    def observe_records(self, records: list[dict]) -> None:
        for record in records:
            if "error" in record:
                self.records.labels("error", error_field(record["error"])).inc()
                continue
            label = record["label"]
            key = (label, record["primary_reason_code"])
            children = self._record_children.get(key)
            if children is None:
                children = self._record_children[key] = (self.records.labels(*key), self.confidence.labels(label))
            children[0].inc()
            children[1].observe(record["confidence"])
            if record["review_required"]:  # its series appears with the label's first review, not before
                review = self._review_children.get(label)
                if review is None:
                    review = self._review_children[label] = self.review.labels(label)
                review.inc()

    def exposition(self) -> tuple[bytes, str]:
        """The text format of every metric: this process's, or the sum over all workers."""
        if self.multiprocess:
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
        else:
            registry = self.registry
        return generate_latest(registry), CONTENT_TYPE_LATEST
