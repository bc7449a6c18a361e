"""The model file's manifest (SHA-256, library versions, metrics, signature), checked before anything is
unpickled: the file must match the manifest's SHA-256, and a signature or a pin must vouch for it
(``fastslow.models.lifecycle.signing``).

Kept apart from ``fastslow.models.pipeline`` so that a process that only checks a bundle (the main process of
``fastslow score --jobs N``, which hands scoring to workers) imports no scikit-learn, jieba or pandas.
"""

from __future__ import annotations

import hashlib
import json
import platform
from importlib import metadata
from pathlib import Path

from fastslow.models.lifecycle import signing

#: Where `python train.py` writes the model, relative to the folder it runs in (the repository root).
DEFAULT_MODEL_PATH = Path("models") / "artifacts" / "fastslow.joblib"
#: The environment variable naming the model when no --model is given (`fastslow score`, `fastslow serve`).
MODEL_ENV = "FASTSLOW_MODEL"
#: The format of the pickled model: raised whenever the state of a class inside the bundle changes (a field
#: added, renamed or read differently), so that a bundle written before is refused with a message to retrain,
#: never loaded and patched. 2: the automation tagger keeps its CRF as ``crf_`` (a ``CRFModel``). 3: the router's
#: character n-grams and the intent classifier keep ``grams_`` (a ``CharGramColumns``). 4: the splitter's
#: ``SplitLexicon`` keeps its sequence ``connectors`` and its ``pauses`` apart. 5: the router's character n-grams
#: read digits as said (``digits_as_said``). 6: the router keeps ``named_devices_``, every device devices.txt
#: names, for the aggregation's device controls. 7: ``named_devices_`` is a ``Matcher``, read in the text. 8: the
#: feature of where an automation runs keeps ``alarm_cols_``, the alarm triggers that say nothing of where.
FORMAT_VERSION = 8
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


def read_manifest(model_path: Path) -> dict:
    """The manifest beside ``model_path`` as a dict; ``ModelLoadError`` when it is not UTF-8, not JSON or
    not a JSON object."""
    mpath = manifest_path(model_path)
    refused = f"refusing to load {model_path}: manifest {mpath.name}"
    try:
        manifest = json.loads(mpath.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ModelLoadError(f"{refused} cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ModelLoadError(f"{refused} is not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ModelLoadError(f"{refused} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(manifest, dict):
        raise ModelLoadError(f"{refused} must hold a JSON object, not {type(manifest).__name__}")
    return manifest


def verify_bundle(path: Path | str = DEFAULT_MODEL_PATH, check_versions: bool = True, *,
                  expect_sha256: str | None = None, pinned_by: str = "the caller", data: bytes | None = None) -> dict:
    """The manifest of a bundle of this fastslow's model format (``FORMAT_VERSION``) whose file matches its
    SHA-256, which a signature or a pin vouches for
    (``signing.Policy``: the environment's, plus ``expect_sha256`` pinned by ``pinned_by``), and whose
    scikit-learn and jieba versions are the installed ones, without unpickling it; ``ModelLoadError``
    saying why not. ``data``: the file's bytes, when the caller has read them (and unpickles exactly these)."""
    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"model file not found: {path} (train one with `fastslow train`)")
    mpath = manifest_path(path)
    if not mpath.is_file():
        raise ModelLoadError(f"refusing to load {path}: manifest {mpath.name} is missing")
    manifest = read_manifest(path)
    if not isinstance(manifest.get("sha256"), str):
        raise ModelLoadError(f"refusing to load {path}: manifest {mpath.name} has no sha256 (the file's SHA-256 "
                             "as text): it is not a fastslow manifest, or it was damaged")
    found = manifest.get("format_version")
    if found != FORMAT_VERSION or isinstance(found, bool):
        raise ModelLoadError(f"refusing to load {path}: it is model format {found if found is not None else 'none'} "
                             f"({mpath.name}), this fastslow reads format {FORMAT_VERSION}; retrain it with "
                             "`python train.py`")
    actual = sha256_of(path) if data is None else hashlib.sha256(data).hexdigest()
    if actual != manifest.get("sha256"):
        raise ModelLoadError(f"refusing to load {path}: SHA-256 {actual[:12]}… does not match the manifest "
                             f"({str(manifest.get('sha256'))[:12]}…); the file was changed after training")
    try:
        refusal = signing.Policy.from_env(expect_sha256, pinned_by).refusal(manifest, actual)
    except signing.SigningKeyError as exc:
        raise ModelLoadError(f"refusing to load {path}: {exc}") from None
    if refusal:
        raise ModelLoadError(f"refusing to load {path}: {refusal}")
    if check_versions:
        current = library_versions()
        libraries = manifest.get("libraries", {})
        if not isinstance(libraries, dict):
            raise ModelLoadError(f"refusing to load {path}: the manifest's libraries must be an object")
        wrong = {name: (v, current.get(name)) for name, v in libraries.items()
                 if name in ("scikit-learn", "jieba") and current.get(name) != v}
        if wrong:
            detail = ", ".join(f"{n} trained with {a}, installed {b}" for n, (a, b) in wrong.items())
            raise ModelLoadError(f"refusing to load {path}: library version mismatch ({detail})")
    return manifest
