"""A forged model must not run code (issue 13, item 4). A pickle runs code when it is loaded, and the
manifest's SHA-256 only catches accidents: whoever can rewrite the file can rewrite the manifest. So a
bundle is unpickled only when a signature (HMAC with a key the forger does not have) or a pin (the
registry's version tag, the pyfunc model's logged digest, ``--expect-sha256``) vouches for it, or when
``--trust-unsigned`` says so. The forged pickle below writes a marker file when it is unpickled; every
refusal is checked to have left no marker."""

import json
import os
import pickle
import shutil
import stat
import subprocess
import sys

import pytest
from conftest import sample_rows, small_train, write_jsonl

from fastslow.models.lifecycle import registry, signing
from fastslow.models.lifecycle.bundle import ModelLoadError, load_bundle
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


@pytest.fixture
def no_key(monkeypatch, tmp_path):
    """No signing key configured at all (no variable, no local key file)."""
    monkeypatch.delenv(signing.KEY_FILE_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty-config"))
    assert signing.configured_key() is None


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A small real `train.run` (router only), signed with the session's key and registered as version 1."""
    folder = tmp_path_factory.mktemp("signing-store")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    run = small_train(folder / "model", uri, "--only", "--data",
                      str(write_jsonl(folder / "rows.jsonl", sample_rows(120, 7))))
    return {"uri": uri, "run": run, "path": folder / "model" / "fastslow.joblib", "folder": folder}


@pytest.fixture
def queries(tmp_path):
    return write_jsonl(tmp_path / "q.jsonl", [{"id": 1, "query": "打开空调"}])


# --- the rule, as a pure function


def test_a_pin_or_a_signature_vouches_and_trust_unsigned_admits_the_rest_but_no_wrong_pin():
    key, other, digest = signing.SigningKey(b"k" * 32, "test"), signing.SigningKey(b"o" * 32, "other"), "a" * 64
    unsigned = {"sha256": digest, "model_version": "fastslow-1"}
    signed = {**unsigned, "signature": signing.sign(unsigned, key)}
    Policy = signing.Policy
    assert Policy(key=key).refusal(signed, digest) is None
    assert "its manifest has no signature" in Policy(key=key).refusal(unsigned, digest)
    assert "does not verify with the signing key from other" in Policy(key=other).refusal(signed, digest)
    assert "no signing key is configured here" in Policy().refusal(signed, digest)
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
    (True, "its signature does not verify with the signing key from key file"),
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
    assert manifest["signature"]["algorithm"] == "hmac-sha256"
    assert manifest["signature"]["key_id"] == signing_key.key_id
    assert signing.signature_verifies(manifest, signing_key)
    assert load_bundle(store["path"]).version == store["run"]["model"].version


def test_any_change_to_the_signed_manifest_breaks_the_signature(store, signing_key):
    manifest = json.loads(manifest_path(store["path"]).read_text(encoding="utf-8"))
    assert not signing.signature_verifies({**manifest, "model_version": "fastslow-000000000000"}, signing_key)
    assert not signing.signature_verifies({**manifest, "sha256": "0" * 64}, signing_key)


def test_a_wrong_key_refuses(store, tmp_path, monkeypatch, queries):
    other = tmp_path / "other.key"
    other.write_text("another-key-" + "x" * 32)
    result = fastslow("score", queries, "--model", store["path"], "--signing-key-file", other)
    assert result.returncode == 2
    err = result.stderr.decode()
    assert f"signature does not verify with the signing key from key file {other}" in err
    assert "was changed after signing, or it was signed with another key" in err
    monkeypatch.setenv(signing.KEY_ENV, "yet-another-key-" + "y" * 32)
    with pytest.raises(ModelLoadError, match=r"signing key from \$FASTSLOW_SIGNING_KEY"):
        load_bundle(store["path"])


def test_without_a_key_a_signed_model_is_refused_naming_the_three_ways(store, no_key, signing_key):
    with pytest.raises(ModelLoadError) as refused:
        load_bundle(store["path"])
    message = str(refused.value)
    assert f"it is signed (key id {signing_key.key_id}) but no signing key is configured here" in message
    for way in ("$FASTSLOW_SIGNING_KEY", "--signing-key-file", "models:/NAME/VERSION", "--expect-sha256 HEX",
                "--trust-unsigned", "FASTSLOW_TRUST_UNSIGNED=1"):
        assert way in message


def test_a_missing_or_short_key_file_is_a_clear_error(store, tmp_path, monkeypatch, queries):
    result = fastslow("score", queries, "--model", store["path"], "--signing-key-file", tmp_path / "nope.key")
    assert result.returncode == 2 and f"cannot read signing key file {tmp_path / 'nope.key'}" in result.stderr.decode()
    monkeypatch.setenv(signing.KEY_ENV, "short")
    with pytest.raises(ModelLoadError, match=r"\$FASTSLOW_SIGNING_KEY holds 5 bytes; a key needs at least 16"):
        load_bundle(store["path"])


# --- pins


def test_expect_sha256_loads_without_a_key_and_refuses_another_digest(store, tmp_path, no_key, queries):
    digest = sha256_of(store["path"])
    result = fastslow("score", queries, "--model", store["path"], "--expect-sha256", digest.upper())
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["model_version"] == store["run"]["model"].version
    wrong = "ab" * 32
    result = fastslow("score", queries, "--model", store["path"], "--expect-sha256", wrong, "--trust-unsigned")
    assert result.returncode == 2  # a pin is enforced even with --trust-unsigned
    assert f"its SHA-256 {digest[:12]}… is not the {wrong[:12]}… pinned by --expect-sha256" in result.stderr.decode()
    result = fastslow("score", queries, "--model", store["path"], "--expect-sha256", "not-hex")
    assert result.returncode == 2 and "is not a SHA-256 (64 hexadecimal digits)" in result.stderr.decode()


def test_expect_sha256_of_the_genuine_model_refuses_the_forged_one(store, tmp_path, queries):
    marker = tmp_path / "ran"
    forged = forge(store["path"], tmp_path / "forged", marker)
    result = fastslow("score", queries, "--model", forged, "--expect-sha256", sha256_of(store["path"]))
    assert result.returncode == 2 and "pinned by --expect-sha256" in result.stderr.decode()
    assert not marker.exists()


def test_trust_unsigned_loads_an_unsigned_model_and_says_so(store, tmp_path, queries):
    unsigned = copy_bundle(store["path"], tmp_path / "unsigned", keep_signature=False)
    result = fastslow("score", queries, "--model", unsigned)
    assert result.returncode == 2 and "its manifest has no signature" in result.stderr.decode()
    result = fastslow("score", queries, "--model", unsigned, "--trust-unsigned")
    assert result.returncode == 0, result.stderr
    assert "loading a model nothing vouches for" in result.stderr.decode()
    assert json.loads(result.stdout)["label"] == "快"
    result = fastslow("eval", "data/fixtures/routing_v1.jsonl", "--model", unsigned, env={"FASTSLOW_TRUST_UNSIGNED": "1"})
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
    result = fastslow("score", queries, "--model", uri, "--expect-sha256", "ab" * 32)
    assert result.returncode == 2
    assert (f"the registry (fastslow version {version.version}, tag bundle_sha256) pins {digest[:12]}… but "
            f"--expect-sha256 pins abababababab…: no file matches both") in result.stderr.decode()

    marker = tmp_path / "ran"
    forge(resolved.path, tmp_path / "forged", marker, keep_signature=False)
    for name in ("fastslow.joblib", "fastslow.manifest.json"):  # the attacker rewrites the cached download
        shutil.copy(tmp_path / "forged" / name, resolved.path.parent / name)
    result = fastslow("score", queries, "--model", uri, "--trust-unsigned", env={"FASTSLOW_CACHE": str(tmp_path / "cache")})
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


def test_train_creates_a_private_local_key_once_and_signs_with_it(tmp_path, monkeypatch):
    monkeypatch.delenv(signing.KEY_FILE_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    key, created = signing.ensure_key()
    path = tmp_path / "config" / "fastslow" / "signing.key"
    assert created == path and key.source == f"key file {path}"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(path.read_text().strip()) == 64
    assert signing.ensure_key() == (key, None) and signing.configured_key() == key
    monkeypatch.setenv(signing.KEY_ENV, "k" * 32)  # the environment's key wins and no file is made
    assert signing.ensure_key() == (signing.SigningKey(b"k" * 32, "$FASTSLOW_SIGNING_KEY"), None)


def test_train_signs_with_the_key_file_it_is_given(tmp_path):
    from fastslow.models.lifecycle import training as train

    args = train.build_parser().parse_args(["--signing-key-file", str(tmp_path / "team.key")])
    key, created = signing.ensure_key(args.signing_key_file)
    assert created == tmp_path / "team.key" and signing.configured_key(tmp_path / "team.key") == key
