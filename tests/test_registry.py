"""The model registry: every run registers a version; `champion` moves only through the fixture gate
(fixture metrics not below the champion's, capture conformance 100%); `fastslow models` and `fastslow
promote`; `models:/fastslow@champion` wherever a model path is accepted. Runs are real `train.run`s on
small data (router only) in a throw-away SQLite store."""

import contextlib
import io
import json
import sys

import pytest
from conftest import sample_rows, small_train, write_jsonl

from fastslow.models.lifecycle import registry
from fastslow.models.capture.contract import CAPTURE_FIXTURE_FILE
from fastslow.models.lifecycle.dataset import DEV_FILE, FIXTURE_FILE, load_labelled
from fastslow import cli

EXTRA = [
    {"query": "帮我把后排出风口关小一点", "label": "快", "primary_reason_code": "DIRECT_ACTION", "endpoint": "car"},
    {"query": "周末带爸妈去哪里玩比较好", "label": "慢", "primary_reason_code": "MULTI_STEP_PLANNING"},
    {"query": "你们这车的续航是怎么算的", "label": "模糊", "primary_reason_code": "PRODUCT_KNOWLEDGE"},
]

BIGGER_ROWS = 600


@pytest.fixture(scope="module")
def store(tmp_path_factory, monkeypatch_module, store_in):
    """Four runs: (1) a tiny corpus plus an extra file, with 2-fold CV; (2) a bigger corpus alone (better);
    (3) the tiny corpus alone (worse); (4) the bigger corpus again with a broken capture contract."""
    folder = tmp_path_factory.mktemp("registry")
    uri = store_in(folder)
    monkeypatch_module.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch_module.setenv("FASTSLOW_CACHE", str(folder / "cache"))
    tiny = sample_rows(120, seed=7)
    write_jsonl(folder / "tiny" / "core.jsonl", tiny)
    extra = write_jsonl(folder / "reviewed.jsonl", EXTRA)
    bigger = write_jsonl(folder / "bigger.jsonl", sample_rows(BIGGER_ROWS, seed=11))  # clearly better than tiny
    contract = json.loads(CAPTURE_FIXTURE_FILE.read_text(encoding="utf-8"))
    contract["cases"][0]["expected"]["outcome"] = "ignore"  # was pending_candidate: the policy now fails one check
    broken = folder / "capture_broken.json"
    broken.write_text(json.dumps(contract, ensure_ascii=False), encoding="utf-8")
    stderr = []
    with contextlib.redirect_stderr(io.StringIO()) as err:  # the stage lines of the first run, kept for a test
        runs = [small_train(folder / "r1", uri, "--train-dir", str(folder / "tiny"), "--data", str(extra), "--cv", "2",
                            plots=True)]
    sys.stderr.write(err.getvalue())
    stderr.append(err.getvalue())
    runs += [small_train(folder / "r2", uri, "--only", "--data", str(bigger)),
             small_train(folder / "r3", uri, "--only", "--data", str(folder / "tiny" / "core.jsonl")),
             small_train(folder / "r4", uri, "--only", "--data", str(bigger), "--capture-fixture", str(broken))]
    return {"uri": uri, "runs": runs, "folder": folder, "client": registry.client(uri), "stderr": stderr}


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def champion(store):
    return str(registry.champion_version(store["client"], "fastslow").version)


# --- the gate, as a pure function

def test_gate_needs_full_capture_and_no_fixture_metric_below_the_champion():
    best = {"capture_conformance": 1.0, "fixture_label_accuracy": 0.95, "fixture_code_accuracy": 0.9,
            "automation_fixture_group_exact": 1.0}
    assert registry.gate(best, None) == []
    assert registry.gate(best, best) == []                       # equal is not below
    assert registry.gate({**best, "capture_conformance": 0.96}, best) == ["capture conformance 0.960 < 1.000"]
    assert registry.gate({**best, "fixture_code_accuracy": 0.875}, best) == [
        "fixture_code_accuracy 0.875 < champion 0.900"]
    lacking = {k: v for k, v in best.items() if k != "automation_fixture_group_exact"}
    assert registry.gate(lacking, best) == ["automation_fixture_group_exact missing (champion 1.000)"]
    assert registry.gate({"fixture_label_accuracy": 1.0}, None) == ["capture conformance missing < 1.000"]
    assert registry.gate(best, lacking) == []                    # the champion's missing metrics are not compared


