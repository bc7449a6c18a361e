"""The blind sets are scored in every train.py run (figures only, never their rows or errors), never
trained on; the router's temperature is fitted on the calibration set; risk-coverage figures.

These tests never print a blind row: they count, and assert on counts."""

import copy
from pathlib import Path

import mlflow
import numpy as np
import pytest
from conftest import never_trained_on, sample_rows, small_train, write_jsonl
from fastslow.models.automation.data import AUTOMATION_BLIND_FILE, load_automation
from fastslow.models.automation.metrics import evaluate_automation
from fastslow.models.lifecycle.dataset import (
    BLIND_FILE,
    CALIBRATION_FILE,
    DEV_FILE,
    EXTRA_DEV_FILES,
    RETIRED_BLIND_FILE,
    DataError,
    load_blind,
    load_labelled,
    load_training,
    query_key,
    without,
)
from fastslow.models.lifecycle.extra_data import ExtraDataError
from fastslow.models.lifecycle.training import (
    calibration_halves,
    fit_temperature,
    held_out_name,
    held_out_sets,
    score_held_out,
)
from fastslow.models.routing.metrics import risk_coverage

ROUTING_BLIND_METRICS = ("label_accuracy", "label_macro_f1", "code_accuracy", "fast_precision", "confidence_gap",
                         "mean_confidence", "ece", "accuracy_at_100_coverage", "accuracy_at_90_coverage",
                         "accuracy_at_80_coverage")
AUTOMATION_BLIND_METRICS = ("group_exact", "group_exact_no_intent", "condition_exact", "group_structure")


def count_shared(rows, held_out) -> int:
    """How many of ``rows`` have a query of ``held_out`` (a number: an assertion never shows the queries)."""
    keys = {query_key(r) for r in held_out}
    return sum(query_key(r) in keys for r in rows)


def test_every_run_logs_the_blind_figures_and_no_blind_rows(trained, tmp_path):
    metrics = trained["metrics"]
    blind_n = len(load_blind(BLIND_FILE))
    assert metrics["blind_n"] == blind_n > 0
    assert metrics["automation_blind_n"] == len(load_blind(AUTOMATION_BLIND_FILE, load_automation)) > 0
    run = mlflow.tracking.MlflowClient(trained["tracking_uri"]).get_run(trained["run_id"])
    for name in ROUTING_BLIND_METRICS:
        assert f"blind_{name}" in run.data.metrics, name
        assert run.data.metrics[f"blind_{name}"] == pytest.approx(metrics[f"blind_{name}"])
    for name in AUTOMATION_BLIND_METRICS:
        assert 0.0 <= run.data.metrics[f"automation_blind_{name}"] <= 1.0
    # the "built-in behaviours not proposed as tasks": a count of a total, figures only
    assert 0 <= run.data.metrics["automation_blind_builtin_recognised"] <= run.data.metrics["automation_blind_builtin_total"]
    assert run.data.metrics["automation_dev_builtin_total"] == metrics["automation_dev_builtin_total"] > 0
    assert run.data.metrics["blind_confidence_gap"] == pytest.approx(
        metrics["blind_mean_confidence"] - metrics["blind_label_accuracy"], abs=2e-4)
    assert run.data.params["blind_digest"]
    assert run.data.params["calibration"] == "routing_calibration.jsonl, halves cross-fitted"
    client = mlflow.tracking.MlflowClient(trained["tracking_uri"])
    names = [a.path for a in client.list_artifacts(trained["run_id"], "evaluation")]
    assert "evaluation/risk_coverage.csv" in names
    # no misclassified rows, per-code or per-rule tables of the blind sets (the retired ones, dev_blind_*, are dev sets)
    assert not [n for n in names if n.split("/")[-1].startswith(("blind", "automation_blind"))]
    assert "evaluation/dev_blind_v1_misclassified.jsonl" in names
    local = client.download_artifacts(trained["run_id"], "evaluation/risk_coverage.csv", str(tmp_path))
    table = Path(local).read_text(encoding="utf-8").splitlines()
    assert table[0] == "set,coverage,n,accuracy,mean_confidence,threshold"
    sizes = {"dev": len(load_labelled(DEV_FILE)),
             **{held_out_name(path): len(load_labelled(path)) for path in EXTRA_DEV_FILES},
             "calibration": len(load_labelled(CALIBRATION_FILE)),
             "blind": blind_n}
    assert {"dev_blind_v1", "dev_blind_v2", "dev_v2"} <= sizes.keys()
    assert [line.split(",")[:3] for line in table[1:]] == [
        [name, str(coverage), str(int(np.ceil(coverage * n)))] for name, n in sizes.items() for coverage in (1.0, 0.9, 0.8)]


def test_the_model_never_trained_on_a_blind_query(trained):
    blind = load_blind(BLIND_FILE)
    # nor on a query of the extra dev sets or the calibration set
    kept, dropped = without(load_training(), never_trained_on())
    assert count_shared(load_training(), blind) > 0 and dropped > count_shared(load_training(), blind)
    assert trained["model"].info["train_rows"] == len(kept) == len(load_training()) - dropped
    assert count_shared(kept, blind) == count_shared(kept, load_labelled(CALIBRATION_FILE)) == 0


