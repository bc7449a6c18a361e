"""The data that ships with fastslow: taxonomy, the bundled corpus, the dev and blind sets, the frozen
fixtures. Read through ``importlib.resources``, so a checkout, an editable install and a wheel find the
same files; nothing here is located relative to a working directory."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

#: The folder of this package on disk (wheels install unzipped, so it is a real folder).
DATA_DIR = Path(str(files(__name__)))
TAXONOMY_DIR = DATA_DIR / "taxonomy"
FIXTURES_DIR = DATA_DIR / "fixtures"


class DataError(ValueError):
    """Labelled data that cannot be used; the message lists every problem with file and row."""
