"""The trained model against its targets, its MLflow run, and its saved bundle."""

import json
import shutil

import pytest
from mlflow.tracking import MlflowClient

from fastslow.models.lifecycle.bundle import ModelLoadError, load_bundle
from fastslow.models.lifecycle import signing
from fastslow.models.lifecycle.manifest import FORMAT_VERSION, manifest_path
from fastslow.models.lifecycle.dataset import DEV_FILE, FIXTURE_FILE, load_labelled
from fastslow.models.routing.metrics import evaluate


def test_frozen_fixture_all_labels_and_95_percent_of_codes(trained):
    metrics = trained["metrics"]
    assert metrics["fixture_label_accuracy"] == 1.0
    assert metrics["fixture_code_accuracy"] >= 0.95


def test_dev_set_label_macro_f1_at_least_0_90(trained):
    assert trained["metrics"]["dev_n"] >= 300
    assert trained["metrics"]["dev_label_macro_f1"] >= 0.90


def test_every_spec_example_is_routed_to_its_label(model):
    rows = load_labelled(FIXTURE_FILE)
    records = model.score(rows)
    wrong = [(r["query"], r["label"], rec["label"]) for r, rec in zip(rows, records) if r["label"] != rec["label"]]
    assert wrong == []


def test_multi_device_control_examples_aggregate_to_fast(model):
    # spec 快的规则/多个明确设备控制
    for query in ("把空调调到 24 度，然后打开座椅加热", "关客厅灯并打开空调"):
        record = model.score([{"query": query}])[0]
        assert (record["label"], record["primary_reason_code"]) == ("快", "EXPLICIT_DEVICE_MULTI_ACTION")
        assert len(record["subrequests"]) == 2


def test_a_device_said_once_for_two_controls_aggregates_to_fast_multi_action(model):
    # 多个明确设备控制, the second part by ellipsis (its device is the first part's); a space is a pause
    for query in ("主驾座椅通风打开，副驾的也打开", "座椅加热关掉 开到三档"):
        record = model.score([{"query": query, "endpoint": "car"}])[0]
        assert (record["label"], record["primary_reason_code"]) == ("快", "EXPLICIT_DEVICE_MULTI_ACTION"), query
    record = model.score([{"query": "打开空调，放首周杰伦的歌", "endpoint": "car"}])[0]
    assert record["primary_reason_code"] != "EXPLICIT_DEVICE_MULTI_ACTION"  # a song is no device


def test_a_part_naming_a_device_outside_the_routers_columns_is_a_device_control(model):
    # 多个明确设备控制: 车道保持, 自适应巡航 and 电热毯 are devices of devices.txt, not of the router's feature columns;
    # 行车记录仪 and 排气扇 are found in the text, where jieba cuts them (行车 记录仪)
    for query, endpoint in (("关闭车道保持，打开自适应巡航", "car"), ("打开电热毯，把卧室灯调暗", "home"),
                            ("打开行车记录仪 关掉哨兵模式", "car"), ("开卫生间的排气扇 关一下走廊灯", "home"),
                            ("关闭自动启停 切到运动模式", "car"), ("副驾座椅往前挪 靠背放平一点", "car")):
        record = model.score([{"query": query, "endpoint": endpoint}])[0]
        assert len(record["subrequests"]) == 2, query
        assert (record["label"], record["primary_reason_code"]) == ("快", "EXPLICIT_DEVICE_MULTI_ACTION"), query


def test_confirmation_after_slow_question_is_slow_and_without_context_needs_review(model):
    # spec 慢的规则/上下文: 前轮慢系统询问是否开启湿滑模式；当前轮"帮我开启"
    context = [{"role": "assistant", "system": "slow", "text": "路面湿滑，需要帮你开启湿滑模式吗？"}]
    with_context, without = model.score([{"query": "帮我开启", "context": context}, {"query": "帮我开启"}])
    assert with_context["label"] == "慢" and with_context["primary_reason_code"] == "CONTEXT_REQUIRED"
    assert with_context["review_required"] is False
    assert without["label"] == "慢"  # 缺少前轮而当前短句不可独立理解时，标慢并复核


def test_a_choice_with_no_earlier_turn_needs_review(model):
    record = model.score([{"query": "就第二个吧"}])[0]
    assert (record["label"], record["primary_reason_code"], record["review_required"]) == ("慢", "CONTEXT_REQUIRED", True)


