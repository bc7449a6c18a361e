"""train.py's settings: the bundled fastslow.toml lists every option with its built-in default, and a
config file sits between the command line (wins) and the built-in defaults."""

import pytest

from fastslow.models.lifecycle import training as train
from pathlib import Path

from fastslow.models.lifecycle.config import ConfigError, configurable, parse_args, read_config

#: the template a data scientist copies: at the repository root, not shipped in the package
CONFIG_FILE = Path(__file__).resolve().parents[1] / "fastslow.toml"


def test_the_bundled_config_holds_every_option_with_its_default():
    parser = train.build_parser()
    settings = read_config(CONFIG_FILE, parser)
    assert set(settings) == set(configurable(parser))
    defaults = {dest: parser.get_default(dest) for dest in settings}
    # a relative default (the output, written where train.py runs) reads relative to the file's folder
    defaults = {k: CONFIG_FILE.parent / v if isinstance(v, Path) and not v.is_absolute() else v
                for k, v in defaults.items()}
    assert settings == defaults


def test_command_line_beats_config_file_beats_built_in_defaults(tmp_path):
    path = tmp_path / "my.toml"
    path.write_text('[router]\nC = 2\nseed = 5\n[data]\ntrain_dir = "mine"\ndata = ["a.csv", "b.jsonl"]\n'
                    '[evaluation]\ncv = 5\n[automation]\nautomation = false\n', encoding="utf-8")
    args = parse_args(train.build_parser(), ["--config", str(path), "--seed", "9"])
    assert (args.C, args.seed, args.cv, args.automation) == (2.0, 9, 5, False)
    assert args.train_dir == tmp_path / "mine" and args.data == [tmp_path / "a.csv", tmp_path / "b.jsonl"]
    assert args.review_threshold == 0.5 and args.experiment == "fastslow"   # built-in defaults
    args = parse_args(train.build_parser(), ["--config", str(path), "--data", "c.csv", "d.csv"])
    assert [str(p) for p in args.data] == ["c.csv", "d.csv"]   # the command line's list replaces the file's


@pytest.mark.parametrize("text, message", [
    ("learning_rate = 0.1\n", "unknown key 'learning_rate'"),
    ("[router]\nC = \"lots\"\n", "C: 'lots' is not a valid float"),
    ("class_weight = \"heavy\"\n", "class_weight: must be one of ['balanced', 'none']"),
    ("hmm = 1\n", "hmm: must be true or false"),
    ("tracking_uri = \"sqlite:///x.db\"\n", "unknown key 'tracking_uri'"),
    ("seed = 1\n[router]\nseed = 2\n", "seed is set twice"),
    ("C = [\n", "not valid TOML"),
])
def test_a_bad_config_file_is_refused_naming_file_and_key(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        read_config(path, train.build_parser())
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_train_exits_2_on_a_bad_config_or_cv(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text("C = \"lots\"\n", encoding="utf-8")
    assert train.main(["--config", str(path)]) == 2
    assert "is not a valid float" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        train.main(["--cv", "1"])
    assert exit_.value.code == 2 and "--cv needs at least 2 folds" in capsys.readouterr().err