def test_train_prints_the_blind_set_in_its_tables(tmp_path, capsys, store_in):
    tiny = write_jsonl(tmp_path / "tiny" / "core.jsonl", sample_rows(300, seed=2))  # the tables, not the model, are tested
    small_train(tmp_path, store_in(tmp_path), "--train-dir", str(tiny.parent))
    out = capsys.readouterr().out.splitlines()
    summary = [line for line in out if line.startswith("blind ")]
    assert len(summary) == 3  # the routing table, the router-vs-baseline table and the risk-coverage table
    assert summary[0].split()[1] == str(len(load_blind(BLIND_FILE)))
    assert any(line.startswith("risk–coverage") and "fitted on routing_calibration.jsonl," in line for line in out)


def test_a_blind_query_in_the_corpus_is_left_out_and_in_extra_data_refused_without_being_shown(tmp_path, capsys,
                                                                                                 store_in):
    picked = sample_rows(3, seed=5)
    blind = write_jsonl(tmp_path / "my_blind.jsonl", picked)
    # a small corpus of core rows (the training set of the run) holding the blind rows and some held-out ones
    held_out = [r for path in (*EXTRA_DEV_FILES, CALIBRATION_FILE) for r in load_labelled(path)]
    corpus = write_jsonl(tmp_path / "corpus" / "core.jsonl", sample_rows(300, seed=6) + picked + held_out[:2])
    result = small_train(tmp_path, store_in(tmp_path), "--blind", str(blind),
                         "--train-dir", str(corpus.parent), "--dev-also", *map(str, EXTRA_DEV_FILES))
    training = load_training(corpus.parent)
    expected = count_shared(training, load_labelled(blind))
    # the queries of the extra dev and the calibration sets are never trained on either
    others = count_shared(without(training, load_labelled(blind))[0], held_out)
    assert expected >= 3 and others >= 2
    assert result["model"].info["train_rows"] == len(training) - expected - others
    assert f"({expected} bundled training rows left out: their query is in the blind set my_blind.jsonl)" \
        in capsys.readouterr().out
    assert result["metrics"]["blind_n"] == 3

    extra = write_jsonl(tmp_path / "extra.jsonl", [{**picked[1], "source": "x"}])
    with pytest.raises(ExtraDataError) as err:
        small_train(tmp_path, store_in(tmp_path), "--blind", str(blind), "--data", str(extra))
    message = str(err.value)
    assert f"{extra}:1: this query is in the blind set my_blind.jsonl, which is never trained on" in message
    assert picked[1]["query"] not in message


def test_extra_data_repeating_an_extra_dev_or_the_calibration_set_is_refused_naming_the_row(tmp_path):
    held_out = [load_labelled(EXTRA_DEV_FILES[0])[0], load_labelled(CALIBRATION_FILE)[0]]
    extra = write_jsonl(tmp_path / "extra.jsonl", [{**sample_rows(1, seed=3)[0], "source": "x"}] + held_out)
    with pytest.raises(ExtraDataError) as err:
        small_train(tmp_path, f"sqlite:///{tmp_path / 'mlflow.db'}", "--data", str(extra),  # refused first
                    "--dev-also", *map(str, EXTRA_DEV_FILES))
    message = str(err.value)
    assert f"{extra}:2: " in message and f"set {EXTRA_DEV_FILES[0].name}, which is never trained on" in message
    assert f"{extra}:3: " in message and f"calibration set {CALIBRATION_FILE.name}, which is never trained on" in message
    assert f"{extra}:1: " not in message


def test_a_bad_blind_row_is_counted_never_shown(tmp_path):
    path = write_jsonl(tmp_path / "blind.jsonl", [{"query": "秘密的问题", "label": "快", "primary_reason_code": "NOPE"}])
    with pytest.raises(DataError) as err:
        load_blind(path)
    assert str(err.value).startswith(f"1 bad row(s) in {path}") and "秘密" not in str(err.value)
    assert "NOPE" not in str(err.value)


def test_automation_rows_without_markup_load_and_score(model, tmp_path):
    path = write_jsonl(tmp_path / "groups_only.jsonl", [
        {"query": "上车时打开空调", "expected": [{"condition": "上车时", "querys": [{"subquery": "打开空调", "intent": "设备控制"}]}]},
        {"query": "导航回家", "expected": [{"condition": None, "querys": [{"subquery": "导航回家", "intent": None}]}]}])
    rows = load_automation(path)
    assert [r["spans"] for r in rows] == [None, None] and [r["markup"] for r in rows] == [None, None]
    ev = evaluate_automation(model.automation, rows, "x")
    assert ev.metrics["automation_x_n"] == 2 and ev.metrics["automation_x_group_exact"] == 1.0
    assert not [k for k in ev.metrics if "span" in k or "oracle" in k]


# ------------------------------------------------------------------------------------------ calibration