def test_records_have_the_design_fields_and_derived_values(model):
    record = model.score([{"id": "r1", "query": "开空调"}])[0]
    assert list(record) == ["id", "query", "label", "default_route", "primary_reason_code", "reason_codes",
                            "confidence", "review_required", "fast_system_pending", "subrequests", "automation",
                            "candidates", "model_version"]
    assert record["id"] == "r1" and record["default_route"] == {"快": "快系统"}.get(record["label"], "慢系统")
    assert record["reason_codes"][0] == record["primary_reason_code"]
    assert 0.0 <= record["confidence"] <= 1.0 and record["fast_system_pending"] is None


def test_score_keeps_order_and_gives_every_row_a_record(model):
    rows = [{"query": "开空调"}, {"query": ""}, "not an object", {"query": "下一首", "id": 5}, {"id": 9}]
    records = model.score(rows)
    assert len(records) == 5
    assert [("error" in r) for r in records] == [False, True, True, False, True]
    assert records[3]["id"] == 5 and records[4]["id"] == 9 and "query: missing" in records[4]["error"]


def test_mlflow_run_holds_params_metrics_tables_errors_and_model(trained):
    client = MlflowClient(tracking_uri=trained["tracking_uri"])
    run = client.get_run(trained["run_id"])
    assert {"C", "seed", "train_digest", "dev_digest"} <= set(run.data.params)
    assert run.data.metrics["dev_label_macro_f1"] == trained["metrics"]["dev_label_macro_f1"]
    for code_metric in ("dev_fast_f1", "dev_slow_precision", "dev_ambiguous_recall", "fixture_code_accuracy"):
        assert code_metric in run.data.metrics
    evaluation = {f.path.split("/")[-1] for f in client.list_artifacts(run.info.run_id, "evaluation")}
    assert {"dev_confusion_label.csv", "dev_misclassified.jsonl", "dev_per_reason_code.csv"} <= evaluation
    model_files = {f.path.split("/")[-1] for f in client.list_artifacts(run.info.run_id, "model")}
    assert model_files == {"fastslow.joblib", "fastslow.manifest.json", "fastslow.model_card.md"}


def test_the_full_run_logs_its_datasets_and_becomes_the_first_champion(trained):
    from fastslow.models.automation.data import (AUTOMATION_BLIND_FILE, AUTOMATION_EXTRA_DEV_FILES, load_automation,
                                                 load_automation_training)
    from conftest import never_trained_on
    from fastslow.models.lifecycle.dataset import (CALIBRATION_FILE, DEV_V2_FILE, RETIRED_BLIND_FILE, load_blind, load_labelled,
                                                   load_training, without)

    client = MlflowClient(tracking_uri=trained["tracking_uri"])
    inputs = {d.dataset.name: (json.loads(d.dataset.profile)["num_rows"], d.tags[0].value)
              for d in client.get_run(trained["run_id"]).inputs.dataset_inputs}
    # the bundled rows whose query is in the blind, the extra dev or the calibration set are never trained on
    routing = without(load_training(), never_trained_on())[0]
    automation = without(load_automation_training(), load_blind(AUTOMATION_BLIND_FILE, load_automation)
                         + [r for path in AUTOMATION_EXTRA_DEV_FILES for r in load_automation(path)], key=lambda r: r["text"])[0]
    assert inputs["routing_train"] == (len(routing), "training")
    assert inputs["automation_train"] == (len(automation), "training")
    assert inputs["routing_blind"][1] == inputs["automation_blind"][1] == "blind"
    assert inputs["automation_fixture"] == (30, "fixture") and inputs["routing_dev"] == (396, "dev")
    assert inputs["routing_dev_blind_v1"] == (len(load_labelled(RETIRED_BLIND_FILE)), "dev")
    assert inputs["routing_dev_v2"] == (len(load_labelled(DEV_V2_FILE)), "dev")
    assert inputs["routing_calibration"] == (len(load_labelled(CALIBRATION_FILE)), "calibration")
    assert (trained["registered_version"], trained["refused"]) == ("1", [])
    assert client.get_model_version_by_alias("fastslow", "champion").run_id == trained["run_id"]


def test_manifest_records_hash_versions_and_metrics(trained):
    manifest = json.loads(manifest_path(trained["path"]).read_text(encoding="utf-8"))
    assert manifest["sha256"] == trained["manifest"]["sha256"] and len(manifest["sha256"]) == 64
    assert {"scikit-learn", "jieba", "numpy", "python"} <= set(manifest["libraries"])
    assert manifest["metrics"]["fixture_label_accuracy"] == 1.0
    assert manifest["mlflow_run_id"] == trained["run_id"]


