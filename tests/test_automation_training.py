"""train.py's automation part keeps held-out queries out of training as the router's part does: a bundled
training row whose query is in an extra dev set (``--automation-dev-also``) or the blind set is left out,
one whose query is in the fixture or the hand-written dev set is refused."""

import pytest

from conftest import bundled_rows, refused_in_data, write_jsonl
from fastslow.data import DataError
from fastslow.models.automation.data import AUTOMATION_DIR, AUTOMATION_EXTRA_DEV_FILES, load_automation
from fastslow.models.lifecycle import automation_training
from fastslow.models.lifecycle import training as train


def _corpus(tmp_path, extra):
    held_out = {r["query"] for r in refused_in_data()}  # left out by default: not what a test counts
    rows = [r for r in bundled_rows(["data/automation/train/core.jsonl"]) if r["query"] not in held_out][:40]
    folder = tmp_path / "train"
    folder.mkdir()
    write_jsonl(folder / "core.jsonl", rows + extra)
    return folder, rows


def _args(tmp_path, folder, *argv):
    return train.build_parser().parse_args([
        "--automation-train-dir", str(folder), "--crf-iterations", "3", "--output", str(tmp_path / "m.joblib"), *argv])


def test_a_bundled_row_with_an_extra_dev_query_is_left_out_and_the_set_scored(tmp_path):
    folder, rows = _corpus(tmp_path, [])
    dev_also = write_jsonl(tmp_path / "automation_blind_v9.jsonl", [
        {"id": "x-1", "query": rows[3]["query"], "expected": rows[3]["expected"]},
        {"id": "x-2", "query": "上车的时候打开空调", "expected": [
            {"condition": "上车的时候", "querys": [{"subquery": "打开空调", "intent": "设备控制"}]}]}])
    run = automation_training.train(_args(tmp_path, folder, "--automation-dev-also", str(dev_also)))
    assert (run.train_rows, run.dropped_held_out) == (len(rows) - 1, 1)
    assert run.metrics["automation_dev_blind_v9_n"] == 2
    assert "(1 left out: their query is in an extra dev set)" in automation_training.summary(run)


def test_a_bundled_row_with_a_query_of_the_hand_written_dev_set_is_refused(tmp_path):
    dev_row = load_automation(AUTOMATION_DIR / "dev" / "automation_dev.jsonl")[0]
    folder, _ = _corpus(tmp_path, [{"id": "leak", "query": dev_row["query"], "markup": dev_row["markup"],
                                    "expected": dev_row["expected"]}])
    with pytest.raises(DataError, match=r"1 automation dev set queries are in the training data"):
        automation_training.train(_args(tmp_path, folder, "--automation-dev-also"))


def test_the_retired_blind_sets_are_scored_by_default_as_dev_blind_vN():
    args = train.build_parser().parse_args([])
    names = [automation_training.automation_dev_name(p) for p in args.automation_dev_also]
    expected = {"dev_v2", "dev_blind_v2", "dev_blind_v3", "dev_blind_v4", "dev_blind_v5", "dev_blind_v6", "dev_blind_v7",
                "dev_blind_v8", "dev_blind_v9", "dev_blind_v10", "dev_blind_v11", "dev_blind_v12", "dev_blind_v13", "dev_blind_v14",
                "dev_blind_v15", "dev_blind_v16", "dev_blind_v17", "dev_blind_v18", "dev_blind_v19", "dev_blind_v20",
                "dev_study_v3"}
    assert expected <= set(names)
    assert len(set(names)) == len(names)  # one name per set: their metrics never overwrite each other
    assert list(args.automation_dev_also) == list(AUTOMATION_EXTRA_DEV_FILES)
