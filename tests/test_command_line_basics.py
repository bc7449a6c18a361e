"""What a newcomer meets first: `fastslow --version`, a starter config written by `fastslow config init`
(shipped in the wheel), and progress on a terminal, never in a pipe."""

import io
import tomllib
from pathlib import Path

import pytest

from fastslow import __version__, cli
from fastslow.models.lifecycle import training as train
from fastslow.models.lifecycle.config import parse_args, read_config
from fastslow.models.lifecycle.progress import Progress, score_with_progress

ROOT = Path(__file__).resolve().parents[1]


def test_version_names_the_package_and_the_libraries_behind_its_records(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"fastslow {__version__} (Python ") and "scikit-learn " in out and "numpy " in out
    assert len(out.splitlines()) == 1


def test_the_wheel_ships_the_config_file():
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    assert "fastslow.toml" in package_data["fastslow"]


def test_config_init_writes_a_starter_that_trains_with_the_defaults_and_never_overwrites(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["config", "init"]) == 0
    written = tmp_path / "fastslow.toml"
    assert f"fastslow train --config {Path('fastslow.toml')}" in capsys.readouterr().out
    parser = train.build_parser()
    from_file = vars(parse_args(parser, ["--config", str(written)]))
    defaults = vars(parse_args(train.build_parser(), []))
    for key, value in read_config(written, train.build_parser()).items():
        expected = defaults[key]
        if isinstance(expected, Path) and not expected.is_absolute():   # the output: relative to the file's folder
            expected = tmp_path / expected
        assert from_file[key] == expected, key
    before = written.read_text(encoding="utf-8")
    assert cli.main(["config", "init", str(written)]) == 2
    assert "exists; not overwritten" in capsys.readouterr().err
    assert written.read_text(encoding="utf-8") == before


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Counting:
    """A model stand-in that records how it was called: progress must not change what is scored."""

    def __init__(self):
        self.calls = []

    def score(self, rows):
        self.calls.append(len(rows))
        return [{"label": "快", "confidence": 1.0, "query": r["query"]} for r in rows]


def test_progress_draws_a_bar_on_a_terminal_and_only_stage_lines_in_a_pipe():
    rows = [{"query": f"q{i}"} for i in range(1200)]
    terminal, pipe = Terminal(), io.StringIO()
    model = Counting()
    assert score_with_progress(model, rows, Progress("eval", terminal), "rows") == Counting().score(rows)
    assert model.calls == [500, 500, 200] and "] 1200/1200 rows" in terminal.getvalue()
    assert terminal.getvalue().count("\r") == 3 and terminal.getvalue().endswith("\n")
    model = Counting()
    piped = Progress("eval", pipe)
    assert score_with_progress(model, rows, piped, "rows") == Counting().score(rows)
    piped.stage("done")
    assert model.calls == [1200] and "\r" not in pipe.getvalue()
    assert pipe.getvalue().startswith("eval [") and pipe.getvalue().endswith("s] done\n")