# --- each run: datasets, CV, model card, registration

def test_extra_rows_are_counted_in_the_runs_training_dataset(store):
    run = store["client"].get_run(store["runs"][0]["run_id"])
    inputs = {d.dataset.name: d for d in run.inputs.dataset_inputs}
    rows = {name: json.loads(d.dataset.profile)["num_rows"] for name, d in inputs.items()}
    assert rows["routing_train"] == 120 + len(EXTRA)
    assert rows["extra:reviewed.jsonl"] == len(EXTRA)
    assert rows["routing_fixture"] == len(load_labelled(FIXTURE_FILE))
    assert rows["routing_dev"] == len(load_labelled(DEV_FILE))
    assert {d.dataset.name: d.tags[0].value for d in run.inputs.dataset_inputs}["routing_fixture"] == "fixture"
    assert json.loads(inputs["extra:reviewed.jsonl"].dataset.source)["uri"].endswith("reviewed.jsonl")
    assert run.data.params["train_rows"] == str(123)
    assert store["runs"][0]["extra"].counts[str(store["folder"] / "reviewed.jsonl")] == {"routing": 3, "automation": 0}


def test_cross_validation_logs_mean_and_std(store):
    metrics = store["client"].get_run(store["runs"][0]["run_id"]).data.metrics
    for name in ("label_accuracy", "label_macro_f1", "code_accuracy", "ece"):
        assert 0.0 <= metrics[f"cv_{name}_mean"] <= 1.0 and metrics[f"cv_{name}_std"] >= 0.0
    assert "cv_label_accuracy_mean" not in store["client"].get_run(store["runs"][1]["run_id"]).data.metrics


def test_each_run_logs_its_tables_and_a_model_card(store):
    from mlflow.artifacts import download_artifacts

    run_id = store["runs"][1]["run_id"]
    names = {a.path for a in store["client"].list_artifacts(run_id, "evaluation")}
    for name in ("dev_per_reason_code.csv", "dev_confusion_label.csv", "dev_misclassified.jsonl",
                 "fixture_confusion_code.csv"):
        assert f"evaluation/{name}" in names
    model = {a.path for a in store["client"].list_artifacts(run_id, "model")}
    assert model == {"model/fastslow.joblib", "model/fastslow.manifest.json", "model/fastslow.model_card.md"}
    card = open(download_artifacts(run_id=run_id, artifact_path="model/fastslow.model_card.md",
                                   dst_path=str(store["folder"] / "dl")), encoding="utf-8").read()
    beside = (store["folder"] / "r2" / "fastslow.model_card.md").read_text(encoding="utf-8")
    assert card == beside
    for heading in ("## Intended use", "## Data", "## Metrics", "## Known weaknesses"):
        assert heading in card
    assert f"MLflow run `{run_id}`" in card and f"| routing_train | training | {BIGGER_ROWS} |" in card
    worst = store["runs"][1]["metrics"]
    assert f"| dev | {len(load_labelled(DEV_FILE))} | {worst['dev_label_accuracy']:.3f} |" in card
    assert "F1" in card.split("## Known weaknesses")[1]   # the worst reason codes on dev, by name


# --- the champion gate on real runs

def test_the_first_version_is_champion_a_better_one_takes_over(store):
    first, better = store["runs"][0], store["runs"][1]
    assert (first["registered_version"], first["refused"]) == ("1", [])
    assert (better["registered_version"], better["refused"]) == ("2", [])
    for name in ("fixture_label_accuracy", "fixture_code_accuracy"):
        assert better["metrics"][name] >= first["metrics"][name]
    assert champion(store) == "2"


