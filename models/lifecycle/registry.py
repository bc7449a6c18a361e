"""The MLflow model registry: register each run's bundle, the ``champion`` gate, and model URIs.

Every training run registers its bundle (logged under the run's ``model/`` artifacts) as a new version
of the registered model (``fastslow`` by default). The alias ``champion`` moves to it only when
``gate`` finds nothing against it: capture conformance 100% and no frozen-fixture metric below the
current champion's. ``resolve_model`` turns ``models:/fastslow@champion`` (or ``models:/fastslow/3``,
or ``runs:/<run id>/model``) into a local bundle file that ``load_bundle`` checks as usual; a registered
version also pins the bundle's SHA-256 (the tag ``bundle_sha256`` written at training), which whoever can
rewrite the downloaded file cannot rewrite, so it vouches for the file without a signing key.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import tempfile
import urllib.parse
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
DEFAULT_REGISTERED_MODEL = "fastslow"
CHAMPION = "champion"
MODEL_ARTIFACT_DIR = "model"
BUNDLE_FILE = "fastslow.joblib"
CACHE_ENV = "FASTSLOW_CACHE"

#: the frozen-fixture metrics a candidate must not fall below (run metrics, logged by train.py)
GATE_METRICS = (
    "fixture_label_accuracy",
    "fixture_label_macro_f1",
    "fixture_code_accuracy",
    "automation_fixture_group_exact",
    "automation_fixture_group_exact_no_intent",
    "automation_fixture_condition_exact",
)
#: the dev-set metrics a candidate must not fall below by more than ``DEV_TOLERANCE``. The frozen
#: fixtures are saturated (every metric 1.000), so alone they cannot tell a worse model; the dev sets
#: can, but move by a few rows between retrains on nearly the same data, hence the tolerance.
DEV_GATE_METRICS = ("dev_label_macro_f1", "automation_dev_group_exact")
DEV_TOLERANCE = 0.02
CAPTURE_METRIC = "capture_conformance"
#: the decision train.py and `fastslow promote` record on each version
GATE_TAG = "gate"
#: seconds to wait for a tracking server to accept a connection before calling it unreachable
PROBE_SECONDS = 5
#: MLflow's HTTP client otherwise waits 120 s per request and retries 7 times with backoff: about four
#: minutes before a server that is down is reported. The environment may still set its own.
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "30"}
#: MLflow's error codes for a name, version or alias that is not there (anything else is a failure)
NOT_FOUND = ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE")
#: the bundle's SHA-256, recorded on each version at training: the pin a models:/ URI loads with
PIN_TAG = "bundle_sha256"


class RegistryError(RuntimeError):
    """A model URI, version or alias that cannot be resolved; the message says which."""


class PromotionRefused(RegistryError):
    """The gate found reasons against a version; ``reasons`` lists them."""

    def __init__(self, version: str, reasons: list[str]):
        super().__init__(f"version {version} is not promoted: " + "; ".join(reasons))
        self.reasons = reasons


def tracking_uri(uri: str | None = None) -> str:
    """The tracking URI: the one given, else ``$MLFLOW_TRACKING_URI``, else the local SQLite store."""
    return uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI


def check_tracking_server(uri: str) -> None:
    """Fail fast on a tracking store that cannot work, before any fitting or scoring and before mlflow is
    imported: ``RegistryError`` naming ``uri`` when an HTTP(S) server does not accept a connection, or does
    not answer one real MLflow call (``probe_mlflow_server``) within ``PROBE_SECONDS``, or when a local
    SQLite store is not a readable database (``check_sqlite_store``). MLflow's own HTTP retries and
    timeout are shortened (``HTTP_DEFAULTS``) for a server that fails later on."""
    for name, value in HTTP_DEFAULTS.items():
        os.environ.setdefault(name, value)
    store = local_store(uri)
    if store is not None:
        check_sqlite_store(uri, store)
        return
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme not in ("http", "https"):
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        socket.create_connection((parts.hostname, port), timeout=PROBE_SECONDS).close()
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise RegistryError(f"cannot reach the MLflow tracking server {uri} ({why}); start it, or set "
                            "MLFLOW_TRACKING_URI (or --tracking-uri) to one that runs") from None
    probe_mlflow_server(uri)


#: the MLflow REST call that proves a tracking server works: cheap, read-only, answered by every version
PROBE_PATH = "/api/2.0/mlflow/experiments/search?max_results=1"


def probe_mlflow_server(uri: str) -> None:
    """One real MLflow call (``PROBE_PATH``) bounded by ``PROBE_SECONDS``: ``RegistryError`` naming ``uri``
    when it is not answered in time, or not with MLflow's JSON (a web server that is not MLflow's answers
    404; a proxy in front of nothing, 502). The credentials MLflow would send (``MLFLOW_TRACKING_TOKEN``,
    or ``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD``) are sent with it."""
    import base64
    import json
    import ssl
    import urllib.error
    import urllib.request

    request = urllib.request.Request(uri.rstrip("/") + PROBE_PATH, headers={"Accept": "application/json"})
    if os.environ.get("MLFLOW_TRACKING_TOKEN"):
        request.add_header("Authorization", f"Bearer {os.environ['MLFLOW_TRACKING_TOKEN']}")
    elif os.environ.get("MLFLOW_TRACKING_USERNAME"):
        pair = f"{os.environ['MLFLOW_TRACKING_USERNAME']}:{os.environ.get('MLFLOW_TRACKING_PASSWORD', '')}"
        request.add_header("Authorization", "Basic " + base64.b64encode(pair.encode()).decode())
    context = None
    if os.environ.get("MLFLOW_TRACKING_INSECURE_TLS", "").lower() == "true":
        context = ssl._create_unverified_context()  # what MLflow does with the same setting
    elif os.environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH"):
        context = ssl.create_default_context(cafile=os.environ["MLFLOW_TRACKING_SERVER_CERT_PATH"])
    hint = "check the URI, or set MLFLOW_TRACKING_URI (or --tracking-uri) to a running MLflow server"
    try:
        with urllib.request.urlopen(request, timeout=PROBE_SECONDS, context=context) as response:
            answer = json.loads(response.read(1 << 20))
    except urllib.error.HTTPError as exc:
        what = ("refused the credentials" if exc.code in (401, 403) else
                f"is not an MLflow tracking server (HTTP {exc.code} {exc.reason} for {PROBE_PATH.split('?')[0]})")
        raise RegistryError(f"the MLflow tracking server {uri} {what}; {hint}") from None
    except (TimeoutError, socket.timeout):
        raise RegistryError(f"the MLflow tracking server {uri} accepted a connection but did not answer within "
                            f"{PROBE_SECONDS} s; {hint}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:  # reset, TLS, or an answer that is not JSON
        why = getattr(exc, "reason", None) or exc
        raise RegistryError(f"the MLflow tracking server {uri} did not answer as MLflow does ({why}); {hint}") from None
    if not isinstance(answer, dict):
        raise RegistryError(f"the MLflow tracking server {uri} is not an MLflow tracking server (its answer to "
                            f"{PROBE_PATH.split('?')[0]} is not MLflow's); {hint}")


def check_sqlite_store(uri: str, store: Path) -> None:
    """``RegistryError`` naming the store when the file of a ``sqlite:///`` URI exists but is not a sound
    SQLite database (overwritten, truncated, another kind of file): SQLite's own ``quick_check``, before
    MLflow meets the file with a long traceback. A missing file is left to the caller (``client``)."""
    import sqlite3

    if not store.is_file():
        return
    try:
        with contextlib.closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=PROBE_SECONDS)) as db:
            problems = [row[0] for row in db.execute("PRAGMA quick_check").fetchall()]
    except sqlite3.Error as exc:
        problems = [str(exc)]
    if problems != ["ok"]:
        raise RegistryError(f"the tracking store {uri} is not a readable SQLite database ({problems[0]}); "
                            "restore it from a backup, or set MLFLOW_TRACKING_URI (or --tracking-uri) to another")


def precheck_training(argv: list[str]) -> int:
    """Exit status 2, with the message on standard error, when train.py's tracking store (``--tracking-uri``,
    else ``$MLFLOW_TRACKING_URI``) cannot work (``check_tracking_server``); else 0. Run before training's
    imports, which take seconds of their own, and so before any fitting."""
    import argparse

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--tracking-uri")
    known, _ = pre.parse_known_args(argv)
    try:
        check_tracking_server(tracking_uri(known.tracking_uri))
    except RegistryError as exc:
        print(f"train: {exc}", file=sys.stderr)
        return 2
    return 0


def local_store(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` tracking URI, else None."""
    return Path(uri[len("sqlite:///"):]).resolve() if uri.startswith("sqlite:///") else None


