"""Shared fixtures and the readers of the bundled data. ``trained`` trains the real model once per test run
on the bundled data, logging to a throw-away SQLite MLflow store, exactly as `python train.py` does; with
pytest-xdist the workers share that one model (and one signing key) through a locked folder of the run.

Hypothesis runs derandomized (its examples are a function of the test, never of the run or of an example
database), so a run that passes passes again; no deadline, as the machine may be busy."""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("fastslow", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("fastslow")

ROOT = Path(__file__).resolve().parents[1]
#: bundled files whose texts the fast-path tests hold each fast path to its definition on
ROUTING_FILES = ("data/dev/routing_dev.jsonl", "data/fixtures/routing_v1.jsonl", "data/train/core.jsonl")
AUTOMATION_FILES = ("data/automation/dev/automation_dev.jsonl", "data/fixtures/automation_v1.jsonl",
                    "data/automation/train/core.jsonl")
#: every bundled JSONL file (automation, training, dev and fixture sets), for the rules' widest checks
ALL_FILES = tuple(str(path.relative_to(ROOT)) for pattern in ("data/automation/**/*.jsonl", "data/train/*.jsonl",
                                                              "data/dev/*.jsonl", "data/fixtures/*.jsonl")
                  for path in sorted(ROOT.glob(pattern)))

#: every bundled dev and fixture file of queries (the blind sets, in data/blind/, are neither)
DEV_AND_FIXTURE_FILES = tuple(str(path.relative_to(ROOT)) for pattern in (
    "data/fixtures/*.jsonl", "data/dev/*.jsonl", "data/automation/dev/*.jsonl") for path in sorted(ROOT.glob(pattern)))


def bundled_rows(files) -> list[dict]:
    """Every row of the bundled JSONL ``files`` (paths in the repository), in order."""
    return [json.loads(line) for path in files
            for line in (ROOT / path).read_text(encoding="utf-8").splitlines() if line.strip()]


def bundled_queries(files) -> list[str]:
    """The distinct queries of ``files``, sorted."""
    return sorted({row["query"] for row in bundled_rows(files)})


def bundled_subqueries(files=AUTOMATION_FILES) -> list[str]:
    """The distinct subqueries of the expected groups of ``files``, sorted."""
    return sorted({q["subquery"] for row in bundled_rows(files)
                   for g in (row.get("expected") or []) for q in g["querys"]})


def run_cli(*args, stdin: bytes | None = None, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    """`fastslow ARGS` run in this process through ``fastslow.cli.main``, for the tests of what a command does
    (its records, messages and exit status): a ``subprocess.CompletedProcess`` as ``subprocess.run([sys.executable,
    "-m", "fastslow.cli", *args], input=stdin, capture_output=True, env={**os.environ, **env}, cwd=cwd)`` gives.
    Each such process costs ~3 s of CPU (importing scikit-learn and pandas, jieba's dictionary, the model), and
    ~60 commands ran that way: here only the model is loaded again (``--jobs 2`` still starts its two worker
    processes). Standard input, output and error are
    bytes (text written as UTF-8, as to a pipe); ``SystemExit`` gives the status and an uncaught exception its
    traceback on standard error and status 1, as the interpreter does; Python's default warning filters apply
    and warnings and records of loggers without a handler go to standard error, as in a fresh interpreter. The
    environment, the working folder and the SIGINT and SIGTERM handlers are restored afterwards.

    Real processes remain wherever the process is the point: signals, kills and the workers of a killed run
    (test_batch*.py), the server (test_server.py, test_shadow.py, test_signing.py's ``serve_refused``), a fresh
    interpreter (test_router.py, test_server.py), the installed entry point (test_wheel.py), the tracking store
    commands side by side (test_tracking_store.py), and at least one run of each command as the user starts it
    (test_cli.py's ``fastslow``, test_explain.py, test_signing.py)."""
    import logging
    import signal
    import sys
    import traceback
    import warnings

    from fastslow import cli

    argv = [str(a) for a in args]
    out, err = io.BytesIO(), io.BytesIO()
    saved = (dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr,
             {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)})
    root = logging.getLogger()
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    root.addHandler(logging.lastResort)  # what a process without logging handlers writes to its stderr
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()  # a fresh interpreter's filters (Python 3.11, no -W), shown on its stderr
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
            warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: sys.stderr.write(
                warnings.formatwarning(message, category, filename, lineno, line))
            os.environ.update({name: str(value) for name, value in (env or {}).items()})
            if cwd is not None:
                os.chdir(cwd)
            try:
                code = cli.main(argv)
            except SystemExit as exc:
                code = exc.code
            except Exception:  # noqa: BLE001 - as an uncaught exception ends a process
                traceback.print_exc()
                code = 1
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)
                code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        return subprocess.CompletedProcess(["fastslow", *argv], code or 0, out.getvalue(), err.getvalue())
    finally:
        root.removeHandler(logging.lastResort)
        environ, folder, sys.stdin, sys.stdout, sys.stderr, handlers = saved
        os.chdir(folder)
        os.environ.clear()
        os.environ.update(environ)
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def run_folder(tmp_path_factory) -> Path:
    """The folder every process of this test run sees: pytest's base temporary folder, or with pytest-xdist
    the folder that holds each worker's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def locked(path: Path):
    """Hold an exclusive lock on ``path`` (a file created for it): one process of the run at a time."""
    import fcntl

    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session", autouse=True)
def signing_key(tmp_path_factory):
    """A throw-away key pair for the run (never ~/.config/fastslow/): every model the tests train is
    signed with its private key, and every loader, in this process or a subprocess, checks with its public
    key. pytest-xdist's workers share one pair through a locked folder."""
    from fastslow.models.lifecycle import signing

    folder = run_folder(tmp_path_factory) / "signing"
    folder.mkdir(exist_ok=True)
    path = folder / "signing_ed25519"
    with pytest.MonkeyPatch.context() as mp:
        for name in (signing.KEY_ENV, signing.VERIFY_KEY_ENV, signing.EXPECT_ENV, signing.TRUST_UNSIGNED_ENV):
            mp.delenv(name, raising=False)
        mp.setenv(signing.KEY_FILE_ENV, str(path))
        mp.setenv(signing.VERIFY_KEY_FILE_ENV, str(signing.public_key_path(path)))  # loaders: the public key only
        with locked(folder / "lock"):
            key = signing.ensure_key()[0]
        yield key


