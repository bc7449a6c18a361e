"""Timing helpers shared by the benchmark scripts."""

from __future__ import annotations

import time


def best_of(repeats: int, fn) -> float:
    """Seconds of the fastest of ``repeats`` calls of ``fn`` (the least disturbed by the machine)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def percentile(values, q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]
