"""The tracking store as a user meets it: an unreachable MLflow server, a server that is not MLflow's or
never answers, and a local SQLite store that is not a sound database each fail within seconds with one
line naming the store (never "no registered model", never a traceback, never after fitting), and the
read-only commands create no `mlflow.db` where they run."""

import http.server
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fastslow.models.lifecycle import registry

UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing listens
TRAIN_PY = Path(registry.__file__).resolve().parents[2] / "train.py"


def test_an_unreachable_tracking_server_fails_within_seconds_naming_its_uri(tmp_path):
    env = {**os.environ, "MLFLOW_TRACKING_URI": UNREACHABLE}
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"query": "打开空调"}\n', encoding="utf-8")
    commands = {
        # robustness logs its run: refused before it loads a model or scores a row (no model is needed to see it)
        "robustness": [sys.executable, "-m", "fastslow.cli", "robustness", str(queries), "--model",
                       str(tmp_path / "none.joblib")],
        "models": [sys.executable, "-m", "fastslow.cli", "models"],
        "promote": [sys.executable, "-m", "fastslow.cli", "promote", "1"],
        "score": [sys.executable, "-m", "fastslow.cli", "score", "-", "--model", "models:/fastslow@champion"],
        "train": [sys.executable, str(TRAIN_PY), "--output", str(tmp_path / "model" / "fastslow.joblib")],
    }
    started = time.monotonic()
    processes = {name: subprocess.Popen(argv, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for name, argv in commands.items()}
    try:
        results = {name: (p.wait(timeout=15), p.stderr.read().decode()) for name, p in processes.items()}
    finally:
        for p in processes.values():
            p.kill()
            p.wait()
    assert time.monotonic() - started < 15
    for name, (status, stderr) in results.items():
        assert status == 2, (name, stderr)
        assert f"cannot reach the MLflow tracking server {UNREACHABLE}" in stderr, (name, stderr)
        assert "no registered model" not in stderr and "Traceback" not in stderr, (name, stderr)
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "model").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["queries.jsonl"]


@pytest.mark.parametrize("argv", [["models"], ["promote", "1"], ["score", "-", "--model", "models:/fastslow@champion"]],
                         ids=["models", "promote", "score"])
def test_the_read_only_commands_create_no_tracking_store(tmp_path, argv):
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    result = subprocess.run([sys.executable, "-m", "fastslow.cli", *argv], cwd=tmp_path, env=env,
                            stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert f"no tracking store at {tmp_path / 'mlflow.db'}".encode() in result.stderr, result.stderr
    assert list(tmp_path.iterdir()) == []


class _FailingClient:
    """An MLflow client whose server answers every call with ``error``."""

    def __init__(self, error):
        self.error = error

    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise self.error
        return fail


def test_only_a_missing_model_is_called_missing():
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import RESOURCE_DOES_NOT_EXIST

    missing = _FailingClient(MlflowException("Registered Model with name=fastslow not found",
                                             error_code=RESOURCE_DOES_NOT_EXIST))
    with pytest.raises(registry.RegistryError, match="no registered model 'fastslow'"):
        registry.list_versions(missing, "fastslow")
    broken = _FailingClient(MlflowException("API request to endpoint failed with error code 503"))
    with pytest.raises(registry.RegistryError, match="503") as refused:
        registry.list_versions(broken, "fastslow")
    assert "no registered model" not in str(refused.value)
    with pytest.raises(registry.RegistryError, match="503"):
        registry.champion_version(broken, "fastslow")


def run_all(commands: dict, cwd: Path, env: dict, timeout: float) -> dict:
    """Each command's (exit status, standard error), run side by side; every process ended by ``timeout``."""
    processes = {name: subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for name, argv in commands.items()}
    try:
        return {name: (p.wait(timeout=timeout), p.stderr.read().decode()) for name, p in processes.items()}
    finally:
        for p in processes.values():
            p.kill()
            p.wait()


def store_commands(tmp_path: Path) -> dict:
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"query": "打开空调"}\n', encoding="utf-8")
    return {
        "robustness": [sys.executable, "-m", "fastslow.cli", "robustness", str(queries), "--model",
                       str(tmp_path / "none.joblib")],
        "models": [sys.executable, "-m", "fastslow.cli", "models"],
        "promote": [sys.executable, "-m", "fastslow.cli", "promote", "1"],
        "score": [sys.executable, "-m", "fastslow.cli", "score", "-", "--model", "models:/fastslow@champion"],
        "train": [sys.executable, str(TRAIN_PY), "--output", str(tmp_path / "model" / "fastslow.joblib")],
    }


@pytest.mark.parametrize("damage", ["random bytes", "overwritten pages", "truncated"])
def test_a_corrupted_sqlite_store_fails_every_command_in_one_line_naming_it_before_any_fitting(trained, tmp_path,
                                                                                               damage):
    store = tmp_path / "mlflow.db"
    good = Path(trained["tracking_uri"][len("sqlite:///"):]).read_bytes()
    data = {"random bytes": os.urandom(8192), "truncated": good[: len(good) // 3],
            "overwritten pages": good[:8192] + b"\xff" * 65536 + good[8192 + 65536:]}[damage]
    store.write_bytes(data)
    uri = f"sqlite:///{store}"
    results = run_all(store_commands(tmp_path), tmp_path, {**os.environ, "MLFLOW_TRACKING_URI": uri}, timeout=120)
    for name, (status, stderr) in results.items():
        assert status == 2, (name, stderr)
        assert stderr.strip().splitlines() == [stderr.strip()] and "Traceback" not in stderr, (name, stderr)
        assert f"the tracking store {uri} is not a readable SQLite database" in stderr, (name, stderr)
    assert not (tmp_path / "model").exists() and store.read_bytes() == data


class _NotMlflow(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_error(404)

    def log_message(self, *args):
        pass


@pytest.fixture
def not_mlflow():
    """A loopback web server that answers 404 to everything."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotMlflow)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def silent():
    """A loopback port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("server, says", [("not_mlflow", "is not an MLflow tracking server (HTTP 404"),
                                          ("silent", f"accepted a connection but did not answer within {registry.PROBE_SECONDS} s")])
def test_a_server_that_accepts_connections_but_is_not_a_working_mlflow_fails_before_any_fitting(request, tmp_path,
                                                                                                server, says):
    uri = request.getfixturevalue(server)
    results = run_all(store_commands(tmp_path), tmp_path, {**os.environ, "MLFLOW_TRACKING_URI": uri},
                      timeout=60 + registry.PROBE_SECONDS)
    for name, (status, stderr) in results.items():
        assert status == 2, (name, stderr)
        assert stderr.strip().splitlines() == [stderr.strip()] and "Traceback" not in stderr, (name, stderr)
        assert f"the MLflow tracking server {uri} {says}" in stderr, (name, stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["queries.jsonl"]
