"""The model file's manifest (SHA-256, library versions, metrics), checked before anything is unpickled.

Kept apart from ``fastslow.models.pipeline`` so that a process that only checks a bundle (the main process of
``fastslow score --jobs N``, which hands scoring to workers) imports no scikit-learn, jieba or pandas.
"""

from __future__ import annotations

import hashlib
import json
import platform
from importlib import metadata
from pathlib import Path


#: Where `python train.py` writes the model, relative to the folder it runs in (the repository root).
DEFAULT_MODEL_PATH = Path("models") / "artifacts" / "fastslow.joblib"
TRACKED_LIBRARIES = ("scikit-learn", "jieba", "numpy", "scipy", "joblib", "pandas", "python-crfsuite", "rjieba",
                     "pyahocorasick")


class ModelLoadError(RuntimeError):
    """The model file cannot be trusted or used; the message says why."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def library_versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in TRACKED_LIBRARIES:
        versions[name] = metadata.version(name)
    return versions


def manifest_path(model_path: Path) -> Path:
    return model_path.with_suffix(".manifest.json")


def verify_bundle(path: Path | str = DEFAULT_MODEL_PATH, check_versions: bool = True) -> dict:
    """The manifest of a bundle whose file matches its SHA-256 (and whose scikit-learn and jieba
    versions are the installed ones), without unpickling it; ``ModelLoadError`` saying why not."""
    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"model file not found: {path} (train one with `fastslow train`)")
    mpath = manifest_path(path)
    if not mpath.is_file():
        raise ModelLoadError(f"refusing to load {path}: manifest {mpath.name} is missing")
    manifest = json.loads(mpath.read_text(encoding="utf-8"))
    actual = sha256_of(path)
    if actual != manifest.get("sha256"):
        raise ModelLoadError(f"refusing to load {path}: SHA-256 {actual[:12]}… does not match the manifest "
                             f"({str(manifest.get('sha256'))[:12]}…); the file was changed after training")
    if check_versions:
        current = library_versions()
        wrong = {name: (v, current.get(name)) for name, v in manifest.get("libraries", {}).items()
                 if name in ("scikit-learn", "jieba") and current.get(name) != v}
        if wrong:
            detail = ", ".join(f"{n} trained with {a}, installed {b}" for n, (a, b) in wrong.items())
            raise ModelLoadError(f"refusing to load {path}: library version mismatch ({detail})")
    return manifest
