"""Shared fixtures. ``trained`` trains the real model once per session on the bundled data, logging to a
throw-away SQLite MLflow store, exactly as `python train.py` does."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    import train

    folder = tmp_path_factory.mktemp("trained")
    args = train.build_parser().parse_args([
        "--output", str(folder / "fastslow.joblib"),
        "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}",
        "--experiment", "fastslow-tests",
    ])
    result = train.run(args)
    result["path"] = folder / "fastslow.joblib"
    result["tracking_uri"] = f"sqlite:///{folder / 'mlflow.db'}"
    return result


@pytest.fixture(scope="session")
def model(trained):
    return trained["model"]
