"""The notebooks run end to end, headless, against a small run in a throw-away tracking store, and are
committed without outputs."""

import json
from pathlib import Path

import nbformat
import pytest
from conftest import sample_rows, small_train, write_jsonl
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_three_notebooks_and_none_has_outputs():
    assert [p.name for p in NOTEBOOKS] == ["01_error_analysis.ipynb", "02_retrain_with_your_data.ipynb",
                                           "03_review_threshold.ipynb"]
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(c.outputs == [] and c.execution_count is None for c in code), path.name


@pytest.fixture(scope="module")
def small_store(tmp_path_factory, store_in):
    folder = tmp_path_factory.mktemp("notebooks")
    uri = store_in(folder)
    rows = write_jsonl(folder / "rows.jsonl", sample_rows(120, 7))
    run = small_train(folder / "model", uri, "--only", "--data", str(rows), plots=True)  # the notebook shows a picture
    env = {"FASTSLOW_TRACKING_URI": uri, "MLFLOW_TRACKING_URI": uri, "FASTSLOW_EXPERIMENT": "fastslow-tests",
           "FASTSLOW_SMALL": "1", "FASTSLOW_CACHE": str(folder / "cache")}
    return {"folder": folder, "uri": uri, "run": run, "env": env}


def execute(path, store, workdir, monkeypatch):
    for key, value in {**store["env"], "FASTSLOW_WORKDIR": str(workdir)}.items():
        monkeypatch.setenv(key, value)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}).execute()
    return "\n".join(
        "".join(o.get("text", "")) + "".join(str(v) for k, v in o.get("data", {}).items() if k == "text/plain")
        for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_error_analysis_opens_the_latest_run(small_store, tmp_path, monkeypatch):
    out = execute(NOTEBOOKS[0], small_store, tmp_path, monkeypatch)
    assert small_store["run"]["run_id"] in out
    assert "dev rows have a wrong label or code" in out and "gold_code" in out


def test_retraining_notebook_trains_on_its_file_and_compares_runs(small_store, tmp_path, monkeypatch):
    from fastslow.models.lifecycle import registry

    out = execute(NOTEBOOKS[1], small_store, tmp_path, monkeypatch)
    client = registry.client(small_store["uri"])
    runs = client.search_runs([client.get_experiment_by_name("fastslow-tests").experiment_id],
                              order_by=["attributes.start_time DESC"])
    assert len(runs) == 2 and runs[0].data.tags["mlflow.runName"] == "with my labels"
    inputs = {d.dataset.name: json.loads(d.dataset.profile)["num_rows"] for d in runs[0].inputs.dataset_inputs}
    assert inputs["extra:my_labels.csv"] == 4 and inputs["routing_train"] > 3
    assert "bad_labels.csv:2: '开空调' is in the frozen fixture routing_v1.jsonl" in out  # the stopped run's report
    assert "bad_labels.csv:3: label 慢 disagrees with DIRECT_ACTION" in out
    assert "version 2:" in out and "champion" in out


def test_threshold_notebook_counts_review_and_slow_rows_and_plots(small_store, tmp_path, monkeypatch):
    out = execute(NOTEBOOKS[2], small_store, tmp_path, monkeypatch)
    assert (tmp_path / "review_threshold.png").stat().st_size > 10_000
    assert "to review" in out and "mistakes not reviewed" in out