def test_saved_model_scores_like_the_trained_one(trained, model):
    loaded = load_bundle(trained["path"])
    rows = load_labelled(DEV_FILE)[:50]
    assert loaded.score(rows) == model.score(rows)


def test_tampered_model_file_is_refused(trained, tmp_path):
    path = tmp_path / "fastslow.joblib"
    shutil.copy(trained["path"], path)
    shutil.copy(manifest_path(trained["path"]), manifest_path(path))
    with open(path, "ab") as f:
        f.write(b"\0")
    with pytest.raises(ModelLoadError, match="does not match the manifest"):
        load_bundle(path)


def test_model_without_manifest_is_refused(trained, tmp_path):
    path = tmp_path / "fastslow.joblib"
    shutil.copy(trained["path"], path)
    with pytest.raises(ModelLoadError, match="manifest .* is missing"):
        load_bundle(path)


def _bundle_of_format(trained, tmp_path, version):
    """A copy of the trained bundle whose manifest says model format ``version`` (None: no format), signed again
    with the key it was signed with, so that only its format keeps it from loading."""
    path = tmp_path / "fastslow.joblib"
    shutil.copy(trained["path"], path)
    manifest = json.loads(manifest_path(trained["path"]).read_text(encoding="utf-8"))
    manifest.pop("format_version")
    if version is not None:
        manifest["format_version"] = version
    key = signing.configured_key()
    if manifest.get(signing.SIGNATURE_FIELD) and key is not None:
        manifest[signing.SIGNATURE_FIELD] = signing.sign(manifest, key)
    manifest_path(path).write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    return path


def test_a_bundle_of_the_current_format_loads(trained, tmp_path):
    assert trained["manifest"]["format_version"] == FORMAT_VERSION
    assert load_bundle(_bundle_of_format(trained, tmp_path, FORMAT_VERSION)).score([{"query": "开空调"}])[0]["label"]


@pytest.mark.parametrize("version, said", [(FORMAT_VERSION - 1, str(FORMAT_VERSION - 1)), (None, "none")])
def test_a_bundle_of_another_or_no_format_is_refused_with_a_message_to_retrain(trained, tmp_path, version, said):
    path = _bundle_of_format(trained, tmp_path, version)
    with pytest.raises(ModelLoadError) as refused:
        load_bundle(path)
    message = str(refused.value)
    assert message == (f"refusing to load {path}: it is model format {said} (fastslow.manifest.json), this fastslow "
                       f"reads format {FORMAT_VERSION}; retrain it with `python train.py`")
    assert "\n" not in message


def test_evaluate_counts_what_the_records_say(model):
    """evaluate()'s accuracies are the shares of records whose label and code equal the gold ones,
    counted here from the records themselves (on the dev set, where the model makes mistakes)."""
    rows = load_labelled(DEV_FILE)
    records = model.score([{k: r[k] for k in ("query", "context", "endpoint")} for r in rows])
    label_hits = sum(rec["label"] == row["label"] for rec, row in zip(records, rows))
    code_hits = sum(rec["primary_reason_code"] == row["primary_reason_code"] for rec, row in zip(records, rows))
    assert 0 < label_hits < len(rows)
    ev = evaluate(model, rows, "dev")
    assert ev.metrics["dev_n"] == len(rows)
    assert ev.metrics["dev_label_accuracy"] == pytest.approx(label_hits / len(rows), abs=5e-5)  # metrics keep 4 decimals
    assert ev.metrics["dev_code_accuracy"] == pytest.approx(code_hits / len(rows), abs=5e-5)


def test_the_row_by_row_inference_path_equals_the_fitted_scikit_learn_pipeline(model):
    """``Router.features`` (each extractor's ``append_row`` into one CSR) is the fast path of
    ``pipeline_``'s feature union; both must give the same matrix, or training and scoring disagree."""
    router = model.router
    rows = load_labelled(DEV_FILE)[:200] + [{"query": q} for q in ("哈哈哈哈哈哈", "空调空调空调", "24度", "a")]
    utterances = router.utterances(rows)
    fast = router.features(utterances)
    union = router.pipeline_.named_steps["features"].transform(utterances)
    assert fast.shape == union.shape
    assert abs(fast - union).max() < 1e-12
    assert fast.nnz == union.nnz


# XA4.1 上下文: an earlier turn matters only when the query continues it or needs it (rgen4)
WEATHER_TURN = [{"role": "user", "system": None, "text": "明天降温吗"},
                {"role": "assistant", "system": "fast", "text": "明天最低气温2度，比今天低6度"}]