def client(uri: str | None = None, create: bool = False):
    """An MLflow client on the tracking store (``tracking_uri``): ``RegistryError`` when a server does not
    answer, or, unless ``create`` (training), when a local SQLite store does not exist: reading it must
    not leave an empty ``mlflow.db`` in whatever folder the command ran from. Checked before mlflow is
    imported (seconds on a busy machine)."""
    uri = tracking_uri(uri)
    check_tracking_server(uri)
    store = local_store(uri)
    if store is not None and not create and not store.is_file():
        raise RegistryError(f"no tracking store at {store} (`python train.py` creates it; or set "
                            "MLFLOW_TRACKING_URI, or --tracking-uri, to the store that holds your runs)")
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri, registry_uri=uri)


def _failure(exc, what: str) -> RegistryError:
    """``RegistryError`` for an MLflow error other than "not found": the store failed, say so and where."""
    return RegistryError(f"{what}: the tracking store {tracking_uri()} failed: {exc.message}")


@contextlib.contextmanager
def store_errors(uri: str | None = None):
    """Any other MLflow error inside as a ``RegistryError`` naming the store (a server that fails mid-way)."""
    from mlflow.exceptions import MlflowException

    try:
        yield
    except MlflowException as exc:
        raise RegistryError(f"the tracking store {tracking_uri(uri)} failed: {exc.message}") from None


