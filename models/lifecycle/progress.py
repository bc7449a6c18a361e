"""Progress on standard error: one line per stage with the time since the start, and a bar for a long
loop on a terminal only (a log file or a pipe gets the stage lines, never carriage returns)."""

from __future__ import annotations

import sys
import time

BAR_WIDTH = 30


class Progress:
    """``stage("fitting the router")`` prints ``train [  12.3s] fitting the router``; ``bar(done, total)``
    redraws one line while a long stage runs, when ``stream`` is a terminal. ``quiet`` prints nothing."""

    def __init__(self, prefix: str, stream=None, quiet: bool = False):
        self.prefix = prefix
        self.stream = sys.stderr if stream is None else stream
        self.quiet = quiet
        self.started = time.perf_counter()
        self._bar_open = False

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    @property
    def interactive(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def stage(self, text: str) -> None:
        if self.quiet:
            return
        self._close_bar()
        self.stream.write(f"{self.prefix} [{self.elapsed:6.1f}s] {text}\n")
        self.stream.flush()

    def bar(self, done: int, total: int, text: str = "") -> None:
        """One redrawn line ``[#####.....] done/total text``; on a terminal only, closed by the next stage
        or by ``done()``."""
        if self.quiet or not self.interactive or total <= 0:
            return
        filled = round(BAR_WIDTH * min(done, total) / total)
        self.stream.write(f"\r{self.prefix} [{self.elapsed:6.1f}s] [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] "
                          f"{done}/{total} {text}")
        self.stream.flush()
        self._bar_open = True

    def done(self) -> None:
        self._close_bar()

    def _close_bar(self) -> None:
        if self._bar_open:
            self.stream.write("\n")
            self._bar_open = False


def score_with_progress(model, rows: list[dict], progress: Progress | None, what: str = "rows",
                        chunk: int = 500) -> list[dict]:
    """``model.score(rows)`` in chunks, drawing a bar between them (records identical to one call)."""
    if progress is None or not progress.interactive or len(rows) <= chunk:
        return model.score(rows)
    records: list[dict] = []
    for start in range(0, len(rows), chunk):
        records += model.score(rows[start:start + chunk])
        progress.bar(len(records), len(rows), what)
    progress.done()
    return records