def test_a_worse_model_is_registered_but_not_champion(store):
    worse = store["runs"][2]
    assert worse["registered_version"] == "3"
    assert worse["metrics"]["fixture_code_accuracy"] < store["runs"][1]["metrics"]["fixture_code_accuracy"]
    assert any(r.startswith("fixture_code_accuracy ") and "< champion" in r for r in worse["refused"])


def test_a_model_below_full_capture_conformance_is_refused_whatever_its_metrics(store):
    candidate = store["runs"][3]
    assert candidate["metrics"]["capture_conformance"] < 1.0
    for name in registry.GATE_METRICS:  # the same data and settings as the champion: the same fixture metrics
        if name in store["runs"][1]["metrics"]:
            assert candidate["metrics"][name] == store["runs"][1]["metrics"][name]
    assert len(candidate["refused"]) == 1 and candidate["refused"][0].startswith("capture conformance 0.")
    assert champion(store) == "2"


def test_fastslow_models_lists_versions_with_fixture_metrics_and_alias(store, capsys):
    assert cli.main(["models", "-v"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["version", "run"]
    rows = {line.split()[0]: line for line in lines[2:6]}
    assert set(rows) == {"1", "2", "3", "4"}
    assert rows["2"].rstrip().endswith("champion") and not rows["3"].rstrip().endswith("champion")
    assert store["runs"][1]["run_id"] in rows["2"]
    assert f"{store['runs'][1]['metrics']['fixture_code_accuracy']:.3f}" in rows["2"]
    assert "version 3: refused (against version 2): fixture_" in out


def test_promote_applies_the_gate_unless_forced(store, capsys):
    assert cli.main(["promote", "3"]) == 2
    assert "version 3 is not promoted: fixture_" in capsys.readouterr().err
    assert champion(store) == "2"
    assert cli.main(["promote", "4"]) == 2 and "capture conformance" in capsys.readouterr().err
    assert cli.main(["promote", "3", "--force"]) == 0
    assert "forced over: fixture_" in capsys.readouterr().out
    assert champion(store) == "3"
    assert cli.main(["promote", "2"]) == 0 and champion(store) == "2"   # back: 2 is not below 3
    assert cli.main(["promote", "9"]) == 2 and "no version 9" in capsys.readouterr().err


# --- models:/ URIs

def test_score_and_the_server_accept_the_champion_uri(store, tmp_path, capsys):
    from fastslow.serve.server import resolve_model_path

    path = registry.resolve_model("models:/fastslow@champion")
    assert path.is_file() and store["runs"][1]["run_id"] in str(path)
    assert registry.resolve_model("models:/fastslow/2") == path == resolve_model_path("models:/fastslow@champion")
    queries = write_jsonl(tmp_path / "q.jsonl", [{"id": 1, "query": "打开空调"}])
    assert cli.main(["score", str(queries), "-o", str(tmp_path / "out.jsonl"), "--model", "models:/fastslow@champion"]) == 0
    record = json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8"))
    assert record["model_version"] == store["runs"][1]["model"].version


def test_an_unknown_alias_or_version_is_refused_clearly(store, capsys):
    from fastslow.models.lifecycle.bundle import ModelLoadError
    from fastslow.serve.server import resolve_model_path

    with pytest.raises(registry.RegistryError, match="models:/fastslow@nope: Registered model alias nope not found"):
        registry.resolve_model("models:/fastslow@nope")
    with pytest.raises(ModelLoadError, match="models:/fastslow/42"):
        resolve_model_path("models:/fastslow/42")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["eval", "data/fixtures/routing_v1.jsonl", "--model", "models:/other@champion"])
    assert exit_.value.code == 2
    assert "fastslow: models:/other@champion: Registered Model with name=other not found" in capsys.readouterr().err


def test_a_tampered_download_is_refused_by_its_sha256(store):
    from fastslow.models.lifecycle.bundle import ModelLoadError, load_bundle

    path = registry.resolve_model("models:/fastslow/1")
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(ModelLoadError, match="does not match the manifest"):
        load_bundle(registry.resolve_model("models:/fastslow/1"))


def test_gate_tolerates_dev_noise_but_not_a_dev_drop():
    best = {"capture_conformance": 1.0, "fixture_label_accuracy": 1.0, "dev_label_macro_f1": 0.939,
            "automation_dev_group_exact": 0.977}
    assert registry.gate({**best, "dev_label_macro_f1": 0.934}, best) == []  # a few rows: retraining noise
    assert registry.gate({**best, "dev_label_macro_f1": 0.90}, best) == [
        "dev_label_macro_f1 0.900 < champion 0.939 - 0.02"]
    assert registry.gate({**best, "automation_dev_group_exact": 0.90}, best) == [
        "automation_dev_group_exact 0.900 < champion 0.977 - 0.02"]


# --- what a newcomer compares versions by

def test_fastslow_models_shows_blind_and_calibration_figures_per_version(store, capsys):
    assert cli.main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines[0].split()
    rows = {line.split()[0]: line.split() for line in lines[2:6]}
    metrics = store["runs"][1]["metrics"]
    for heading, name in (("b.label", "blind_label_accuracy"), ("b.ECE", "blind_ece"), ("c.label", "calibration_label_accuracy"),
                          ("c.ECE", "calibration_ece")):
        assert rows["2"][head.index(heading) - 1] == f"{metrics[name]:.3f}"   # - 1: the heading "run id" is two words


def test_models_diff_puts_two_versions_side_by_side(store, capsys):
    assert cli.main(["models", "diff", "3", "2"]) == 0
    out = capsys.readouterr().out
    a, b = store["runs"][2]["metrics"], store["runs"][1]["metrics"]
    assert out.splitlines()[0].startswith("version 3 (run ") and "→ version 2 (run " in out.splitlines()[0]
    assert "train_rows" in out.split("parameters that differ:")[1].split("metric")[0]
    line = next(x for x in out.splitlines() if x.startswith("blind_label_accuracy "))
    assert line.split() == ["blind_label_accuracy", f"{a['blind_label_accuracy']:.3f}", f"{b['blind_label_accuracy']:.3f}",
                            f"{b['blind_label_accuracy'] - a['blind_label_accuracy']:+.3f}"]
    assert not any(x.startswith("train_label_accuracy") for x in out.splitlines())   # headline figures only
    assert cli.main(["models", "diff", "3", "2", "--all"]) == 0
    assert any(x.startswith("train_label_accuracy") for x in capsys.readouterr().out.splitlines())
    assert cli.main(["models", "diff", "3", "9"]) == 2 and "no version 9" in capsys.readouterr().err
    assert cli.main(["models", "diff", "3"]) == 2 and "models diff A B" in capsys.readouterr().err


def test_each_run_logs_confusion_matrices_a_reliability_diagram_and_a_risk_coverage_curve(store):
    """Every run draws its pictures, but a run with ``--no-plots`` (all but the first), which logs the same tables."""
    from fastslow.models.lifecycle.training import RELIABILITY_PNG, RISK_COVERAGE_PNG

    for k, run in enumerate(store["runs"]):
        artifacts = store["client"].list_artifacts(run["run_id"], "evaluation")
        pictures = {a.path.rsplit("/", 1)[1]: a.file_size for a in artifacts if a.path.endswith(".png")}
        assert "evaluation/dev_confusion_code.csv" in {a.path for a in artifacts}
        if k >= 1:
            assert pictures == {}
            continue
        assert {"calibration_confusion_label.png", "dev_confusion_code.png", RELIABILITY_PNG, RISK_COVERAGE_PNG} <= set(pictures)
        assert min(pictures.values()) > 5_000   # drawn, not empty
        assert not [name for name in pictures if name.startswith(("blind", "automation_blind"))]  # no blind rows shown


def test_training_reports_its_stages_with_elapsed_time_from_the_start(store):
    lines = store["stderr"][0].splitlines()
    stages = [line for line in lines if line.startswith("train [")]
    assert stages[0].endswith("s] checking the tracking store and the signing key")
    assert any("fitting the router on" in line for line in stages) and stages[-1].endswith("s] done")
    seconds = [float(line.split("[")[1].split("s]")[0]) for line in stages]
    assert seconds == sorted(seconds)