# --------------------------------------------------------------------------------------------------
# the gate (pure)


def gate(candidate: dict, champion: dict | None) -> list[str]:
    """Reasons against promoting ``candidate`` over ``champion`` (both: run metrics); [] to promote.

    Capture conformance must be exactly 1.0 (INV-TASK-2). No fixture gate metric the champion has may
    be missing from the candidate or below the champion's; equal is enough (a retrain on more data
    that holds the fixtures is the weekly case). No dev gate metric may fall more than
    ``DEV_TOLERANCE`` below the champion's. Without a champion only capture is checked.
    """
    reasons = []
    capture = candidate.get(CAPTURE_METRIC)
    if capture is None or capture < 1.0:
        reasons.append(f"capture conformance {'missing' if capture is None else f'{capture:.3f}'} < 1.000")
    for name in GATE_METRICS if champion else ():
        if name not in champion:
            continue
        if name not in candidate:
            reasons.append(f"{name} missing (champion {champion[name]:.3f})")
        elif candidate[name] < champion[name]:
            reasons.append(f"{name} {candidate[name]:.3f} < champion {champion[name]:.3f}")
    for name in DEV_GATE_METRICS if champion else ():
        if name in champion and name in candidate and candidate[name] < champion[name] - DEV_TOLERANCE:
            reasons.append(f"{name} {candidate[name]:.3f} < champion {champion[name]:.3f} - {DEV_TOLERANCE}")
    return reasons


# --------------------------------------------------------------------------------------------------
# versions, aliases, promotion


@dataclass
class VersionInfo:
    version: str
    run_id: str
    created: str
    metrics: dict
    aliases: list[str]
    gate: str


def run_metrics(mlflow_client, run_id: str) -> dict:
    return dict(mlflow_client.get_run(run_id).data.metrics)


def champion_version(mlflow_client, name: str):
    """The model version holding the ``champion`` alias, or None."""
    from mlflow.exceptions import MlflowException

    try:
        return mlflow_client.get_model_version_by_alias(name, CHAMPION)
    except MlflowException as exc:
        if exc.error_code in NOT_FOUND:
            return None
        raise _failure(exc, f"the {CHAMPION} of {name!r}") from None


