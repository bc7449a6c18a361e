"""Behaviour as a whole: the records the model makes of every bundled dev and fixture file are the committed
snapshot in ``tests/records/`` (made by the seed-13 model ``python train.py`` trains by default). Any change
of behaviour shows here as the records that differ; ``tools/compare_records.py`` says how to review it and
update the snapshot."""

import importlib.util

from conftest import DEV_AND_FIXTURE_FILES, ROOT


def compare_records():
    spec = importlib.util.spec_from_file_location("compare_records", ROOT / "tools" / "compare_records.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = compare_records()


def test_the_snapshot_holds_every_bundled_dev_and_fixture_file_and_no_blind_set():
    assert sorted(tool.SNAPSHOT_FILES) == sorted(DEV_AND_FIXTURE_FILES)
    assert sorted(p.name for p in tool.SNAPSHOT_DIR.iterdir()) == sorted(map(tool.out_name, tool.SNAPSHOT_FILES))
    assert not any(path.startswith("data/blind/") for path in tool.FILES)


def test_the_records_of_every_bundled_dev_and_fixture_file_are_the_snapshot(trained, tmp_path):
    tool.score(trained["path"], tmp_path, tool.SNAPSHOT_FILES)
    total, report = 0, []
    for path in tool.SNAPSHOT_FILES:
        snapshot = tool.read_records(tool.SNAPSHOT_DIR / tool.out_name(path))
        assert snapshot, path
        count, lines = tool.differences(path, snapshot, tool.read_records(tmp_path / tool.out_name(path)), shown=5)
        total += count
        report += lines
    assert total == 0, "\n".join([
        f"{total} records differ from tests/records/ (before → now):", *report,
        "A meant change: review every difference above, then `python train.py && python tools/compare_records.py "
        "snapshot --update` and commit tests/records/ with the change."])
