"""The distribution as a server or a batch job gets it: `pip wheel --no-deps .`, installed non-editable in
a fresh virtual environment, run from an empty folder that holds nothing but a saved model (or nothing at
all, with a `models:/` URI). Nothing may be read relative to a checkout, and the wheel's only top-level
import name is `fastslow` (generic names such as `models` or `serve` would collide with other packages).

Installing the dependencies into the fresh environment takes a minute or two (from pip's cache after the
first time); `-m "not wheel"` leaves this module out locally.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
from conftest import copy_model, locked, run_folder

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parents[1]
QUERIES = [{"id": "w1", "query": "上车时打开空调，下车时关闭空调"},
           {"id": "w2", "query": "帮我规划一下周末去杭州的行程", "endpoint": "car"},
           {"id": "w3", "query": ""}]


def installed_versions() -> str:
    """``name==version`` of every distribution of this environment but fastslow, as pip constraints."""
    seen = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name and name != "fastslow" and name not in seen:
            seen[name] = dist.version
    return "".join(f"{name}=={version}\n" for name, version in sorted(seen.items()))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(the wheel, the bin/ folder of a fresh venv with it installed, not editable, and its dependencies), made
    once per test run: pytest-xdist's workers share them through a locked folder of the run.

    The wheel is built from a copy of the source tree, so setuptools' build/ folder never lands in the checkout."""
    folder = run_folder(tmp_path_factory) / "wheel"
    folder.mkdir(exist_ok=True)
    env, out = folder / "env", folder / "dist"
    with locked(folder / "lock"):
        if not (folder / "done").exists():
            source = folder / "source" / "fastslow"
            shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
                ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", "mlruns", "mlartifacts", "*.db",
                "artifacts", ".pytest_cache"))
            subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
                           check=True)
            # a venv without pip of its own (ensurepip is 3 s of the build), installed into by this pip;
            # --no-compile: byte-compiling every installed module is half of the install, and the few modules
            # the tests import are compiled as they are imported
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
            # the dependencies at the versions the tests run with: a newer MLflow on the index would migrate the
            # schema of a store the tests' own MLflow then refuses to open
            constraints = folder / "constraints.txt"
            constraints.write_text(installed_versions(), encoding="utf-8")
            subprocess.run([sys.executable, "-m", "pip", "--python", str(env / "bin" / "python"), "install", "-q",
                            "--no-compile", "--disable-pip-version-check", "-c", str(constraints),
                            str(next(out.glob("fastslow-*.whl")))],
                           check=True)
            (folder / "done").touch()
    return next(out.glob("fastslow-*.whl")), env / "bin"


@pytest.fixture(scope="module")
def wheel(built) -> Path:
    return built[0]


@pytest.fixture(scope="module")
def installed(built) -> Path:
    return built[1]


@pytest.fixture
def empty_folder(tmp_path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


def clean_env(**extra) -> dict:
    """The environment of a user's shell: no PYTHONPATH pointing back into the repository, and bytecode written
    as a user's Python writes it (with PYTHONDONTWRITEBYTECODE each command run from the wheel, installed
    ``--no-compile``, compiled every module it imports again: 6 s a command instead of 3.6)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "MLFLOW_TRACKING_URI", "PYTHONDONTWRITEBYTECODE")}
    return {**env, **extra}


def test_the_wheel_installs_one_top_level_name_with_its_runtime_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"fastslow"}
    # every file the code reads at run time: all lexicons (sub-folders too), the taxonomy, the fixtures,
    # and every bundled data set (`fastslow train` runs installed: corpus, dev, calibration and blind sets)
    runtime = [p for folder in ("features/lexicons", "data/taxonomy", "data/fixtures")
               for p in (ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    runtime += sorted((ROOT / "data").rglob("*.jsonl"))
    assert len(runtime) > 30
    missing = [str(p.relative_to(ROOT)) for p in runtime if f"fastslow/{p.relative_to(ROOT).as_posix()}" not in names]
    assert not missing, f"left out of the wheel: {missing}"
    assert not [n for n in names if n.startswith("fastslow/tests/") or "/artifacts/" in n or n.endswith(".db")]


def test_installed_wheel_scores_a_file_from_an_empty_folder(installed, empty_folder, trained, model):
    model_path = copy_model(trained, empty_folder)
    (empty_folder / "q.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUERIES),
                                          encoding="utf-8")
    done = subprocess.run([installed / "fastslow", "score", "q.jsonl", "-o", "out.jsonl", "--model", model_path.name],
                          cwd=empty_folder, env=clean_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (empty_folder / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    expected = model.score([dict(q) for q in QUERIES])
    assert [r.get("label") for r in records] == [r.get("label") for r in expected]
    assert records[:2] == json.loads(json.dumps(expected[:2], ensure_ascii=False))
    assert "error" in records[2] and records[2]["line"] == 3
    assert sorted(p.name for p in empty_folder.iterdir()) == ["fastslow.joblib", "fastslow.manifest.json",
                                                                "out.jsonl", "q.jsonl"]


def test_installed_wheel_scores_a_registered_model_by_its_alias(installed, empty_folder, trained):
    (empty_folder / "q.jsonl").write_text(json.dumps(QUERIES[0], ensure_ascii=False) + "\n", encoding="utf-8")
    env = clean_env(MLFLOW_TRACKING_URI=trained["tracking_uri"], FASTSLOW_CACHE=str(empty_folder / "cache"))
    done = subprocess.run([installed / "fastslow", "score", "q.jsonl", "--model", "models:/fastslow@champion"],
                          cwd=empty_folder, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout.splitlines()[0])
    assert record["id"] == "w1" and record["label"] in ("快", "慢", "模糊")
    assert [g["condition"] for g in record["automation"]] == ["上车时", "下车时"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_installed_wheel_serves_from_an_empty_folder(installed, empty_folder, trained, model):
    model_path = copy_model(trained, empty_folder)
    port = free_port()
    proc = subprocess.Popen([installed / "fastslow", "serve", "--port", str(port)], cwd=empty_folder,
                            env=clean_env(FASTSLOW_MODEL=str(model_path)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                assert time.monotonic() < deadline, "server not ready in 120 s"
                time.sleep(0.3)
        body = json.dumps(QUERIES[1], ensure_ascii=False).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/route", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as r:
            record = json.loads(r.read())
        assert record == json.loads(json.dumps(model.score([dict(QUERIES[1])])[0], ensure_ascii=False))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
