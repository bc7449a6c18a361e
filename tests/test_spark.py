"""Beyond one machine: the MLflow pyfunc model that train.py logs scores a Spark DataFrame through
``mlflow.pyfunc.spark_udf`` into exactly the records ``fastslow score`` writes."""

import io
import json
import os
import sys

import pandas as pd
import pytest

from fastslow.models.lifecycle.dataset import DEV_FILE, load_labelled
from fastslow.serve.batch import BatchOptions, run_batch

pytestmark = pytest.mark.spark


#: the user's current tasks: capture proposes an enrichment of the first and an update of the second
TASKS = json.dumps([{"id": "t-ac", "name": "上车开空调", "condition": "上车时",
                     "querys": [{"subquery": "打开空调", "intent": "设备控制"}]},
                    {"id": 42, "name": "上车习惯", "condition": "上车时", "querys": [{"subquery": "打开空调"}]}],
                   ensure_ascii=False)


def dev_rows(n: int) -> list[dict]:
    """Dev queries with every input field (``context`` and ``existing_tasks`` as JSON text, as a table
    holds them), and two rows that are errors."""
    rows = [{"id": f"d{i}", "query": r["query"], "endpoint": r["endpoint"],
             "context": json.dumps(r["context"], ensure_ascii=False) if r["context"] else None,
             "existing_tasks": TASKS if i % 3 == 0 else None}
            for i, r in enumerate(load_labelled(DEV_FILE)[:n])]
    rows += [{"id": "enrich", "query": "上车时打开空调", "endpoint": "car", "context": None, "existing_tasks": TASKS},
             {"id": "update", "query": "修改上车习惯，上车时打开座椅加热", "endpoint": "car", "context": None,
              "existing_tasks": TASKS},
             {"id": "empty", "query": "  ", "endpoint": None, "context": None, "existing_tasks": None},
             {"id": "moon", "query": "开空调", "endpoint": "moon", "context": None, "existing_tasks": None}]
    return rows


def cli_lines(rows, tmp_path, model_path) -> list[str]:
    source, out = tmp_path / "in.csv", tmp_path / "out.jsonl"
    pd.DataFrame(rows).to_csv(source, index=False)
    assert run_batch(BatchOptions(str(source), out, model=model_path, jobs=1), stderr=io.StringIO()) == 0
    return out.read_text(encoding="utf-8").splitlines()


def without_line(line: str) -> dict:
    """A CLI record as the UDF gives it: error records of a file carry their line; a DataFrame has none."""
    record = json.loads(line)
    if "error" in record:
        record.pop("line")
        record["error"] = record["error"].split(": ", 1)[1]
    return record


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers run this Python (a venv's)
    session = (SparkSession.builder.master("local[2]").appName("fastslow-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    yield session
    session.stop()


def test_spark_udf_of_the_logged_model_gives_the_cli_records(trained, tmp_path, spark, monkeypatch):
    import mlflow
    from pyspark.sql.functions import struct

    monkeypatch.setenv("MLFLOW_TRACKING_URI", trained["tracking_uri"])
    monkeypatch.setattr(mlflow.tracking._tracking_service.utils, "_tracking_uri", trained["tracking_uri"])
    rows = dev_rows(300)
    frame = spark.createDataFrame(rows, schema="id string, query string, endpoint string, context string, "
                                               "existing_tasks string")
    # the registered champion is the run's pyfunc model (train.py registers it), so its alias works here
    assert mlflow.MlflowClient().get_model_version_by_alias("fastslow", "champion").run_id == trained["run_id"]
    udf = mlflow.pyfunc.spark_udf(spark, "models:/fastslow@champion", result_type="string")
    scored = frame.repartition(2).withColumn("record", udf(struct("query", "id", "context", "endpoint", "existing_tasks")))
    by_id = {r["id"]: r["record"] for r in scored.select("id", "record").collect()}
    assert len(by_id) == len(rows) == 304

    expected = cli_lines(rows, tmp_path, trained["path"])
    assert [json.loads(line)["id"] for line in expected] == [r["id"] for r in rows]
    for row, line in zip(rows, expected):
        if "error" in json.loads(line):
            assert json.loads(by_id[row["id"]]) == without_line(line)
        else:
            assert by_id[row["id"]] == line  # byte for byte the CLI's line
    assert json.loads(by_id["moon"])["error"].startswith("endpoint: must be one of")
    assert sum("error" not in json.loads(v) for v in by_id.values()) == 302
    # existing_tasks reach the model on Spark: an enrichment and an update of the user's tasks are proposed
    assert ("propose_enrichment", "t-ac") in {(c["outcome"], c.get("target_task_id"))
                                              for c in json.loads(by_id["enrich"])["candidates"]}
    assert ("propose_update", "42") in {(c["outcome"], c.get("target_task_id"))
                                        for c in json.loads(by_id["update"])["candidates"]}