@pytest.fixture(scope="session")
def store_in(tmp_path_factory):
    """``store_in(folder)``: the URI of an MLflow SQLite store at ``folder/mlflow.db``, made empty if not there
    yet as a copy of one store MLflow created for this run (MLflow builds a new store by running its schema
    migrations, ~1.5 s of CPU, and a dozen tests need one each). The workers share that one through a locked
    folder; it was created from that folder, so its Default experiment points there, never at the checkout.
    ``trained`` keeps a store MLflow creates itself, as `python train.py` does."""
    import sqlite3

    folder = run_folder(tmp_path_factory) / "empty-store"
    folder.mkdir(exist_ok=True)
    template = folder / "mlflow.db"
    with locked(folder / "lock"):
        if not template.exists():
            from mlflow.tracking import MlflowClient

            with pytest.MonkeyPatch.context() as mp:
                mp.chdir(folder)
                MlflowClient(f"sqlite:///{folder / 'building.db'}").search_experiments()
            (folder / "building.db").rename(template)

    def store(target: Path) -> str:
        target.mkdir(parents=True, exist_ok=True)
        path = target / "mlflow.db"
        if not path.exists():
            with sqlite3.connect(template) as source, sqlite3.connect(path) as copy:
                source.backup(copy)
        return f"sqlite:///{path}"

    return store


@pytest.fixture(scope="session")
def trained(tmp_path_factory, signing_key):
    """``train.run``'s result for ``python train.py``'s default model, trained once per run; ``model`` is the
    bundle loaded from ``path`` (in every process alike), ``tracking_uri`` the run's MLflow store. It draws no
    pictures (``--no-plots``, the same model and tables): ``tests/test_registry.py`` checks a run that does."""
    from fastslow.models.lifecycle import training as train
    from fastslow.models.lifecycle.bundle import load_bundle

    folder = run_folder(tmp_path_factory) / "trained"
    folder.mkdir(exist_ok=True)
    saved = folder / "result.pickle"
    with locked(folder / "lock"):
        if not saved.exists():
            args = train.build_parser().parse_args([
                "--output", str(folder / "fastslow.joblib"),
                "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}",
                "--experiment", "fastslow-tests", "--no-plots",
            ])
            result = {k: v for k, v in train.run(args).items() if k != "model"}
            saved.write_bytes(pickle.dumps(result))
    result = pickle.loads(saved.read_bytes())
    result["path"] = folder / "fastslow.joblib"
    result["tracking_uri"] = f"sqlite:///{folder / 'mlflow.db'}"
    result["model"] = load_bundle(result["path"])
    return result