def promote(mlflow_client, name: str, version: str | int, force: bool = False) -> list[str]:
    """Move ``champion`` to ``version`` if the gate passes (or ``force``); return the gate's reasons
    (empty when it passed). ``PromotionRefused`` when it did not and ``force`` is off."""
    from mlflow.exceptions import MlflowException

    version = str(version)
    try:
        candidate = mlflow_client.get_model_version(name, version)
    except MlflowException as exc:
        if exc.error_code not in NOT_FOUND:
            raise _failure(exc, f"version {version} of {name!r}") from None
        raise RegistryError(f"no version {version} of registered model {name!r}") from None
    current = champion_version(mlflow_client, name)
    if current is not None and str(current.version) == version:
        return []
    champion_metrics = run_metrics(mlflow_client, current.run_id) if current is not None else None
    reasons = gate(run_metrics(mlflow_client, candidate.run_id), champion_metrics)
    against = f"against version {current.version}" if current is not None else "first version"
    if reasons and not force:
        mlflow_client.set_model_version_tag(name, version, GATE_TAG, f"refused ({against}): " + "; ".join(reasons))
        raise PromotionRefused(version, reasons)
    mlflow_client.set_registered_model_alias(name, CHAMPION, version)
    decision = f"champion ({against})" + (f", forced over: {'; '.join(reasons)}" if reasons else "")
    mlflow_client.set_model_version_tag(name, version, GATE_TAG, decision)
    return reasons


def register_run(mlflow_client, run_id: str, name: str = DEFAULT_REGISTERED_MODEL,
                 source: str | None = None, sha256: str | None = None) -> tuple[str, list[str]]:
    """Register the run's bundle as a new version and try to make it champion through the gate.
    ``source``: the run's pyfunc model URI (``train.py`` logs one), so that a version also loads with
    ``mlflow.pyfunc`` / ``spark_udf``; the bundle itself is always found through the version's run.
    ``sha256``: the bundle's digest, recorded on the version (``PIN_TAG``) as the pin it loads with.
    Returns (version, the gate's reasons against it; empty when it became champion)."""
    from mlflow.exceptions import MlflowException

    try:
        mlflow_client.get_registered_model(name)
    except MlflowException as exc:
        if exc.error_code not in NOT_FOUND:
            raise _failure(exc, f"registered model {name!r}") from None
        mlflow_client.create_registered_model(
            name, description="fastslow bundles (router + automation parser); `champion` passes the fixture gate")
    mv = mlflow_client.create_model_version(name, source=source or f"runs:/{run_id}/{MODEL_ARTIFACT_DIR}",
                                            run_id=run_id, tags={PIN_TAG: sha256} if sha256 else None)
    version = str(mv.version)
    try:
        return version, promote(mlflow_client, name, version)
    except PromotionRefused as refused:
        return version, refused.reasons