LIGHT_TURN = [{"role": "user", "system": None, "text": "打开氛围灯"},
              {"role": "assistant", "system": "fast", "text": "氛围灯已打开"}]
NAMESAKES = [{"role": "user", "system": None, "text": "我微信里存了两个叫周明的，一个是邻居一个是同学"},
             {"role": "assistant", "system": "slow", "text": "好的，记住了"}]
CHAT_TURN = [{"role": "user", "system": None, "text": "你觉得猫和狗哪个更好养"},
             {"role": "assistant", "system": "slow", "text": "各有各的好，猫更独立……"}]


@pytest.mark.parametrize("query, context, label, code", [
    # a whole query after an unrelated fast turn is routed as if said alone, not as the turn's operation flow
    ("后排有点冷啊", WEATHER_TURN, "慢", "INTENT_INFERENCE"),
    ("关掉卧室的台灯", WEATHER_TURN, "快", "DIRECT_ACTION"),
    ("后备箱关好了没", WEATHER_TURN, "模糊", "DEVICE_OR_ENV_STATE_QUERY"),
    # a pronoun the fast turn before resolves continues its flow; said alone it points back to a missing turn,
    # and a demonstrative said alone must be disambiguated (LABELING rule 3)
    ("把它调暗一点", LIGHT_TURN, "快", "DIRECT_OPERATION_FLOW"),
    ("把它调暗一点", [], "慢", "CONTEXT_REQUIRED"),
    ("把那个调暗一点", [], "慢", "TRUE_DISAMBIGUATION"),
    # two contacts of one name (candidates.txt → prev_candidates): naming it needs a choice; after other turns it is direct
    ("给周明打个电话", NAMESAKES, "慢", "TRUE_DISAMBIGUATION"),
    ("给周明打个电话", CHAT_TURN, "快", "DIRECT_ACTION"),
    # a follow-up naming only what changes asks what the question before it asked
    ("后排呢", [{"role": "user", "system": None, "text": "前排温度多少"},
               {"role": "assistant", "system": "slow", "text": "前排二十三度"}], "模糊", "DEVICE_OR_ENV_STATE_QUERY"),
])
def test_the_earlier_turn_counts_only_when_the_query_needs_it(model, query, context, label, code):
    record = model.score([{"query": query, "context": context, "endpoint": "car"}])[0]
    assert (record["label"], record["primary_reason_code"]) == (label, code)


@pytest.mark.parametrize("query, label, code", [
    ("给我讲个脑筋急转弯，然后把座椅加热打开", "模糊", "OPEN_CHAT_OR_QA"),  # chat beside a command: 模糊 > 快
    ("明天几号 顺便把车窗关上", "快", "DIRECT_DETERMINISTIC_QUERY"),         # all fast, not all device controls
    ("从下周三开始算六十天以后是几号", "慢", "COMPLEX_REASONING"),             # date arithmetic
    ("方向盘加热有几档", "模糊", "PRODUCT_KNOWLEDGE"),                          # what it can do, not its state
    ("把车顶那块玻璃打开", "快", "DIRECT_ACTION"),                              # a description of one device
    ("鼓励鼓励我", "模糊", "OPEN_CHAT_OR_QA"),                                  # chat, no slot missing
    ("为什么高架桥下面总有很多柱子", "模糊", "OPEN_CHAT_OR_QA"),                # curiosity, no fault of this car
    ("后天武汉会下雪吗", "快", "DIRECT_DETERMINISTIC_QUERY"),                   # the weather, the day said first
    ("座椅通风关掉，顺便问下还剩多少电", "模糊", "DEVICE_OR_ENV_STATE_QUERY"),  # a state question beside a command
    ("车窗关上 再给她打个电话", "慢", "MISSING_REQUIRED_SLOT"),                 # ... a call to someone unnamed
])
def test_mixed_requests_and_knowledge_get_their_spec_label(model, query, label, code):
    record = model.score([{"query": query, "endpoint": "car"}])[0]
    assert (record["label"], record["primary_reason_code"]) == (label, code)


def test_a_fast_answer_listing_namesakes_makes_naming_one_a_disambiguation(model):
    listing = [{"role": "user", "system": None, "text": "周明的号码多少"},
               {"role": "assistant", "system": "fast", "text": "通讯录里找到两个周明，一个备注邻居，一个备注同学"}]
    record = model.score([{"query": "给周明发个微信说我到了", "context": listing, "endpoint": "car"}])[0]
    assert (record["label"], record["primary_reason_code"]) == ("慢", "TRUE_DISAMBIGUATION")