def test_risk_coverage_is_the_accuracy_of_the_most_confident_rows():
    confidence = np.array([0.95, 0.2, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.1])
    correct = np.array([1, 0, 1, 1, 1, 1, 1, 1, 0, 1], dtype=bool)
    points = risk_coverage(confidence, correct)
    assert [(p["coverage"], p["n"], p["accuracy"]) for p in points] == [(1.0, 10, 0.8), (0.9, 9, 0.7778), (0.8, 8, 0.875)]
    assert points[2]["threshold"] == 0.6 and points[2]["mean_confidence"] == pytest.approx(0.775)


def test_the_temperature_is_fitted_on_held_out_rows_each_scored_cross_fitted(model):
    dev = load_labelled(DEV_FILE)
    a, b = calibration_halves(dev)
    assert sorted(a + b) == list(range(len(dev))) and abs(len(a) - len(b)) < len(dev) * 0.15
    assert not {query_key(dev[i]) for i in a} & {query_key(dev[i]) for i in b}
    assert calibration_halves(dev) == (a, b)

    trial = copy.deepcopy(model)
    records, temperatures = fit_temperature(trial, dev)
    # the router reads each query's automation groups, as the model passes them (``with_parses``)
    full = copy.deepcopy(model.router).calibrate(model.with_parses(dev), [r["primary_reason_code"] for r in dev])
    assert full.temperature_ == pytest.approx(temperatures["temperature"], abs=1e-4)
    # half b is scored with the temperature fitted on half a (logged rounded to 4 decimals)
    trial.router.temperature_ = temperatures["temperature_half_a"]
    rescored = trial.score([dev[i] for i in b])
    assert [(r["label"], r["primary_reason_code"]) for r in rescored] == \
        [(records[i]["label"], records[i]["primary_reason_code"]) for i in b]
    assert np.allclose([r["confidence"] for r in rescored], [records[i]["confidence"] for i in b], atol=2e-3)
    assert not np.allclose([r["confidence"] for r in rescored], [r["confidence"] for r in model.score([dev[i] for i in b])])
    assert temperatures["temperature_half_a"] != temperatures["temperature_half_b"]


def test_fixtures_stay_at_full_label_accuracy(trained):
    assert trained["metrics"]["fixture_label_accuracy"] == 1.0


def test_the_temperature_is_fitted_on_the_calibration_set_alone(model, trained):
    """train.py fits the temperature on the calibration set (written from the specs alone, never studied),
    scores it cross-fitted, and scores dev and the retired blind set (studied: easier than new speech,
    they would sharpen the temperature) with the temperature it keeps."""
    sets = held_out_sets(DEV_FILE, [RETIRED_BLIND_FILE], [CALIBRATION_FILE])
    assert [(s.name, s.fits_temperature, len(s.rows)) for s in sets] == [
        ("dev", False, len(load_labelled(DEV_FILE))), ("dev_blind_v1", False, len(load_labelled(RETIRED_BLIND_FILE))),
        ("calibration", True, len(load_labelled(CALIBRATION_FILE)))]
    trial = copy.deepcopy(model)
    records, temperatures = score_held_out(trial, sets)
    calibration = sets[2].rows
    alone = copy.deepcopy(model.router).calibrate(model.with_parses(calibration),
                                                  [r["primary_reason_code"] for r in calibration])
    assert trial.router.temperature_ == pytest.approx(alone.temperature_) == pytest.approx(model.router.temperature_)
    assert temperatures["temperature"] == pytest.approx(alone.temperature_, abs=1e-4)
    cross_fitted, _ = fit_temperature(copy.deepcopy(model), calibration)
    assert [r["confidence"] for r in records["calibration"]] == [r["confidence"] for r in cross_fitted]
    assert [r["confidence"] for r in records["dev_blind_v1"]] == [r["confidence"] for r in model.score(sets[1].rows)]
    metrics = trained["metrics"]
    assert metrics["calibration_n"] == len(calibration) and metrics["dev_blind_v1_n"] == len(sets[1].rows)
    assert metrics["calibration_confidence_gap"] == pytest.approx(
        metrics["calibration_mean_confidence"] - metrics["calibration_label_accuracy"], abs=2e-4)


def test_held_out_sets_are_named_by_file_listed_once_and_dev_calibrates_when_nothing_else_does():
    assert [held_out_name(Path(p)) for p in ("x/routing_blind_v1.jsonl", "routing_dev_v2.jsonl",
                                              "routing_calibration.jsonl", "reviewed.jsonl")] == \
        ["dev_blind_v1", "dev_v2", "calibration", "dev_reviewed"]
    alone = held_out_sets(DEV_FILE, [RETIRED_BLIND_FILE], [])
    assert [(s.name, s.fits_temperature) for s in alone] == [("dev", True), ("dev_blind_v1", False)]
    # a file given twice is one set; dev named as a calibration set fits the temperature as dev
    twice = held_out_sets(DEV_FILE, [RETIRED_BLIND_FILE, DEV_FILE], [DEV_FILE, RETIRED_BLIND_FILE])
    assert [(s.name, s.fits_temperature) for s in twice] == [("dev", True), ("dev_blind_v1", True)]
