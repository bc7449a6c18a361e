"""The saved model: a ``FastslowModel`` written with joblib beside a manifest.

A pickle runs code when it is loaded, so ``load_bundle`` checks the file's SHA-256 against the
manifest written at training time before it unpickles anything.
"""

from __future__ import annotations

import json
from pathlib import Path

import joblib

from fastslow.models.lifecycle.manifest import (DEFAULT_MODEL_PATH, ModelLoadError, library_versions, manifest_path,
                                                sha256_of, verify_bundle)
from fastslow.models.pipeline import FastslowModel

__all__ = ["DEFAULT_MODEL_PATH", "FastslowModel", "ModelLoadError", "load_bundle", "save_bundle"]


def save_bundle(model: FastslowModel, path: Path, extra: dict | None = None) -> dict:
    """Write the joblib file and its manifest (SHA-256, library versions, metrics, ...)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, path, compress=3)
    manifest = {
        "model_version": model.version,
        "file": path.name,
        "sha256": sha256_of(path),
        "libraries": library_versions(),
        **model.info,
        **(extra or {}),
    }
    manifest_path(path).write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return manifest


def load_bundle(path: Path | str = DEFAULT_MODEL_PATH, check_versions: bool = True) -> FastslowModel:
    """Load a bundle after checking its SHA-256 (and library versions) against its manifest."""
    path = Path(path)
    manifest = verify_bundle(path, check_versions)
    actual = manifest["sha256"]
    model = joblib.load(path)
    if not isinstance(model, FastslowModel):
        raise ModelLoadError(f"{path} does not hold a fastslow model")
    model.info = {**model.info, "sha256": actual, "manifest": manifest}
    return model