def pytest_collection_modifyitems(config, items):
    """Modules whose tests need the ``trained`` model first and last, the others between them, each module's
    tests kept together in their order, and the wheel's tests where the second worker starts. pytest-xdist hands
    each of the two workers one half of this list (then they steal from each other), so one worker trains the
    model at once while the other builds the wheel and runs tests that need no model, instead of both waiting
    for the one training."""
    modules: dict = {}
    for item in items:
        modules.setdefault(item.module.__name__, []).append(item)
    needing = [tests for tests in modules.values() if any("trained" in item.fixturenames for item in tests)]
    others = [tests for tests in modules.values() if all("trained" not in item.fixturenames for item in tests)]
    half = len(needing) // 2
    # the wheel's tests share one build and install (~30 s, under a lock): where the second worker's share begins
    # (worksteal gives the first worker items[:n // 2]) they build it while the first worker trains, instead of
    # being split between the workers with one of them waiting for the other's build; those of them that need
    # the model come after the second worker's tests that need none, so it does not wait for the training
    wheel = [item for item in items if item.get_closest_marker("wheel")]
    build = [item for item in wheel if "trained" not in item.fixturenames]
    first = [item for tests in (*needing[:half], *others) for item in tests if item not in wheel]
    last = [item for tests in needing[half:] for item in tests if item not in wheel]
    at = (len(first) + len(last) + len(wheel)) // 2
    items[:] = first[:at] + build + first[at:] + [item for item in wheel if item not in build] + last


@pytest.fixture(scope="session")
def model(trained):
    return trained["model"]


# --------------------------------------------------------------------------------------------------
# small, cheap runs of the real train.py (router only) for the registry, dataset and notebook tests

def never_trained_on() -> list[dict]:
    """Rows of every bundled set train.py leaves out of the routing corpus by default: the blind set, the
    extra dev sets (the retired blind sets) and the calibration set (the hand-written dev set is refused instead)."""
    from fastslow.models.lifecycle.dataset import (BLIND_FILE, CALIBRATION_FILE, EXTRA_DEV_FILES, load_blind,
                                                   load_labelled)

    return load_blind(BLIND_FILE) + [r for path in (*EXTRA_DEV_FILES, CALIBRATION_FILE) for r in load_labelled(path)]


def refused_in_data() -> list[dict]:
    """Queries a ``--data`` row may not hold: those of ``never_trained_on`` and of the automation blind and
    dev sets (as queries without context)."""
    from fastslow.models.automation.data import (AUTOMATION_BLIND_FILE, AUTOMATION_DEV_FILE,
                                                 AUTOMATION_EXTRA_DEV_FILES, load_automation)
    from fastslow.models.lifecycle.dataset import load_blind

    automation = load_blind(AUTOMATION_BLIND_FILE, load_automation) + [
        r for path in (AUTOMATION_DEV_FILE, *AUTOMATION_EXTRA_DEV_FILES) for r in load_automation(path)]
    return never_trained_on() + [{"query": r["query"], "context": []} for r in automation]


def sample_rows(n: int, seed: int) -> list[dict]:
    """``n`` rows of the hand-written core corpus, drawn with ``seed``; none with a query of a set never
    trained on (``refused_in_data``): a ``--data`` file holding one is refused."""
    import random

    from fastslow.models.lifecycle.dataset import without

    held_out = refused_in_data()
    rows = bundled_rows(["data/train/core.jsonl"])
    rng = random.Random(seed)
    picked = rng.sample(rows, n)
    kept, dropped = without(picked, held_out)
    if dropped:  # draw others for them: the rest of the sample stays what it was
        rest, _ = without([r for r in rows if r not in picked], held_out)
        kept += rng.sample(rest, dropped)
    return kept


def copy_model(trained: dict, folder: Path) -> Path:
    """The run's model file and its manifest copied into ``folder`` (made if missing), for a test that changes
    or moves them; the copy's path."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / trained["path"].name
    shutil.copy(trained["path"], target)
    shutil.copy(trained["path"].with_suffix(".manifest.json"), target.with_suffix(".manifest.json"))
    return target


def write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def small_train(folder, tracking_uri: str, *argv: str, plots: bool = False) -> dict:
    """``train.run`` without the automation parser, with a strongly regularised router fitted on the rows alone
    (no spoken variants, which triple the rows) (seconds, not a minute), scoring the dev, calibration, fixture
    and blind sets but none of the extra dev sets (``--dev-also`` with no path: the default run of ``trained``
    scores those; a test of what is never trained on names them again), and without its pictures unless ``plots`` (``--no-plots``: drawing them is half of such a
    run); the rest is the real path: validation, MLflow logging, registration and the champion gate."""
    from fastslow.models.lifecycle import training as train

    args = train.build_parser().parse_args([
        "--no-automation", "--C", "0.3", "--spoken-variants", "0", "--dev-also",
        "--output", str(folder / "fastslow.joblib"),
        "--tracking-uri", tracking_uri, "--experiment", "fastslow-tests", *([] if plots else ["--no-plots"]), *argv])
    return train.run(args)
