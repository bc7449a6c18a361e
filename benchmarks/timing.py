"""Timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import time


def best_of(repeats: int, fn) -> float:
    """CPU seconds of this process for the fastest of ``repeats`` calls of ``fn``.

    CPU time, not wall time: scoring is single-threaded Python, so on a quiet machine the two agree,
    and on a shared one (CI, two cores) CPU time is not inflated by other processes' turns. Every
    figure of a run, the jieba baseline included, is taken the same way.
    """
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def percentile(values, q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]
