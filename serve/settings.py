"""The server's limits: each one's command-line option, environment variable, default and check, in one place.

``fastslow serve`` takes every limit as an option or from the environment (the option wins); its workers
(separate processes) read them back from the environment. Both go through the same checks, so
``FASTSLOW_BODY_TIMEOUT=abc`` is refused with the same one line as ``--body-timeout abc``. This module
imports nothing heavy: the command line builds its parser from it.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields
from typing import Callable, Mapping


class SettingError(ValueError):
    """A limit that is not a valid value; the message names where it came from and what is expected."""


def whole_number(text: str, least: int = 1) -> int:
    """A count (items, bytes, connections): a whole number of at least ``least``; ``ValueError`` otherwise."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = least - 1
    if value < least:
        raise ValueError(f"must be a whole number of at least {least}, got {text!r}")
    return value


def seconds(text: str) -> float:
    """A timeout: a finite number of seconds above 0; ``ValueError`` otherwise (``nan``, ``-1``, ``abc``)."""
    try:
        value = float(str(text).strip())
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"must be a number of seconds above 0, got {text!r}")
    return value


@dataclass(frozen=True)
class Limits:
    """What one request and one worker may take (each field's variable, check and help: ``SETTINGS``)."""

    max_batch_items: int = 256
    max_batch_chars: int = 65_536
    max_body_bytes: int = 2 * 1024 * 1024
    body_timeout: float = 15.0
    header_timeout: float = 15.0
    max_connections: int = 1000


#: per field of ``Limits``: its environment variable, check and help text (the option is ``--`` + the field
#: name with dashes)
SETTINGS: dict[str, tuple[str, Callable[[str], object], str]] = {
    "max_batch_items": ("FASTSLOW_MAX_BATCH_ITEMS", whole_number,
                        "items per /v1/route/batch request"),
    "max_batch_chars": ("FASTSLOW_MAX_BATCH_CHARS", whole_number,
                        "characters of query and context text per /v1/route/batch request: bounds a request's "
                        "scoring work (and its response), not only its bytes"),
    "max_body_bytes": ("FASTSLOW_MAX_BODY_BYTES", whole_number, "request body limit in bytes"),
    "body_timeout": ("FASTSLOW_BODY_TIMEOUT", seconds,
                     "seconds a request's body may take to arrive after its headers (then 408, connection closed)"),
    "header_timeout": ("FASTSLOW_HEADER_TIMEOUT", seconds,
                       "seconds a connection may take to send a request's headers, from when it opens or its "
                       "previous response ends (then it is closed)"),
    "max_connections": ("FASTSLOW_MAX_CONNECTIONS", whole_number,
                        "open connections per worker; over it, the connection that has waited longest without "
                        "sending its headers is closed, or the new one if none is waiting"),
}
ENV = {name: env for name, (env, _, _) in SETTINGS.items()}


def option(name: str) -> str:
    return "--" + name.replace("_", "-")


def limits(environ: Mapping[str, str] | None = None, **given) -> Limits:
    """The limits: each given (not None) value, else its environment variable, else the default; every value
    checked. ``SettingError`` names the first bad one (its option or its variable)."""
    environ = os.environ if environ is None else environ
    values = {}
    for f in fields(Limits):
        env, check, _ = SETTINGS[f.name]
        value, source = given.get(f.name), option(f.name)
        if value is None:
            value, source = environ.get(env), env
        if value is None or (source == env and not str(value).strip()):
            continue
        try:
            values[f.name] = check(str(value))
        except ValueError as exc:
            raise SettingError(f"{source}: {exc}") from None
    return Limits(**values)


def export(chosen: Limits, environ: dict | None = None) -> None:
    """Write ``chosen`` into the environment, for worker processes to read with ``limits``."""
    environ = os.environ if environ is None else environ
    for f in fields(Limits):
        environ[ENV[f.name]] = str(getattr(chosen, f.name))
