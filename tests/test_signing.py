"""A forged model must not run code. A pickle runs code when it is loaded, and the manifest's SHA-256 only
catches accidents: whoever can rewrite the file can rewrite the manifest. So a bundle is unpickled only
when a signature (Ed25519, made with a private key the forger does not have and checked with its public
key) or a pin (the registry's version tag, the pyfunc model's logged digest, ``--expect-sha256``) vouches
for it, or when ``--trust-unsigned`` says so. A loader holds the public key only, so it cannot sign. The
forged pickle below writes a marker file when it is unpickled; every refusal is checked to have left no
marker."""

import hashlib
import hmac
import json
import os
import pickle
import shutil
import stat
import subprocess
import sys

import pytest
from conftest import run_cli, sample_rows, small_train, write_jsonl

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from fastslow.models.lifecycle import registry, signing
from fastslow.models.lifecycle.bundle import ModelLoadError, load_bundle, sign_bundle
from fastslow.models.lifecycle.manifest import manifest_path, sha256_of
from fastslow import cli


class RunsCode:
    """What an attacker pickles: loading it runs ``exec`` (here: write a marker file)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('code ran')",)


def forge(genuine, folder, marker, keep_signature: bool = True):
    """The forged pickle beside the genuine manifest with its ``sha256`` rewritten to match (and the
    genuine signature kept, or removed)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fastslow.joblib"
    path.write_bytes(pickle.dumps(RunsCode(marker)))
    manifest = json.loads(manifest_path(genuine).read_text(encoding="utf-8"))
    manifest["sha256"] = sha256_of(path)
    if not keep_signature:
        del manifest[signing.SIGNATURE_FIELD]
    manifest_path(path).write_text(json.dumps(manifest), encoding="utf-8")
    return path


def copy_bundle(genuine, folder, keep_signature: bool = True):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fastslow.joblib"
    shutil.copy(genuine, path)
    manifest = json.loads(manifest_path(genuine).read_text(encoding="utf-8"))
    if not keep_signature:
        del manifest[signing.SIGNATURE_FIELD]
    manifest_path(path).write_text(json.dumps(manifest), encoding="utf-8")
    return path


def fastslow(*args, env=None):
    """`python -m fastslow.cli ARGS` in a process of its own: a forged model refused by a real process, and a
    real `fastslow sign`; the other command lines run in this process (``run_cli``), a marker file as telling."""
    return subprocess.run([sys.executable, "-m", "fastslow.cli", *map(str, args)], capture_output=True,
                          timeout=300, env={**os.environ, **(env or {})})


