"""The bundle as an MLflow ``python_function`` model, so Spark scores logs beyond one machine:

    udf = mlflow.pyfunc.spark_udf(spark, model_uri, result_type="string")
    records = queries.withColumn("record", udf(struct("query", "id", "context", "endpoint", "existing_tasks")))

Each row's result is the record as one JSON string: the line ``fastslow score`` writes for it (a row
that cannot be scored gets its error record, without the ``line`` that only a file has). The input columns
are the record schema's input fields (``models.record.RouteInput``), all strings: ``query``, ``id``,
``endpoint`` as text, the nested ``context`` and ``existing_tasks`` as JSON text (or lists in pandas);
only ``query`` is required.

The logged model holds the joblib bundle and its manifest as artifacts (``load_context`` checks them as
``load_bundle`` does, pinned to the SHA-256 logged with them), fastslow's own code (the ``fastslow`` package with its
taxonomy and lexicons, as ``code_paths``) and pinned requirements, so executors need no fastslow install.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from importlib.resources import files
from pathlib import Path

import mlflow.pyfunc
import pandas as pd
from mlflow.models import ModelSignature
from mlflow.types.schema import ColSpec, Schema

from fastslow.models.lifecycle.bundle import load_bundle
from fastslow.models.lifecycle.manifest import TRACKED_LIBRARIES, manifest_path, sha256_of
from fastslow.models.record import INPUT_FIELDS, RouteInput

INPUT_COLUMNS = INPUT_FIELDS
SIGNATURE = ModelSignature(
    inputs=Schema([ColSpec("string", name, required=field.is_required())
                   for name, field in RouteInput.model_fields.items()]),
    outputs=Schema([ColSpec("string", "record")]),
)
CODE_PACKAGES = ("features", "models", "serve")
#: the bundle's SHA-256, recorded in the logged model's metadata and model_config: the pin load_context uses
BUNDLE_PIN = "bundle_sha256"
#: the part of ``fastslow.data`` that runs: its readers and writers, and the taxonomy read at import
RUNTIME_DATA = ("__init__.py", "io.py", "sinks.py", "taxonomy")


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


class FastslowPyfunc(mlflow.pyfunc.PythonModel):
    """Queries in (a DataFrame with ``query`` and optional ``id``, ``context`` and ``existing_tasks`` as
    JSON strings or lists, ``endpoint``), one JSON record per row out, in order."""

    def load_context(self, context) -> None:
        pin = (context.model_config or {}).get(BUNDLE_PIN)
        self.model = load_bundle(context.artifacts["bundle"], expect_sha256=pin,
                                 pinned_by=f"the pyfunc model ({BUNDLE_PIN}, recorded when it was logged)").warm_up()

    def predict(self, context, model_input: pd.DataFrame, params=None) -> pd.DataFrame:
        from fastslow.data.io import parse_json_cells
        from fastslow.models.scoring import score_chunk
        from fastslow.data.sinks import dumps

        rows = []
        for raw in model_input.to_dict("records"):
            item = {k: (None if _missing(v) else v) for k, v in raw.items() if k in INPUT_COLUMNS}
            error = parse_json_cells(item)
            rows.append((None, None, error) if error else (None, item, None))
        return pd.DataFrame({"record": [dumps(r) for r in score_chunk(self.model, rows)]})


def pip_requirements() -> list[str]:
    from importlib import metadata

    return [f"{name}=={metadata.version(name)}"
            for name in (*TRACKED_LIBRARIES, "mlflow", "pyarrow", "pydantic", "cryptography")]  # cryptography: signing


def _stage_code(folder: Path) -> list[str]:
    """A copy of the ``fastslow`` package as it runs: its code and the runtime data it reads (taxonomy,
    lexicons), without the bundled corpus, trained artifacts or caches."""
    source = Path(str(files("fastslow")))
    target = folder / "fastslow"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "artifacts")
    target.mkdir()
    shutil.copy2(source / "__init__.py", target / "__init__.py")
    for package in CODE_PACKAGES:
        shutil.copytree(source / package, target / package, ignore=ignore)
    (target / "data").mkdir()
    for name in RUNTIME_DATA:
        copy = shutil.copytree if (source / "data" / name).is_dir() else shutil.copy2
        copy(source / "data" / name, target / "data" / name)
    return [str(target)]


def _model_args(bundle_path: Path, folder: Path) -> dict:
    bundle_path = Path(bundle_path)
    digest = sha256_of(bundle_path)
    return {"python_model": FastslowPyfunc(), "signature": SIGNATURE, "pip_requirements": pip_requirements(),
            "artifacts": {"bundle": str(bundle_path), "manifest": str(manifest_path(bundle_path))},
            "code_paths": _stage_code(folder),
            "metadata": {"model_version": json.loads(manifest_path(bundle_path).read_text())["model_version"],
                         BUNDLE_PIN: digest},
            "model_config": {BUNDLE_PIN: digest}}


def save_pyfunc_model(bundle_path: Path, path: Path) -> Path:
    """Write the pyfunc model of ``bundle_path`` to the folder ``path`` (a local model URI)."""
    with tempfile.TemporaryDirectory() as tmp:
        mlflow.pyfunc.save_model(str(path), **_model_args(bundle_path, Path(tmp)))
    return Path(path)


def log_pyfunc_model(bundle_path: Path, name: str = "pyfunc") -> str:
    """Log the pyfunc model of ``bundle_path`` to the active MLflow run; its model URI."""
    with tempfile.TemporaryDirectory() as tmp:
        info = mlflow.pyfunc.log_model(name=name, **_model_args(bundle_path, Path(tmp)))
    return info.model_uri
