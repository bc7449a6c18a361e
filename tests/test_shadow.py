"""`fastslow serve --shadow`: a challenger scores every request beside the served model, off the response
path, and its agreement shows on /metrics and in the access log. The counts are checked against both
models' own ``score`` of the same queries. The real server runs in a subprocess on a loopback port; no
timings are asserted here (``benchmarks/bench_server.py --shadow`` measures the response time)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import requests
from conftest import sample_rows, small_train, write_jsonl

from fastslow.models.lifecycle.bundle import load_bundle
from fastslow.models.lifecycle.manifest import manifest_path
from fastslow.models.taxonomy import LABELS
from fastslow.serve import shadow as shadow_module

START_TIMEOUT = 180
ROWS = [{"query": "打开空调"}, {"query": "帮我规划一下周末去杭州的行程"}, {"query": "就按刚才那个来"},
        {"query": "下一首"}, {"query": "太冷了，调一下空调"}, {"query": "明天早上七点叫我起床然后打开窗帘"}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """`fastslow serve` in a subprocess on a free loopback port, its access log in a file."""

    def __init__(self, folder: Path, *args, env: dict | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.out, self.err = folder / f"serve-{self.port}.out", folder / f"serve-{self.port}.err"
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "fastslow.cli", "serve", "--host", "127.0.0.1",
                                          "--port", str(self.port), *map(str, args)],
                                         stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         env={**os.environ, **(env or {})})

    def wait_ready(self) -> "Served":
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode}:\n{self.err.read_text()}")
            try:
                if requests.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"server not ready after {START_TIMEOUT} s:\n{self.err.read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def access_lines(self) -> list[dict]:
        lines = []
        for line in self.out.read_text(encoding="utf-8").splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:  # a line being written
                pass
        return lines

    def metrics(self) -> dict[str, float]:
        samples = {}
        for line in requests.get(self.url + "/metrics", timeout=30).text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                samples[name] = float(value)
        return samples


@pytest.fixture(scope="module")
def challenger(tmp_path_factory, store_in):
    """A small router-only model trained on other rows than the served one: it disagrees now and then."""
    folder = tmp_path_factory.mktemp("challenger")
    uri = store_in(folder)
    run = small_train(folder, uri, "--only", "--data", str(write_jsonl(folder / "rows.jsonl", sample_rows(120, 11))))
    return {"path": folder / "fastslow.joblib", "uri": uri, "version": run["registered_version"]}


@pytest.fixture(scope="module")
def shadowed(trained, challenger, tmp_path_factory):
    """The served model pinned by --expect-sha256 (a pin of the served file only), the challenger from its
    registry URI (its own pin vouches for it)."""
    srv = Served(tmp_path_factory.mktemp("shadowed"), "--model", trained["path"],
                 "--expect-sha256", trained["manifest"]["sha256"],
                 "--shadow", f"models:/fastslow/{challenger['version']}",
                 env={"MLFLOW_TRACKING_URI": challenger["uri"],
                      "FASTSLOW_CACHE": str(tmp_path_factory.mktemp("cache"))})
    try:
        yield srv.wait_ready()
    finally:
        srv.stop()


def wait_for(condition, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} not seen after {timeout} s"
        time.sleep(0.1)


def test_the_challengers_agreement_by_label_and_code_shows_on_metrics_and_in_the_access_log(shadowed, model,
                                                                                          challenger):
    for row in ROWS:
        assert requests.post(shadowed.url + "/v1/route", json=row, timeout=30).status_code == 200
    batch = requests.post(shadowed.url + "/v1/route/batch", json={"items": [*ROWS, {"query": ""}]}, timeout=30)
    assert batch.status_code == 200 and "error" in batch.json()["records"][-1]  # an error record is not compared
    served = model.score(ROWS) * 2
    other = load_bundle(challenger["path"]).score(ROWS) * 2
    pairs = Counter((s["label"], o["label"]) for s, o in zip(served, other))
    codes = Counter((s["primary_reason_code"], s["primary_reason_code"] == o["primary_reason_code"])
                    for s, o in zip(served, other))

    total = 'fastslow_shadow_label_agreement_total{{agrees="{}",label="{}"}}'
    wait_for(lambda: sum(shadowed.metrics().get(total.format(a, label), 0) for a in ("true", "false")
                         for label in LABELS) == len(served), "every query's comparison on /metrics")
    samples = shadowed.metrics()
    for label in LABELS:
        for challenger_label in (*LABELS, "error"):
            key = f'fastslow_shadow_labels_total{{challenger_label="{challenger_label}",label="{label}"}}'
            assert samples.get(key, 0) == pairs[label, challenger_label], key
        agrees = sum(n for (s, o), n in pairs.items() if s == label == o)
        assert samples.get(total.format("true", label), 0) == agrees
        assert samples.get(total.format("false", label), 0) == sum(n for (s, _), n in pairs.items() if s == label) - agrees
    for (code, same), n in codes.items():
        assert samples[f'fastslow_shadow_code_agreement_total{{agrees="{str(same).lower()}",reason_code="{code}"}}'] == n
    assert samples["fastslow_shadow_dropped_total"] == 0 and samples["fastslow_shadow_errors_total"] == 0
    challenger_manifest = json.loads(manifest_path(challenger["path"]).read_text(encoding="utf-8"))
    assert samples[f'fastslow_shadow_model_info{{model_version="{challenger_manifest["model_version"]}",'
                   f'sha256="{challenger_manifest["sha256"]}"}}'] == 1

    lines = shadowed.access_lines()
    routed = [line for line in lines if line.get("path", "").startswith("/v1/route")]
    assert [line["shadow"] for line in routed] == ["queued"] * (len(ROWS) + 1)
    compared = {line["request_id"]: line for line in lines if "shadow" in line and "path" not in line}
    assert set(compared) == {line["request_id"] for line in routed}  # one shadow line per request, joined by id
    for line, s, o in zip(routed[:len(ROWS)], served, other):
        shadow_line = compared[line["request_id"]]
        assert shadow_line["shadow"] == challenger_manifest["model_version"] and shadow_line["items"] == 1
        assert shadow_line["label_agrees"] == (s["label"] == o["label"])
        assert shadow_line["code_agrees"] == (s["primary_reason_code"] == o["primary_reason_code"])
    batch_line = compared[routed[-1]["request_id"]]
    assert batch_line["items"] == len(ROWS)
    assert batch_line["label_agrees"] == sum(s["label"] == o["label"] for s, o in zip(served, other)) // 2
    assert [d["item"] for d in batch_line["disagreements"]] == [
        i for i, (s, o) in enumerate(zip(served[:len(ROWS)], other))
        if (s["label"], s["primary_reason_code"]) != (o["label"], o["primary_reason_code"])]


def test_a_challenger_nothing_vouches_for_stops_the_server_at_start(trained, challenger, tmp_path):
    unsigned = tmp_path / "unsigned" / "fastslow.joblib"
    unsigned.parent.mkdir()
    shutil.copy(challenger["path"], unsigned)
    manifest = json.loads(manifest_path(challenger["path"]).read_text(encoding="utf-8"))
    del manifest["signature"]
    manifest_path(unsigned).write_text(json.dumps(manifest), encoding="utf-8")
    srv = Served(tmp_path, "--model", trained["path"], "--shadow", unsigned)
    try:
        assert srv.proc.wait(timeout=START_TIMEOUT) == 2
    finally:
        srv.stop()
    err = srv.err.read_text(encoding="utf-8")
    assert f"fastslow serve: shadow model: refusing to load {unsigned}: nothing vouches for its SHA-256" in err


def test_a_full_queue_drops_requests_and_counts_them(challenger, monkeypatch):
    """The response path never waits: with room for 2 waiting requests, most of a burst is dropped and
    counted, and every query is either compared or counted as dropped."""
    import logging

    from prometheus_client import CollectorRegistry

    monkeypatch.setattr(shadow_module, "QUEUE_REQUESTS", 2)
    monkeypatch.setenv(shadow_module.SHADOW_ENV, str(challenger["path"]))
    registry = CollectorRegistry()
    shadow = shadow_module.Shadow.from_env(registry, logging.getLogger("fastslow.test-shadow"))
    record = {"label": "快", "primary_reason_code": "DIRECT_ACTION"}
    try:
        outcomes = Counter(shadow.submit(str(i), [{"query": "打开空调"}] * 3, [record] * 3) for i in range(2000))
    finally:
        shadow.close()
    assert outcomes["dropped"] > 0 and outcomes["queued"] + outcomes["dropped"] == 2000
    value = registry.get_sample_value
    compared = sum(value("fastslow_shadow_label_agreement_total", {"label": "快", "agrees": a}) or 0
                   for a in ("true", "false"))
    assert value("fastslow_shadow_dropped_total") == 3 * outcomes["dropped"]
    assert compared == 3 * outcomes["queued"]
    assert not shadow.process.is_alive() and shadow.process.exitcode == 0


def test_metric_labels_stay_in_closed_sets():
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    metrics = shadow_module.ShadowMetrics(registry)
    metrics.count("慢", "A_CODE_NO_TAXONOMY_HAS", "some-new-label", "X")
    value = registry.get_sample_value
    assert value("fastslow_shadow_labels_total", {"label": "慢", "challenger_label": "error"}) == 1
    assert value("fastslow_shadow_code_agreement_total", {"reason_code": "other", "agrees": "false"}) == 1
