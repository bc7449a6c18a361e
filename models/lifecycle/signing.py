"""Who vouches for a model file before it is unpickled: an HMAC signature, or a pinned SHA-256.

A pickle runs code when it is loaded, and the manifest beside it only catches accidents: whoever can
rewrite the file can rewrite the manifest's digest too. So a bundle is unpickled only when something
its writer cannot also forge vouches for its SHA-256:

- a **signature**: HMAC-SHA256, with a secret key, over the manifest (which holds the file's SHA-256).
  ``train.py`` signs with the configured key; the loader checks with its own configured key. The key is
  ``$FASTSLOW_SIGNING_KEY`` (the key itself), else the file ``--signing-key-file`` /
  ``$FASTSLOW_SIGNING_KEY_FILE``, else the local key file (``~/.config/fastslow/signing.key``, or under
  ``$XDG_CONFIG_HOME``), which ``train.py`` creates (mode 0600) when no key is configured;
- a **pin**: the SHA-256 the MLflow registry recorded on the model version at training (a
  ``models:/`` URI), the one a pyfunc model recorded when it was logged, or ``--expect-sha256 HEX`` /
  ``$FASTSLOW_EXPECT_SHA256``. Every pin given must match; a pin that matches vouches on its own;
- or nobody: ``--trust-unsigned`` / ``$FASTSLOW_TRUST_UNSIGNED=1`` loads a model without a signature
  that verifies (a pin that is given is still enforced).

A format that cannot run code (skops) was the alternative; it cannot hold the bundle without trusting
fastslow's own classes and the CRF tagger's serialised state, so the bundle stays a joblib pickle.

The settings travel in the environment, so that worker processes (``fastslow score --jobs``,
``fastslow serve --workers``) apply the same policy as the process that started them. No scikit-learn
here: the main process of ``fastslow score`` checks a bundle without importing it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

KEY_ENV = "FASTSLOW_SIGNING_KEY"
KEY_FILE_ENV = "FASTSLOW_SIGNING_KEY_FILE"
EXPECT_ENV = "FASTSLOW_EXPECT_SHA256"
TRUST_UNSIGNED_ENV = "FASTSLOW_TRUST_UNSIGNED"
#: who set ``$FASTSLOW_EXPECT_SHA256`` when ``export`` did (the registry), for the refusal's message
EXPECT_FROM_ENV = "FASTSLOW_EXPECT_SHA256_FROM"
ALGORITHM = "hmac-sha256"
#: the manifest's field that holds the signature (everything else in the manifest is signed)
SIGNATURE_FIELD = "signature"
MIN_KEY_BYTES = 16

log = logging.getLogger("fastslow.signing")

HOW_TO_VOUCH = (
    "Load it (1) signed: with the key it was trained with, in $FASTSLOW_SIGNING_KEY, $FASTSLOW_SIGNING_KEY_FILE "
    "or --signing-key-file (train.py signs with ~/.config/fastslow/signing.key unless one is set); "
    "(2) pinned: as models:/NAME/VERSION from the MLflow registry, or with --expect-sha256 HEX "
    "($FASTSLOW_EXPECT_SHA256) holding a digest from a source you trust; or (3) if you trust where the file "
    "came from, with --trust-unsigned ($FASTSLOW_TRUST_UNSIGNED=1)")


class SigningKeyError(ValueError):
    """A configured signing key that cannot be used (missing file, too short); the message says which."""


@dataclass(frozen=True)
class SigningKey:
    secret: bytes
    source: str  # where it came from, for messages: "$FASTSLOW_SIGNING_KEY" or "key file PATH"

    @property
    def key_id(self) -> str:
        """A short public name of the key (not the key): tells which key signed a manifest."""
        return hashlib.sha256(b"fastslow-signing-key-id:" + self.secret).hexdigest()[:16]


def default_key_file() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "fastslow" / "signing.key"


def _key_from_file(path: Path) -> SigningKey:
    try:
        secret = path.read_bytes().strip()
    except OSError as exc:
        raise SigningKeyError(f"cannot read signing key file {path}: {exc.strerror}") from None
    if len(secret) < MIN_KEY_BYTES:
        raise SigningKeyError(f"signing key file {path} holds {len(secret)} bytes; a key needs at least {MIN_KEY_BYTES}")
    return SigningKey(secret, f"key file {path}")


def configured_key(key_file: str | Path | None = None) -> SigningKey | None:
    """The signing key: ``key_file`` if given, else ``$FASTSLOW_SIGNING_KEY``, else the file
    ``$FASTSLOW_SIGNING_KEY_FILE``, else the local key file if it exists; None when there is none.
    ``SigningKeyError`` for a key that is configured but cannot be used."""
    if key_file:
        return _key_from_file(Path(key_file).expanduser())
    if os.environ.get(KEY_ENV):
        secret = os.environ[KEY_ENV].strip().encode("utf-8")
        if len(secret) < MIN_KEY_BYTES:
            raise SigningKeyError(f"${KEY_ENV} holds {len(secret)} bytes; a key needs at least {MIN_KEY_BYTES}")
        return SigningKey(secret, f"${KEY_ENV}")
    if os.environ.get(KEY_FILE_ENV):
        return _key_from_file(Path(os.environ[KEY_FILE_ENV]).expanduser())
    local = default_key_file()
    return _key_from_file(local) if local.is_file() else None


def ensure_key(key_file: str | Path | None = None) -> tuple[SigningKey, Path | None]:
    """The configured key (as ``configured_key``), creating a new random one (mode 0600) when the key file
    it names does not exist: ``key_file``, else ``$FASTSLOW_SIGNING_KEY_FILE``, else the local key file.
    Returns the key and the path of the file it created (None when it created none)."""
    if not key_file and os.environ.get(KEY_ENV):
        return configured_key(), None
    path = Path(key_file or os.environ.get(KEY_FILE_ENV) or default_key_file()).expanduser()
    if path.exists():
        return _key_from_file(path), None
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another training run created it first: use that one
        return _key_from_file(path), None
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(secrets.token_hex(32) + "\n")
    return _key_from_file(path), path


def signed_payload(manifest: dict) -> bytes:
    """The bytes a signature covers: the manifest without its signature, as canonical JSON."""
    content = {k: v for k, v in manifest.items() if k != SIGNATURE_FIELD}
    return json.dumps(content, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def sign(manifest: dict, key: SigningKey) -> dict:
    """The manifest's signature field (the manifest must already hold the file's SHA-256)."""
    value = hmac.new(key.secret, signed_payload(manifest), hashlib.sha256).hexdigest()
    return {"algorithm": ALGORITHM, "key_id": key.key_id, "value": value}


def signature_verifies(manifest: dict, key: SigningKey) -> bool:
    signature = manifest.get(SIGNATURE_FIELD)
    if not isinstance(signature, dict) or signature.get("algorithm") != ALGORITHM:
        return False
    expected = hmac.new(key.secret, signed_payload(manifest), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, str(signature.get("value", "")))


def normalise_sha256(value: str, where: str) -> str:
    digest = value.strip().lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise SigningKeyError(f"{where}: {value!r} is not a SHA-256 (64 hexadecimal digits)")
    return digest


@dataclass(frozen=True)
class Policy:
    """What a loader accepts: ``pins`` ((sha256, where it comes from), ...), a key, or ``trust_unsigned``."""

    pins: tuple[tuple[str, str], ...] = ()
    key: SigningKey | None = None
    trust_unsigned: bool = False

    @classmethod
    def from_env(cls, expect_sha256: str | None = None, pinned_by: str = "the caller") -> "Policy":
        """The process's policy (the environment), plus ``expect_sha256`` pinned by ``pinned_by``.
        ``SigningKeyError`` for a configured key or pin that cannot be used."""
        pins = []
        if os.environ.get(EXPECT_ENV):
            pins.append((normalise_sha256(os.environ[EXPECT_ENV], f"${EXPECT_ENV}"),
                         os.environ.get(EXPECT_FROM_ENV) or f"--expect-sha256 / ${EXPECT_ENV}"))
        if expect_sha256:
            pins.append((normalise_sha256(expect_sha256, pinned_by), pinned_by))
        trust_unsigned = os.environ.get(TRUST_UNSIGNED_ENV, "").strip().lower() in ("1", "true", "yes")
        return cls(tuple(pins), None if pins else configured_key(), trust_unsigned)  # a pin needs no key

    def refusal(self, manifest: dict, actual: str) -> str | None:
        """None when ``actual`` (the file's SHA-256, equal to the manifest's) may be unpickled; else why not.
        A pin that does not match always refuses; ``trust_unsigned`` admits the rest, with a warning."""
        for pin, source in self.pins:
            if actual != pin:
                return f"its SHA-256 {actual[:12]}… is not the {pin[:12]}… pinned by {source}"
        why = None if self.pins else self._unsigned(manifest)
        if why and self.trust_unsigned:
            log.warning("loading a model nothing vouches for (sha256 %s…; %s): trusted by --trust-unsigned / $%s",
                        actual[:12], why, TRUST_UNSIGNED_ENV)
            return None
        return why

    def _unsigned(self, manifest: dict) -> str | None:
        signature = manifest.get(SIGNATURE_FIELD)
        signed_by = signature.get("key_id") if isinstance(signature, dict) else None
        if signature and self.key is not None:
            if signature_verifies(manifest, self.key):
                return None
            return (f"its signature does not verify with the signing key from {self.key.source} (key id "
                    f"{self.key.key_id}; the manifest names key id {signed_by}): the file or its manifest was "
                    f"changed after signing, or it was signed with another key. {HOW_TO_VOUCH}")
        why = (f"it is signed (key id {signed_by}) but no signing key is configured here" if signature
               else "its manifest has no signature")
        return (f"nothing vouches for its SHA-256: {why}, and the manifest's digest only catches accidents "
                f"(whoever can rewrite the file can rewrite the manifest). {HOW_TO_VOUCH}")


def export(*, key_file: str | Path | None = None, expect_sha256: str | None = None, trust_unsigned: bool = False,
           pinned_by: str = "--expect-sha256") -> None:
    """Put command-line settings into this process's environment, where its worker processes read them.
    A second, different pin is refused (``SigningKeyError``): a file cannot match both."""
    if key_file:
        _key_from_file(Path(key_file).expanduser())  # a wrong path fails here, before any worker starts
        os.environ.pop(KEY_ENV, None)
        os.environ[KEY_FILE_ENV] = str(Path(key_file).expanduser().resolve())
    if expect_sha256:
        digest = normalise_sha256(expect_sha256, pinned_by)
        current = os.environ.get(EXPECT_ENV)
        if current and normalise_sha256(current, f"${EXPECT_ENV}") != digest:
            raise SigningKeyError(f"{pinned_by} pins {digest[:12]}… but "
                                  f"{os.environ.get(EXPECT_FROM_ENV) or '--expect-sha256 / $' + EXPECT_ENV} pins "
                                  f"{current[:12]}…: no file matches both")
        if not current:
            os.environ[EXPECT_ENV], os.environ[EXPECT_FROM_ENV] = digest, pinned_by
    if trust_unsigned:
        os.environ[TRUST_UNSIGNED_ENV] = "1"


@contextmanager
def scoped_env():
    """Restore the signing settings of the environment on exit: ``export`` is for one command's workers,
    not for whatever the same process runs next (a test, a notebook calling ``cli.main``)."""
    names = (KEY_ENV, KEY_FILE_ENV, EXPECT_ENV, EXPECT_FROM_ENV, TRUST_UNSIGNED_ENV)
    saved = {name: os.environ.get(name) for name in names}
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
