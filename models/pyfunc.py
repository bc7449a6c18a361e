"""The bundle as an MLflow ``python_function`` model, so Spark scores logs beyond one machine:

    udf = mlflow.pyfunc.spark_udf(spark, model_uri, result_type="string")
    records = queries.withColumn("record", udf(struct("query", "id", "context", "endpoint")))

Each row's result is the record as one JSON string: the line ``fastslow score`` writes for it (a row
that cannot be scored gets its error record, without the ``line`` that only a file has).

The logged model holds the joblib bundle and its manifest as artifacts (``load_context`` checks the
SHA-256 as ``load_bundle`` does), fastslow's own code (``features``, ``models``, ``serve`` and the
taxonomy files, as ``code_paths``) and pinned requirements, so executors need no fastslow install.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from pathlib import Path

import mlflow.pyfunc
import pandas as pd
from mlflow.models import ModelSignature
from mlflow.types.schema import ColSpec, Schema

from models.bundle import load_bundle
from models.manifest import TRACKED_LIBRARIES, manifest_path
from models.taxonomy import ROOT

INPUT_COLUMNS = ("query", "id", "context", "endpoint")
SIGNATURE = ModelSignature(
    inputs=Schema([ColSpec("string", "query"), ColSpec("string", "id", required=False),
                   ColSpec("string", "context", required=False), ColSpec("string", "endpoint", required=False)]),
    outputs=Schema([ColSpec("string", "record")]),
)
CODE_PACKAGES = ("features", "models", "serve")
RUNTIME_DATA = ("data/taxonomy",)  # read by models.taxonomy and models.intents at import


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


class FastslowPyfunc(mlflow.pyfunc.PythonModel):
    """Queries in (a DataFrame with ``query`` and optional ``id``, ``context`` as a JSON string or a
    list, ``endpoint``), one JSON record per row out, in order."""

    def load_context(self, context) -> None:
        self.model = load_bundle(context.artifacts["bundle"]).warm_up()

    def predict(self, context, model_input: pd.DataFrame, params=None) -> pd.DataFrame:
        from serve.io import parse_json_cells
        from serve.scoring import score_chunk
        from serve.sinks import dumps

        rows = []
        for raw in model_input.to_dict("records"):
            item = {k: (None if _missing(v) else v) for k, v in raw.items() if k in INPUT_COLUMNS}
            error = parse_json_cells(item)
            rows.append((None, None, error) if error else (None, item, None))
        return pd.DataFrame({"record": [dumps(r) for r in score_chunk(self.model, rows)]})


def pip_requirements() -> list[str]:
    from importlib import metadata

    return [f"{name}=={metadata.version(name)}" for name in (*TRACKED_LIBRARIES, "mlflow", "pyarrow")]


def _stage_code(folder: Path) -> list[str]:
    """Copies of fastslow's packages and runtime data files (no trained artifacts, no caches)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "artifacts")
    paths = []
    for package in CODE_PACKAGES:
        shutil.copytree(ROOT / package, folder / package, ignore=ignore)
        paths.append(str(folder / package))
    for data in RUNTIME_DATA:
        shutil.copytree(ROOT / data, folder / data)
    paths.append(str(folder / "data"))
    return paths


def _model_args(bundle_path: Path, folder: Path) -> dict:
    bundle_path = Path(bundle_path)
    return {"python_model": FastslowPyfunc(), "signature": SIGNATURE, "pip_requirements": pip_requirements(),
            "artifacts": {"bundle": str(bundle_path), "manifest": str(manifest_path(bundle_path))},
            "code_paths": _stage_code(folder),
            "metadata": {"model_version": json.loads(manifest_path(bundle_path).read_text())["model_version"]}}


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
