"""``train.py``'s configuration file (TOML): every option of its command line, with its default.

Precedence: an option on the command line, else the config file (``--config PATH``), else the built-in
default. The bundled ``fastslow.toml`` lists every option with its built-in default (a test keeps the
two equal), so a data scientist copies it and changes what they need. Tables (``[router]``,
``[data]``, ...) only group the keys; a key is an option's name with ``_`` for ``-``. Paths are
relative to the file's folder.
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path


#: options that describe one run or one machine rather than the model: command line (or environment) only
NOT_IN_CONFIG = ("help", "config", "run_name", "tracking_uri", "signing_key_file")


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file and the key."""


def configurable(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The parser's options a config file may set, by destination name."""
    return {a.dest: a for a in parser._actions if a.dest not in NOT_IN_CONFIG}


def _flatten(table: dict, path: Path) -> dict:
    flat = {}
    for key, value in table.items():
        items = value.items() if isinstance(value, dict) else [(key, value)]
        for k, v in items:
            if isinstance(v, dict):
                raise ConfigError(f"{path}: [{key}.{k}]: tables nest one level only")
            if k in flat:
                raise ConfigError(f"{path}: {k} is set twice")
            flat[k] = v
    return flat


def _convert(action: argparse.Action, value, where: str, base: Path):
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: must be true or false, got {value!r}")
        return value
    if action.nargs in ("+", "*"):
        if not isinstance(value, list):
            raise ConfigError(f"{where}: must be a list, got {value!r}")
        return [_convert_one(action, v, where, base) for v in value]
    return _convert_one(action, value, where, base)


def _convert_one(action: argparse.Action, value, where: str, base: Path):
    if isinstance(value, (bool, dict, list)):
        raise ConfigError(f"{where}: must be a single value, got {value!r}")
    if action.type is Path:
        return base / str(value)
    try:
        converted = action.type(value) if action.type else value
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {value!r} is not a valid {getattr(action.type, '__name__', 'value')}") from None
    if action.choices is not None and converted not in action.choices:
        raise ConfigError(f"{where}: must be one of {list(action.choices)}, got {value!r}")
    return converted


def read_config(path: str | Path, parser: argparse.ArgumentParser) -> dict:
    """The file's settings as ``{destination: value}``, typed as the command line would type them."""
    path = Path(path)
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    options = configurable(parser)
    settings = {}
    for key, value in _flatten(table, path).items():
        if key not in options:
            raise ConfigError(f"{path}: unknown key {key!r} (known: {', '.join(sorted(options))})")
        settings[key] = _convert(options[key], value, f"{path}: {key}", path.parent)
    return settings


def parse_args(parser: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    """Command line over config file over built-in defaults."""
    known, _ = parser.parse_known_args(argv)
    if getattr(known, "config", None):
        parser.set_defaults(**read_config(known.config, parser))
    return parser.parse_args(argv)


#: the file that lists every option with its default, shipped in the package (pyproject package-data)
BUNDLED_CONFIG = "fastslow.toml"


def bundled_config_text() -> str:
    """The text of the bundled ``fastslow.toml`` (installed or in a checkout)."""
    from importlib.resources import files

    return files("fastslow").joinpath(BUNDLED_CONFIG).read_text(encoding="utf-8")


def starter_config() -> str:
    """The bundled ``fastslow.toml`` for another folder: its paths into the bundled data made absolute
    (they read relative to the file's folder), the rest as it is; trained with as it stands, it gives
    the built-in defaults."""
    from importlib.resources import files

    root = str(files("fastslow")).rstrip("/\\")
    return bundled_config_text().replace('"data/', f'"{Path(root).as_posix()}/data/')


def write_starter_config(path: str | Path) -> Path:
    """Write ``starter_config()`` to ``path``; ``FileExistsError`` rather than overwrite a file."""
    path = Path(path)
    with path.open("x", encoding="utf-8") as f:
        f.write(starter_config())
    return path