def serve_refused(*args, env=None) -> tuple[int, str]:
    """`fastslow serve` that must exit at start (it never opens its port: 0 picks any free one)."""
    proc = subprocess.Popen([sys.executable, "-m", "fastslow.cli", "serve", "--port", "0", *map(str, args)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("fastslow serve started with a model it should have refused")
    return proc.returncode, err.decode("utf-8")


def new_key(source: str = "a test") -> signing.SigningKey:
    return signing.SigningKey(Ed25519PrivateKey.generate(), source)


def write_public_key(key: signing.SigningKey, path):
    path.write_bytes(signing.public_pem(key.public))
    return path


@pytest.fixture
def no_key(monkeypatch, tmp_path):
    """No key configured at all, private or public (no variable, no local key file)."""
    monkeypatch.delenv(signing.KEY_FILE_ENV)
    monkeypatch.delenv(signing.VERIFY_KEY_FILE_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty-config"))
    assert signing.configured_key() is None and signing.configured_verify_key() is None


@pytest.fixture
def public_key_only(monkeypatch, tmp_path, signing_key):
    """A loader's machine: the session's public key in a file, no private key readable anywhere."""
    monkeypatch.delenv(signing.KEY_FILE_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty-config"))
    public = write_public_key(signing_key, tmp_path / "team.pub")
    monkeypatch.setenv(signing.VERIFY_KEY_FILE_ENV, str(public))
    return public


@pytest.fixture(scope="module")
def store(tmp_path_factory, store_in):
    """A small real `train.run` (router only), signed with the session's key and registered as version 1."""
    folder = tmp_path_factory.mktemp("signing-store")
    uri = store_in(folder)
    run = small_train(folder / "model", uri, "--only", "--data",
                      str(write_jsonl(folder / "rows.jsonl", sample_rows(120, 7))))
    return {"uri": uri, "run": run, "path": folder / "model" / "fastslow.joblib", "folder": folder}


@pytest.fixture
def queries(tmp_path):
    return write_jsonl(tmp_path / "q.jsonl", [{"id": 1, "query": "打开空调"}])


# --- the rule, as a pure function


def test_a_pin_or_a_signature_vouches_and_trust_unsigned_admits_the_rest_but_no_wrong_pin():
    signer, digest = new_key(), "a" * 64
    key, other = signing.VerifyKey(signer.public, "test"), signing.VerifyKey(new_key().public, "other")
    unsigned = {"sha256": digest, "model_version": "fastslow-1"}
    signed = {**unsigned, "signature": signing.sign(unsigned, signer)}
    Policy = signing.Policy
    assert Policy(key=key).refusal(signed, digest) is None
    assert "its manifest has no signature" in Policy(key=key).refusal(unsigned, digest)
    assert "does not verify with the public key from other" in Policy(key=other).refusal(signed, digest)
    assert "no public key is configured here" in Policy().refusal(signed, digest)
    assert Policy(pins=((digest, "a test"),)).refusal(unsigned, digest) is None
    assert Policy(trust_unsigned=True).refusal(unsigned, digest) is None
    assert Policy(key=other, trust_unsigned=True).refusal(signed, digest) is None
    assert Policy(pins=(("b" * 64, "a test"),), key=key, trust_unsigned=True).refusal(signed, digest) == (
        "its SHA-256 aaaaaaaaaaaa… is not the bbbbbbbbbbbb… pinned by a test")


# --- the forgery, and that it is live


def test_the_forged_pickle_runs_code_when_nothing_checks_it(store, tmp_path, monkeypatch):
    """The control: with --trust-unsigned the forged file is unpickled and its code runs, so the refusals
    below that leave no marker are refusals before unpickling, not a harmless forgery."""
    marker = tmp_path / "ran"
    forged = forge(store["path"], tmp_path / "forged", marker, keep_signature=False)
    monkeypatch.setenv(signing.TRUST_UNSIGNED_ENV, "1")
    with pytest.raises(ModelLoadError, match="does not hold a fastslow model"):
        load_bundle(forged)
    assert marker.read_text() == "code ran"


@pytest.mark.parametrize("keep_signature, why", [
    (True, "its signature does not verify with the public key from public key file"),
    (False, "nothing vouches for its SHA-256: its manifest has no signature"),
])
def test_load_bundle_refuses_a_forged_model_before_unpickling_it(store, tmp_path, keep_signature, why):
    marker = tmp_path / "ran"
    forged = forge(store["path"], tmp_path / "forged", marker, keep_signature)
    with pytest.raises(ModelLoadError, match=why):
        load_bundle(forged)
    assert not marker.exists()


def test_score_eval_and_serve_refuse_a_forged_model_and_run_nothing(store, tmp_path, queries):
    marker = tmp_path / "ran"
    forged = forge(store["path"], tmp_path / "forged", marker, keep_signature=False)
    for argv in (["score", queries, "--model", forged], ["score", queries, "-o", tmp_path / "out.jsonl", "--jobs", "2",
                                                         "--model", forged],
                 ["eval", "data/fixtures/routing_v1.jsonl", "--model", forged]):
        result = fastslow(*argv)
        assert result.returncode == 2, argv
        assert "nothing vouches for its SHA-256" in result.stderr.decode(), argv
    code, err = serve_refused("--model", forged)
    assert code == 2 and "nothing vouches for its SHA-256" in err
    code, err = serve_refused("--workers", "2", env={"FASTSLOW_MODEL": str(forged)})
    assert code == 2 and "nothing vouches for its SHA-256" in err
    assert not marker.exists()
    assert not (tmp_path / "out.jsonl").exists()


# --- signatures


def test_a_genuine_signed_model_loads(store, signing_key):
    manifest = json.loads(manifest_path(store["path"]).read_text(encoding="utf-8"))
    assert manifest["signature"]["algorithm"] == "ed25519"
    assert manifest["signature"]["key_id"] == signing_key.key_id
    assert signing.signature_verifies(manifest, signing.configured_verify_key())
    assert load_bundle(store["path"]).version == store["run"]["model"].version


def test_any_change_to_the_signed_manifest_breaks_the_signature(store):
    manifest = json.loads(manifest_path(store["path"]).read_text(encoding="utf-8"))
    key = signing.configured_verify_key()
    assert not signing.signature_verifies({**manifest, "model_version": "fastslow-000000000000"}, key)
    assert not signing.signature_verifies({**manifest, "sha256": "0" * 64}, key)


def test_a_wrong_public_key_refuses(store, tmp_path, monkeypatch, queries):
    other = write_public_key(new_key(), tmp_path / "other.pub")
    result = run_cli("score", queries, "--model", store["path"], "--verify-key-file", other)
    assert result.returncode == 2
    err = result.stderr.decode()
    assert f"signature does not verify with the public key from public key file {other}" in err
    assert "was changed after signing, or it was signed with another key" in err
    monkeypatch.setenv(signing.VERIFY_KEY_ENV, signing.public_pem(new_key().public).decode())
    with pytest.raises(ModelLoadError, match=r"public key from \$FASTSLOW_VERIFY_KEY"):
        load_bundle(store["path"])


def test_without_a_key_a_signed_model_is_refused_naming_the_three_ways(store, no_key, signing_key):
    with pytest.raises(ModelLoadError) as refused:
        load_bundle(store["path"])
    message = str(refused.value)
    assert f"it is signed (key id {signing_key.key_id}) but no public key is configured here" in message
    for way in ("$FASTSLOW_VERIFY_KEY", "--verify-key-file", "models:/NAME/VERSION", "--expect-sha256 HEX",
                "--trust-unsigned", "FASTSLOW_TRUST_UNSIGNED=1"):
        assert way in message


def test_a_missing_or_unusable_public_key_is_a_clear_error(store, tmp_path, monkeypatch, queries):
    result = run_cli("score", queries, "--model", store["path"], "--verify-key-file", tmp_path / "nope.pub")
    assert result.returncode == 2 and f"cannot read public key file {tmp_path / 'nope.pub'}" in result.stderr.decode()
    monkeypatch.setenv(signing.VERIFY_KEY_ENV, "not a key")
    with pytest.raises(ModelLoadError, match=r"\$FASTSLOW_VERIFY_KEY holds no Ed25519 public key in PEM"):
        load_bundle(store["path"])


# --- a loader holds the public key only


def test_a_loader_with_only_the_public_key_refuses_a_bundle_signed_by_another_key(store, tmp_path,
                                                                                   public_key_only, queries):
    """The genuine model loads with the public key alone; a forged pickle whose manifest an attacker signed
    with a key pair of their own is refused by load_bundle, score and serve, before it is unpickled."""
    assert load_bundle(store["path"]).version == store["run"]["model"].version
    marker = tmp_path / "ran"
    forged = forge(store["path"], tmp_path / "forged", marker, keep_signature=False)
    attacker = new_key("the attacker's key")
    sign_bundle(forged, attacker)
    why = f"does not verify with the public key from public key file {public_key_only}"
    with pytest.raises(ModelLoadError, match=why):
        load_bundle(forged)
    result = run_cli("score", queries, "--model", forged)
    assert result.returncode == 2 and why in result.stderr.decode()
    code, err = serve_refused("--model", forged)
    assert code == 2 and why in err
    assert not marker.exists()


def test_a_loader_with_only_the_public_key_cannot_sign(store, tmp_path, public_key_only):
    assert signing.configured_key() is None
    policy_key = signing.Policy.from_env().key
    assert policy_key.source == f"public key file {public_key_only}"
    assert not hasattr(policy_key.public, "sign")  # a public key checks signatures, it cannot make one
    copy = copy_bundle(store["path"], tmp_path / "copy", keep_signature=False)
    result = run_cli("sign", copy)
    assert result.returncode == 2
    assert "fastslow sign: no private signing key here" in result.stderr.decode()
    assert signing.SIGNATURE_FIELD not in json.loads(manifest_path(copy).read_text(encoding="utf-8"))


def test_a_private_key_given_to_a_loader_is_refused(store, tmp_path, queries, signing_key):
    private = tmp_path / "signing_ed25519"
    shutil.copy(os.environ[signing.KEY_FILE_ENV], private)
    result = run_cli("score", queries, "--model", store["path"], "--verify-key-file", private)
    assert result.returncode == 2
    assert (f"public key file {private} holds a private key: a loader checks with the public key only"
            in result.stderr.decode())


# --- bundles signed with HMAC by an older fastslow, and re-signing


def hmac_signed(genuine, folder, secret: bytes = b"s" * 32):
    """A copy of the bundle whose manifest an older fastslow signed with HMAC-SHA256."""
    path = copy_bundle(genuine, folder, keep_signature=False)
    manifest = json.loads(manifest_path(path).read_text(encoding="utf-8"))
    value = hmac.new(secret, signing.signed_payload(manifest), hashlib.sha256).hexdigest()
    manifest[signing.SIGNATURE_FIELD] = {"algorithm": "hmac-sha256", "key_id": "0123456789abcdef", "value": value}
    manifest_path(path).write_text(json.dumps(manifest), encoding="utf-8")
    return path


def test_an_hmac_signed_bundle_is_refused_saying_how_to_re_sign_it(store, tmp_path, queries):
    old = hmac_signed(store["path"], tmp_path / "old")
    with pytest.raises(ModelLoadError) as refused:
        load_bundle(old)
    message = str(refused.value)
    assert "\n" not in message
    assert ("it is signed with HMAC-SHA256 (key id 0123456789abcdef), which is no longer accepted (whoever can "
            "check an HMAC can forge one): re-sign it where the Ed25519 private key is kept (`fastslow sign MODEL`, "
            "or retrain it)") in message
    result = run_cli("score", queries, "--model", old)
    assert result.returncode == 2 and "`fastslow sign MODEL`" in result.stderr.decode()

    result = fastslow("sign", old)  # a real process
    assert result.returncode == 0, result.stderr
    assert f"signed {old} (sha256 {sha256_of(old)[:12]}…)" in result.stdout.decode()
    assert load_bundle(old).version == store["run"]["model"].version


def test_sign_refuses_a_file_that_does_not_match_its_manifest_or_the_pin(store, tmp_path):
    copy = copy_bundle(store["path"], tmp_path / "copy", keep_signature=False)
    result = run_cli("sign", copy, "--expect-sha256", "ab" * 32)
    assert result.returncode == 2
    assert f"its SHA-256 {sha256_of(copy)[:12]}… is not the abababababab… pinned by --expect-sha256" in (
        result.stderr.decode())
    marker = tmp_path / "ran"
    forged = forge(store["path"], tmp_path / "forged", marker, keep_signature=False)
    with open(forged, "ab") as f:
        f.write(b"appended after the manifest was written")
    result = run_cli("sign", forged)
    assert result.returncode == 2 and "does not match the manifest" in result.stderr.decode()
    assert not marker.exists()


# --- pins


def test_expect_sha256_loads_without_a_key_and_refuses_another_digest(store, tmp_path, no_key, queries):
    digest = sha256_of(store["path"])
    result = run_cli("score", queries, "--model", store["path"], "--expect-sha256", digest.upper())
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["model_version"] == store["run"]["model"].version
    wrong = "ab" * 32
    result = run_cli("score", queries, "--model", store["path"], "--expect-sha256", wrong, "--trust-unsigned")
    assert result.returncode == 2  # a pin is enforced even with --trust-unsigned
    assert f"its SHA-256 {digest[:12]}… is not the {wrong[:12]}… pinned by --expect-sha256" in result.stderr.decode()
    result = run_cli("score", queries, "--model", store["path"], "--expect-sha256", "not-hex")
    assert result.returncode == 2 and "is not a SHA-256 (64 hexadecimal digits)" in result.stderr.decode()


def test_expect_sha256_of_the_genuine_model_refuses_the_forged_one(store, tmp_path, queries):
    marker = tmp_path / "ran"
    forged = forge(store["path"], tmp_path / "forged", marker)
    result = run_cli("score", queries, "--model", forged, "--expect-sha256", sha256_of(store["path"]))
    assert result.returncode == 2 and "pinned by --expect-sha256" in result.stderr.decode()
    assert not marker.exists()


def test_trust_unsigned_loads_an_unsigned_model_and_says_so(store, tmp_path, queries):
    unsigned = copy_bundle(store["path"], tmp_path / "unsigned", keep_signature=False)
    result = run_cli("score", queries, "--model", unsigned)
    assert result.returncode == 2 and "its manifest has no signature" in result.stderr.decode()
    result = run_cli("score", queries, "--model", unsigned, "--trust-unsigned")
    assert result.returncode == 0, result.stderr
    assert "loading a model nothing vouches for" in result.stderr.decode()
    assert json.loads(result.stdout)["label"] == "快"
    result = run_cli("eval", "data/fixtures/routing_v1.jsonl", "--model", unsigned, env={"FASTSLOW_TRUST_UNSIGNED": "1"})
    assert result.returncode == 0, result.stderr


def test_command_line_trust_holds_for_that_command_only(store, tmp_path, queries):
    unsigned = copy_bundle(store["path"], tmp_path / "unsigned", keep_signature=False)
    assert cli.main(["score", str(queries), "-o", str(tmp_path / "out.jsonl"), "--jobs", "1", "--model", str(unsigned),
                     "--trust-unsigned"]) == 0
    assert signing.TRUST_UNSIGNED_ENV not in os.environ
    with pytest.raises(ModelLoadError, match="its manifest has no signature"):
        load_bundle(unsigned)


def test_the_registry_pins_each_version_and_refuses_a_forged_download(store, tmp_path, monkeypatch, no_key, queries):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store["uri"])
    monkeypatch.setenv("FASTSLOW_CACHE", str(tmp_path / "cache"))
    digest = store["run"]["manifest"]["sha256"]
    version = registry.client(store["uri"]).get_model_version("fastslow", store["run"]["registered_version"])
    assert version.tags[registry.PIN_TAG] == digest
    uri = f"models:/fastslow/{version.version}"
    resolved = registry.resolve(uri)
    assert (resolved.sha256, resolved.pinned_by) == (digest, f"the registry (fastslow version {version.version}, "
                                                             f"tag bundle_sha256)")
    assert resolved.load().version == store["run"]["model"].version  # no key here: the pin vouches
    assert cli.main(["score", str(queries), "-o", str(tmp_path / "out.jsonl"), "--jobs", "1", "--model", uri]) == 0
    result = run_cli("score", queries, "--model", uri, "--expect-sha256", "ab" * 32)
    assert result.returncode == 2
    assert (f"the registry (fastslow version {version.version}, tag bundle_sha256) pins {digest[:12]}… but "
            f"--expect-sha256 pins abababababab…: no file matches both") in result.stderr.decode()

    marker = tmp_path / "ran"
    forge(resolved.path, tmp_path / "forged", marker, keep_signature=False)
    for name in ("fastslow.joblib", "fastslow.manifest.json"):  # the attacker rewrites the cached download
        shutil.copy(tmp_path / "forged" / name, resolved.path.parent / name)
    result = run_cli("score", queries, "--model", uri, "--trust-unsigned", env={"FASTSLOW_CACHE": str(tmp_path / "cache")})
    assert result.returncode == 2
    assert f"is not the {digest[:12]}… pinned by the registry (fastslow version {version.version}" in result.stderr.decode()
    from fastslow.serve.server import create_app

    with pytest.raises(ModelLoadError, match="pinned by the registry"):
        create_app(uri)
    code, err = serve_refused("--model", uri, "--workers", "2", "--trust-unsigned",
                              env={"FASTSLOW_CACHE": str(tmp_path / "cache")})
    assert code == 2 and "pinned by the registry" in err
    assert not marker.exists()


def test_the_pyfunc_model_is_pinned_to_the_bundle_it_logged(store, tmp_path, monkeypatch, no_key):
    import mlflow
    import pandas as pd
    from mlflow.models import Model

    from fastslow.models.lifecycle.pyfunc import save_pyfunc_model

    folder = save_pyfunc_model(store["path"], tmp_path / "pyfunc")
    digest = sha256_of(store["path"])
    assert Model.load(str(folder)).metadata["bundle_sha256"] == digest
    model = mlflow.pyfunc.load_model(str(folder))  # no key here: the logged digest vouches
    record = json.loads(model.predict(pd.DataFrame({"query": ["打开空调"]}))["record"][0])
    assert record["model_version"] == store["run"]["model"].version

    marker = tmp_path / "ran"
    [bundle] = list(folder.rglob("fastslow.joblib"))
    forge(store["path"], tmp_path / "forged", marker, keep_signature=False)
    for name in ("fastslow.joblib", "fastslow.manifest.json"):
        shutil.copy(tmp_path / "forged" / name, bundle.parent / name)
    monkeypatch.setenv(signing.TRUST_UNSIGNED_ENV, "1")
    with pytest.raises(ModelLoadError, match=r"pinned by the pyfunc model \(bundle_sha256"):
        mlflow.pyfunc.load_model(str(folder))
    assert not marker.exists()


# --- the key train.py signs with


def test_train_creates_a_private_local_key_pair_once_and_signs_with_it(tmp_path, monkeypatch):
    monkeypatch.delenv(signing.KEY_FILE_ENV)
    monkeypatch.delenv(signing.VERIFY_KEY_FILE_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    key, created = signing.ensure_key()
    path = tmp_path / "config" / "fastslow" / "signing_ed25519"
    assert created == path and key.source == f"key file {path}"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    public = tmp_path / "config" / "fastslow" / "signing_ed25519.pub"
    assert public.read_text().startswith("-----BEGIN PUBLIC KEY-----")
    again, created_again = signing.ensure_key()
    assert created_again is None and again.key_id == key.key_id == signing.configured_key().key_id
    assert signing.configured_verify_key().key_id == key.key_id  # the local public key: loading works here
    other = new_key()
    monkeypatch.setenv(signing.KEY_ENV, other.private.private_bytes(  # the environment's key wins, no file is made
        signing.serialization.Encoding.PEM, signing.serialization.PrivateFormat.PKCS8,
        signing.serialization.NoEncryption()).decode())
    from_env, created = signing.ensure_key()
    assert (from_env.key_id, from_env.source, created) == (other.key_id, "$FASTSLOW_SIGNING_KEY", None)


def test_train_signs_with_the_key_file_it_is_given(tmp_path):
    from fastslow.models.lifecycle import training as train

    args = train.build_parser().parse_args(["--signing-key-file", str(tmp_path / "team.key")])
    key, created = signing.ensure_key(args.signing_key_file)
    assert created == tmp_path / "team.key" and signing.configured_key(tmp_path / "team.key").key_id == key.key_id
    assert signing.configured_verify_key(tmp_path / "team.key.pub").key_id == key.key_id


def test_an_hmac_secret_of_an_older_fastslow_does_not_sign(tmp_path):
    old = tmp_path / "signing.key"
    old.write_text("ab" * 32 + "\n")
    with pytest.raises(signing.SigningKeyError, match=r"holds no unencrypted Ed25519 private key in PEM \(an HMAC "
                                                      r"secret of an older fastslow no longer signs"):
        signing.ensure_key(old)
