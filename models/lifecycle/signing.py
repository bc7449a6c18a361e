"""Who vouches for a model file before it is unpickled: an Ed25519 signature, or a pinned SHA-256.

A pickle runs code when it is loaded, and the manifest beside it only catches accidents: whoever can
rewrite the file can rewrite the manifest's digest too. So a bundle is unpickled only when something
its writer cannot also forge vouches for its SHA-256:

- a **signature**: Ed25519 over the manifest (which holds the file's SHA-256). Training signs with the
  **private key**; loaders (``fastslow score``, ``eval``, ``serve``, the pyfunc model) check with the
  **public key** only, so whoever can check a model cannot sign one. The private key is
  ``$FASTSLOW_SIGNING_KEY`` (its PEM text), else the file ``--signing-key-file`` /
  ``$FASTSLOW_SIGNING_KEY_FILE``, else the local key file (``~/.config/fastslow/signing_ed25519``, or
  under ``$XDG_CONFIG_HOME``), which training creates (mode 0600) when no key is configured, with the
  public key beside it (the same name plus ``.pub``). The public key is ``$FASTSLOW_VERIFY_KEY`` (its
  PEM text), else the file ``--verify-key-file`` / ``$FASTSLOW_VERIFY_KEY_FILE``, else the local
  ``signing_ed25519.pub`` if it exists. A loader never reads a private key: given one as its public key,
  it refuses it. A manifest signed with HMAC-SHA256 (an older fastslow, whose one secret both signed and
  checked) is refused with how to re-sign it (``fastslow sign``);
- a **pin**: the SHA-256 the MLflow registry recorded on the model version at training (a
  ``models:/`` URI), the one a pyfunc model recorded when it was logged, or ``--expect-sha256 HEX`` /
  ``$FASTSLOW_EXPECT_SHA256``. Every pin given must match; a pin that matches vouches on its own;
- or nobody: ``--trust-unsigned`` / ``$FASTSLOW_TRUST_UNSIGNED=1`` loads a model without a signature
  that verifies (a pin that is given is still enforced).

Ed25519 through ``cryptography`` (the standard Python binding of OpenSSL): small keys and signatures,
no parameters to choose. A format that cannot run code (skops) was the alternative to signing; it
cannot hold the bundle without trusting fastslow's own classes and the CRF tagger's serialised state,
so the bundle stays a joblib pickle.

The settings travel in the environment, so that worker processes (``fastslow score --jobs``,
``fastslow serve --workers``) apply the same policy as the process that started them. No scikit-learn
here: the main process of ``fastslow score`` checks a bundle without importing it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

#: the private key (training, ``fastslow sign``): its PEM text, or a file holding it
KEY_ENV = "FASTSLOW_SIGNING_KEY"
KEY_FILE_ENV = "FASTSLOW_SIGNING_KEY_FILE"
#: the public key (every loader): its PEM text, or a file holding it
VERIFY_KEY_ENV = "FASTSLOW_VERIFY_KEY"
VERIFY_KEY_FILE_ENV = "FASTSLOW_VERIFY_KEY_FILE"
EXPECT_ENV = "FASTSLOW_EXPECT_SHA256"
TRUST_UNSIGNED_ENV = "FASTSLOW_TRUST_UNSIGNED"
#: who set ``$FASTSLOW_EXPECT_SHA256`` when ``export`` did (the registry), for the refusal's message
EXPECT_FROM_ENV = "FASTSLOW_EXPECT_SHA256_FROM"
ALGORITHM = "ed25519"
#: the algorithm of an older fastslow's signatures: refused, with how to re-sign
HMAC_ALGORITHM = "hmac-sha256"
#: the manifest's field that holds the signature (everything else in the manifest is signed)
SIGNATURE_FIELD = "signature"
#: the local private key file's name; its public key is the same name plus ``PUBLIC_SUFFIX``
KEY_FILE_NAME = "signing_ed25519"
PUBLIC_SUFFIX = ".pub"

log = logging.getLogger("fastslow.signing")

HOW_TO_VOUCH = (
    "Load it (1) signed: with the public key of the key pair it was signed with, in $FASTSLOW_VERIFY_KEY, "
    "$FASTSLOW_VERIFY_KEY_FILE or --verify-key-file (training writes it beside its private key: "
    "~/.config/fastslow/signing_ed25519.pub unless one is set); "
    "(2) pinned: as models:/NAME/VERSION from the MLflow registry, or with --expect-sha256 HEX "
    "($FASTSLOW_EXPECT_SHA256) holding a digest from a source you trust; or (3) if you trust where the file "
    "came from, with --trust-unsigned ($FASTSLOW_TRUST_UNSIGNED=1)")
HOW_TO_RESIGN = (
    "re-sign it where the Ed25519 private key is kept (`fastslow sign MODEL`, or retrain it) and check it "
    "with the public key (--verify-key-file), or load it pinned (models:/NAME/VERSION, --expect-sha256 HEX)")


class SigningKeyError(ValueError):
    """A configured key that cannot be used (missing file, not an Ed25519 key, a private key given to a
    loader); the message says which."""


def _key_id(public: Ed25519PublicKey) -> str:
    """A short name of a key pair (the SHA-256 of its raw public key): tells which key signed a manifest."""
    return hashlib.sha256(public.public_bytes_raw()).hexdigest()[:16]


def public_pem(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


@dataclass(frozen=True)
class SigningKey:
    """The private key models are signed with: where they are trained, never where they are loaded."""

    private: Ed25519PrivateKey
    source: str  # where it came from, for messages: "$FASTSLOW_SIGNING_KEY" or "key file PATH"

    @property
    def public(self) -> Ed25519PublicKey:
        return self.private.public_key()

    @property
    def key_id(self) -> str:
        return _key_id(self.public)


@dataclass(frozen=True)
class VerifyKey:
    """A public key: it checks a signature and cannot make one."""

    public: Ed25519PublicKey
    source: str  # "$FASTSLOW_VERIFY_KEY" or "public key file PATH"

    @property
    def key_id(self) -> str:
        return _key_id(self.public)


def default_key_file() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "fastslow" / KEY_FILE_NAME


def public_key_path(private_key_path: Path) -> Path:
    """Where the public key of a private key file is written: beside it, its name plus ``.pub``."""
    return private_key_path.with_name(private_key_path.name + PUBLIC_SUFFIX)


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SigningKeyError(f"cannot read {what} file {path}: {exc.strerror}") from None


def _private_key(pem: bytes, where: str) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(pem.strip(), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        key = None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{where} holds no unencrypted Ed25519 private key in PEM (an HMAC secret of an older "
                              "fastslow no longer signs: give training a key file that does not exist yet, and it "
                              "creates a key pair there)")
    return key


def _public_key(pem: bytes, where: str) -> Ed25519PublicKey:
    if b"PRIVATE KEY" in pem:
        raise SigningKeyError(f"{where} holds a private key: a loader checks with the public key only (the "
                              f"'{PUBLIC_SUFFIX}' file training writes beside the private key); keep the private key "
                              "where models are trained")
    try:
        key = serialization.load_pem_public_key(pem.strip())
    except (ValueError, UnsupportedAlgorithm):
        key = None
    if not isinstance(key, Ed25519PublicKey):
        raise SigningKeyError(f"{where} holds no Ed25519 public key in PEM ('-----BEGIN PUBLIC KEY-----')")
    return key


def _signing_key_from_file(path: Path) -> SigningKey:
    return SigningKey(_private_key(_read(path, "signing key"), f"signing key file {path}"), f"key file {path}")


def _verify_key_from_file(path: Path) -> VerifyKey:
    return VerifyKey(_public_key(_read(path, "public key"), f"public key file {path}"), f"public key file {path}")


def configured_key(key_file: str | Path | None = None) -> SigningKey | None:
    """The private signing key: ``key_file`` if given, else ``$FASTSLOW_SIGNING_KEY``, else the file
    ``$FASTSLOW_SIGNING_KEY_FILE``, else the local key file if it exists; None when there is none.
    ``SigningKeyError`` for a key that is configured but cannot be used."""
    if key_file:
        return _signing_key_from_file(Path(key_file).expanduser())
    if os.environ.get(KEY_ENV):
        return SigningKey(_private_key(os.environ[KEY_ENV].encode("utf-8"), f"${KEY_ENV}"), f"${KEY_ENV}")
    if os.environ.get(KEY_FILE_ENV):
        return _signing_key_from_file(Path(os.environ[KEY_FILE_ENV]).expanduser())
    local = default_key_file()
    return _signing_key_from_file(local) if local.is_file() else None


def configured_verify_key(key_file: str | Path | None = None) -> VerifyKey | None:
    """The public key loaders check signatures with: ``key_file`` if given, else ``$FASTSLOW_VERIFY_KEY``,
    else the file ``$FASTSLOW_VERIFY_KEY_FILE``, else the local public key file if it exists; None when there
    is none. Never a private key: one given here is a ``SigningKeyError``."""
    if key_file:
        return _verify_key_from_file(Path(key_file).expanduser())
    if os.environ.get(VERIFY_KEY_ENV):
        return VerifyKey(_public_key(os.environ[VERIFY_KEY_ENV].encode("utf-8"), f"${VERIFY_KEY_ENV}"),
                         f"${VERIFY_KEY_ENV}")
    if os.environ.get(VERIFY_KEY_FILE_ENV):
        return _verify_key_from_file(Path(os.environ[VERIFY_KEY_FILE_ENV]).expanduser())
    local = public_key_path(default_key_file())
    return _verify_key_from_file(local) if local.is_file() else None


def ensure_key(key_file: str | Path | None = None) -> tuple[SigningKey, Path | None]:
    """The configured private key (as ``configured_key``), creating a new key pair when the key file it names
    does not exist: ``key_file``, else ``$FASTSLOW_SIGNING_KEY_FILE``, else the local key file; the private key
    mode 0600, its public key beside it (``public_key_path``), also written when only it is missing.
    Returns the key and the path of the private key file it created (None when it created none)."""
    if not key_file and os.environ.get(KEY_ENV):
        return configured_key(), None
    path = Path(key_file or os.environ.get(KEY_FILE_ENV) or default_key_file()).expanduser()
    created = None
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        private = Ed25519PrivateKey.generate()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another training run created it first: use that one
            pass
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()))
            created = path
    key = _signing_key_from_file(path)
    public = public_key_path(path)
    if not public.exists():
        try:
            public.write_bytes(public_pem(key.public))
        except OSError as exc:  # a read-only folder (a mounted secret): loaders get the public key elsewhere
            log.warning("cannot write the public key beside %s (%s): give loaders its public key yourself",
                        path, exc.strerror)
    elif created is not None and _verify_key_from_file(public).key_id != key.key_id:
        raise SigningKeyError(f"{public} is not the public key of the key pair just created in {path}: move it "
                              "away and train again")
    return key, created


def signed_payload(manifest: dict) -> bytes:
    """The bytes a signature covers: the manifest without its signature, as canonical JSON."""
    content = {k: v for k, v in manifest.items() if k != SIGNATURE_FIELD}
    return json.dumps(content, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def sign(manifest: dict, key: SigningKey) -> dict:
    """The manifest's signature field (the manifest must already hold the file's SHA-256)."""
    return {"algorithm": ALGORITHM, "key_id": key.key_id, "value": key.private.sign(signed_payload(manifest)).hex()}


def signature_verifies(manifest: dict, key: VerifyKey) -> bool:
    signature = manifest.get(SIGNATURE_FIELD)
    if not isinstance(signature, dict) or signature.get("algorithm") != ALGORITHM:
        return False
    try:
        key.public.verify(bytes.fromhex(str(signature.get("value", ""))), signed_payload(manifest))
    except (InvalidSignature, ValueError):
        return False
    return True


def normalise_sha256(value: str, where: str) -> str:
    digest = value.strip().lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise SigningKeyError(f"{where}: {value!r} is not a SHA-256 (64 hexadecimal digits)")
    return digest


@dataclass(frozen=True)
class Policy:
    """What a loader accepts: ``pins`` ((sha256, where it comes from), ...), a public key, or ``trust_unsigned``."""

    pins: tuple[tuple[str, str], ...] = ()
    key: VerifyKey | None = None
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
        return cls(tuple(pins), None if pins else configured_verify_key(), trust_unsigned)  # a pin needs no key

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
        if isinstance(signature, dict) and signature.get("algorithm") == HMAC_ALGORITHM:
            return (f"it is signed with HMAC-SHA256 (key id {signed_by}), which is no longer accepted (whoever can "
                    f"check an HMAC can forge one): {HOW_TO_RESIGN}")
        if signature and self.key is not None:
            if signature_verifies(manifest, self.key):
                return None
            return (f"its signature does not verify with the public key from {self.key.source} (key id "
                    f"{self.key.key_id}; the manifest names key id {signed_by}): the file or its manifest was "
                    f"changed after signing, or it was signed with another key. {HOW_TO_VOUCH}")
        why = (f"it is signed (key id {signed_by}) but no public key is configured here" if signature
               else "its manifest has no signature")
        return (f"nothing vouches for its SHA-256: {why}, and the manifest's digest only catches accidents "
                f"(whoever can rewrite the file can rewrite the manifest). {HOW_TO_VOUCH}")


def export(*, verify_key_file: str | Path | None = None, expect_sha256: str | None = None,
           trust_unsigned: bool = False, pinned_by: str = "--expect-sha256") -> None:
    """Put command-line settings into this process's environment, where its worker processes read them.
    A second, different pin is refused (``SigningKeyError``): a file cannot match both."""
    if verify_key_file:
        _verify_key_from_file(Path(verify_key_file).expanduser())  # a wrong file fails here, before any worker
        os.environ.pop(VERIFY_KEY_ENV, None)
        os.environ[VERIFY_KEY_FILE_ENV] = str(Path(verify_key_file).expanduser().resolve())
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
    names = (KEY_ENV, KEY_FILE_ENV, VERIFY_KEY_ENV, VERIFY_KEY_FILE_ENV, EXPECT_ENV, EXPECT_FROM_ENV,
             TRUST_UNSIGNED_ENV)
    saved = {name: os.environ.get(name) for name in names}
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