def list_versions(mlflow_client, name: str = DEFAULT_REGISTERED_MODEL) -> list[VersionInfo]:
    """Every version of ``name``, newest first, with its run's metrics and its aliases."""
    from mlflow.exceptions import MlflowException

    try:
        aliases = mlflow_client.get_registered_model(name).aliases or {}
    except MlflowException as exc:
        if exc.error_code not in NOT_FOUND:
            raise _failure(exc, f"registered model {name!r}") from None
        raise RegistryError(f"no registered model {name!r} in {tracking_uri()}; train one with `python train.py`") from None
    out = []
    for mv in mlflow_client.search_model_versions(f"name='{name}'"):
        created = datetime.fromtimestamp(mv.creation_timestamp / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M")
        out.append(VersionInfo(str(mv.version), mv.run_id, created, run_metrics(mlflow_client, mv.run_id),
                               sorted(a for a, v in aliases.items() if str(v) == str(mv.version)),
                               (mv.tags or {}).get(GATE_TAG, "")))
    return sorted(out, key=lambda v: int(v.version), reverse=True)


#: the columns of ``fastslow models``: metric → short heading (fixture, then the blind and calibration sets)
VERSION_COLUMNS = {"fixture_label_accuracy": "label", "fixture_label_macro_f1": "macroF1",
                   "fixture_code_accuracy": "code", "automation_fixture_group_exact": "groups",
                   "automation_fixture_group_exact_no_intent": "no-int", "automation_fixture_condition_exact": "cond",
                   "blind_label_accuracy": "b.label", "blind_label_macro_f1": "b.F1", "blind_ece": "b.ECE",
                   "automation_blind_group_exact": "b.groups",
                   "calibration_label_accuracy": "c.label", "calibration_ece": "c.ECE"}


def versions_table(versions: list[VersionInfo]) -> str:
    """One line a version: its fixture figures (the gate's), its blind-set (b.) and calibration-set (c.)
    figures, capture conformance and aliases."""
    head = f"{'version':>7}  {'run id':<32}  {'created (UTC)':<16}" + "".join(f"{s:>9}" for s in VERSION_COLUMNS.values())
    head += f"{'capture':>9}  alias"
    lines = [head, "-" * (len(head) + 10)]
    for v in versions:
        cells = "".join(f"{v.metrics[m]:>9.3f}" if m in v.metrics else f"{'-':>9}" for m in VERSION_COLUMNS)
        capture = v.metrics.get(CAPTURE_METRIC)
        lines.append(f"{v.version:>7}  {v.run_id:<32}  {v.created:<16}{cells}"
                     f"{('-' if capture is None else f'{capture:.3f}'):>9}  {','.join(v.aliases)}")
    return "\n".join(lines + ["fixture: the frozen spec fixture (the gate); b.: the blind set; c.: the calibration set"])


def get_version(mlflow_client, name: str, version: str) -> VersionInfo:
    """One version of ``name`` as ``list_versions`` gives it; ``RegistryError`` when there is none."""
    for v in list_versions(mlflow_client, name):
        if v.version == str(version):
            return v
    raise RegistryError(f"no version {version} of registered model {name!r}")


#: the metrics ``fastslow models diff`` shows unless asked for all: the sets a promotion is judged on
DIFF_PREFIXES = ("fixture_", "automation_fixture_", "dev_label", "dev_code", "dev_ece", "blind_", "automation_blind_",
                 "calibration_", "capture_", "temperature", "baseline_blind_", "baseline_calibration_")
#: the parameters that say how two versions were trained differently
DIFF_PARAMS = ("C", "seed", "class_weight", "fast_min_probability", "spoken_variants", "review_threshold",
               "train_rows", "train_digest", "extra_files", "only", "crf_c1", "crf_c2", "crf_iterations", "intent_C")


def diff_table(a: VersionInfo, b: VersionInfo, params_a: dict, params_b: dict, every_metric: bool = False) -> str:
    """Two versions side by side: the parameters that differ, then each metric with both values and
    the change (B − A); ``every_metric`` lists all the runs' metrics, else the fixture, dev, blind,
    calibration and capture figures."""
    lines = [f"version {a.version} (run {a.run_id}, {a.created}{', ' + ','.join(a.aliases) if a.aliases else ''})"
             f" → version {b.version} (run {b.run_id}, {b.created}{', ' + ','.join(b.aliases) if b.aliases else ''})",
             ""]
    changed = [p for p in DIFF_PARAMS if params_a.get(p) != params_b.get(p)]
    lines.append("parameters that differ: " + ("none" if not changed else ""))
    lines += [f"  {p:<24} {str(params_a.get(p, '-')):>20} → {str(params_b.get(p, '-'))}" for p in changed]
    names = sorted(set(a.metrics) | set(b.metrics))
    if not every_metric:
        names = [n for n in names if n.startswith(DIFF_PREFIXES) and not n.endswith("_n")]
    width = max([24, *(len(n) + 1 for n in names)])
    lines += ["", f"{'metric':<{width}}{'version ' + a.version:>12}{'version ' + b.version:>12}{'change':>9}",
              "-" * (width + 33)]
    for n in names:
        va, vb = a.metrics.get(n), b.metrics.get(n)
        change = "" if va is None or vb is None else f"{vb - va:+.3f}" if abs(vb - va) >= 0.0005 else "="
        lines.append(f"{n:<{width}}{'-' if va is None else f'{va:.3f}':>12}{'-' if vb is None else f'{vb:.3f}':>12}"
                     f"{change:>9}")
    return "\n".join(lines)


def run_params(mlflow_client, run_id: str) -> dict:
    return dict(mlflow_client.get_run(run_id).data.params)


# --------------------------------------------------------------------------------------------------
# model URIs


def is_model_uri(value: str | Path) -> bool:
    return str(value).startswith(("models:/", "runs:/"))


@dataclass(frozen=True)
class ResolvedModel:
    """A local bundle file, and the SHA-256 the registry pins for it (None for a path, a ``runs:/`` URI
    or a version registered without one)."""

    path: Path
    sha256: str | None = None
    pinned_by: str = ""

    def load(self):
        """The bundle, ``load_bundle``-checked, with the registry's pin."""
        from fastslow.models.lifecycle.bundle import load_bundle

        return load_bundle(self.path, expect_sha256=self.sha256, pinned_by=self.pinned_by)

    def verify(self) -> dict:
        """The bundle's manifest, checked as ``load`` checks it but without unpickling it (``verify_bundle``):
        nothing of scikit-learn, jieba or pandas is imported."""
        from fastslow.models.lifecycle.manifest import verify_bundle

        return verify_bundle(self.path, expect_sha256=self.sha256, pinned_by=self.pinned_by)


def _version_of(uri: str, mlflow_client) -> tuple[str, str | None, str]:
    """(run id, pinned SHA-256, who pins it) behind ``models:/NAME@ALIAS``, ``models:/NAME/VERSION`` or
    ``runs:/RUN_ID[/model]``."""
    from mlflow.exceptions import MlflowException

    if uri.startswith("runs:/"):
        return uri[len("runs:/"):].split("/")[0], None, ""
    ref = uri[len("models:/"):].strip("/")
    try:
        if "@" in ref:
            name, alias = ref.split("@", 1)
            mv = mlflow_client.get_model_version_by_alias(name, alias)
        else:
            name, _, version = ref.rpartition("/")
            if not name or not version.isdigit():
                raise RegistryError(f"{uri}: use models:/NAME@ALIAS or models:/NAME/VERSION")
            mv = mlflow_client.get_model_version(name, version)
    except MlflowException as exc:
        raise RegistryError(f"{uri}: {exc.message} (tracking URI {tracking_uri()})") from None
    return mv.run_id, (mv.tags or {}).get(PIN_TAG), f"the registry ({name} version {mv.version}, tag {PIN_TAG})"


def resolve(uri_or_path: str | Path, cache_dir: str | Path | None = None) -> ResolvedModel:
    """A local bundle file for a path or a model URI (``models:/fastslow@champion``, ``models:/fastslow/3``,
    ``runs:/<run id>/model``), with the registry's pin for a ``models:/`` URI. A URI's bundle and manifest
    are downloaded once per run into the cache (``$FASTSLOW_CACHE``, else ``~/.cache/fastslow``);
    ``load_bundle(r.path, expect_sha256=r.sha256, pinned_by=r.pinned_by)`` then checks it as any file.
    Raises ``RegistryError`` for a URI that does not resolve."""
    if not is_model_uri(uri_or_path):
        return ResolvedModel(Path(uri_or_path).expanduser().resolve())
    mlflow_client = client()  # probes the tracking server before mlflow is imported
    import mlflow

    run_id, pin, pinned_by = _version_of(str(uri_or_path), mlflow_client)
    cache = Path(cache_dir or os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "fastslow") / "runs" / run_id
    bundle = cache / MODEL_ARTIFACT_DIR / BUNDLE_FILE
    if not bundle.is_file():
        cache.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{run_id}-", dir=cache.parent))
        try:
            mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=MODEL_ARTIFACT_DIR,
                                                dst_path=str(staging), tracking_uri=tracking_uri())
        except Exception as exc:  # noqa: BLE001 - any store error: say which run and why
            shutil.rmtree(staging, ignore_errors=True)
            raise RegistryError(f"{uri_or_path}: cannot download run {run_id}'s {MODEL_ARTIFACT_DIR}/ "
                                f"artifacts: {exc}") from None
        try:
            staging.rename(cache)  # atomic: concurrent workers see a whole download or none
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)  # another process got there first
    if not bundle.is_file():
        raise RegistryError(f"{uri_or_path}: run {run_id} has no {MODEL_ARTIFACT_DIR}/{BUNDLE_FILE}")
    return ResolvedModel(bundle, pin, pinned_by if pin else "")


def resolve_model(uri_or_path: str | Path, cache_dir: str | Path | None = None) -> Path:
    """The local bundle file of ``resolve`` (without the registry's pin: a signature must then vouch for it)."""
    return resolve(uri_or_path, cache_dir).path
