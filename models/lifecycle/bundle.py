"""The saved model: a ``FastslowModel`` written with joblib beside a manifest.

A pickle runs code when it is loaded, so ``load_bundle`` reads the file once, checks those bytes'
SHA-256 against the manifest written at training time and that a signature or a pin vouches for it
(``signing``), and only then unpickles them.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import joblib

from fastslow.models.lifecycle import signing
from fastslow.models.lifecycle.manifest import (DEFAULT_MODEL_PATH, FORMAT_VERSION, ModelLoadError, library_versions,
                                                manifest_path, read_manifest, sha256_of, verify_bundle)
from fastslow.models.pipeline import FastslowModel

__all__ = ["DEFAULT_MODEL_PATH", "FastslowModel", "ModelLoadError", "load_bundle", "save_bundle", "sign_bundle", "warmed"]


#: the keys ``load_bundle`` adds to a model's ``info``: the SHA-256 and the manifest of the file it was loaded from
LOADED_INFO = ("sha256", "manifest")


def save_bundle(model: FastslowModel, path: Path, extra: dict | None = None,
                key: signing.SigningKey | None = None) -> dict:
    """Write the joblib file and its manifest (model format, SHA-256, library versions, metrics, ...), signed
    with ``key``, else with the configured key if there is one (``signing.configured_key``), else unsigned."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, path, compress=3)
    # what load_bundle added to a loaded model's info describes the file it came from, not this one
    info = {k: v for k, v in model.info.items() if k not in LOADED_INFO}
    manifest = {
        "model_version": model.version,
        "format_version": FORMAT_VERSION,
        "file": path.name,
        "sha256": sha256_of(path),
        "libraries": library_versions(),
        **info,
        **(extra or {}),
    }
    key = key or signing.configured_key()
    if key is not None:
        manifest[signing.SIGNATURE_FIELD] = signing.sign(manifest, key)
    _write_manifest(path, manifest)
    return manifest


def sign_bundle(path: Path | str, key: signing.SigningKey, expect_sha256: str | None = None) -> dict:
    """Sign the manifest of the bundle at ``path`` with ``key`` again (a bundle of an older fastslow, signed
    with HMAC; one signed with a retired key pair), without unpickling it: whoever runs this vouches for the
    file, so the file must match its manifest's SHA-256, and ``expect_sha256`` when it is given."""
    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"model file not found: {path}")
    manifest = read_manifest(path)
    actual = sha256_of(path)
    if actual != manifest.get("sha256"):
        raise ModelLoadError(f"refusing to sign {path}: SHA-256 {actual[:12]}… does not match the manifest "
                             f"({str(manifest.get('sha256'))[:12]}…); the file was changed after training")
    if expect_sha256 and actual != signing.normalise_sha256(expect_sha256, "--expect-sha256"):
        raise ModelLoadError(f"refusing to sign {path}: its SHA-256 {actual[:12]}… is not the "
                             f"{expect_sha256.strip().lower()[:12]}… pinned by --expect-sha256")
    manifest[signing.SIGNATURE_FIELD] = signing.sign(manifest, key)
    _write_manifest(path, manifest)
    return manifest


def _write_manifest(path: Path, manifest: dict) -> None:
    manifest_path(path).write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def load_bundle(path: Path | str = DEFAULT_MODEL_PATH, check_versions: bool = True, *,
                expect_sha256: str | None = None, pinned_by: str = "the caller") -> FastslowModel:
    """Load a bundle after checking its model format (a bundle of another ``FORMAT_VERSION`` is refused: retrain
    it), its SHA-256 against its manifest, that a signature or a pin vouches for it (the environment's policy,
    plus ``expect_sha256`` pinned by ``pinned_by``), and library versions."""
    path = Path(path)
    data = path.read_bytes() if path.is_file() else None  # read once: the bytes checked are the bytes unpickled
    manifest = verify_bundle(path, check_versions, expect_sha256=expect_sha256, pinned_by=pinned_by, data=data)
    actual = manifest["sha256"]
    try:
        model = joblib.load(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - an unpickling error says little on its own
        raise ModelLoadError(f"cannot load {path}: {type(exc).__name__}: {exc} (a damaged file, or one written by "
                             "another version of fastslow? retrain it with this one)") from None
    if not isinstance(model, FastslowModel):
        raise ModelLoadError(f"{path} does not hold a fastslow model")
    model.info = {**model.info, "sha256": actual, "manifest": manifest}  # LOADED_INFO
    return model


def warmed(model: FastslowModel, path: Path | str) -> FastslowModel:
    """``model`` warmed up (jieba's dictionary, first-call costs) now rather than on its first row; a
    model that loads but cannot score is a ``ModelLoadError``."""
    try:
        return model.warm_up()
    except Exception as exc:  # noqa: BLE001
        raise ModelLoadError(f"{path} loaded but cannot score: {type(exc).__name__}: {exc} (written by another "
                             "version of fastslow? retrain it with this one)") from exc
