"""Timing helper shared by the benchmark scripts."""

import statistics
import time


def median_time(fn, repeats, warmup=True):
    """Median wall time of ``fn()`` over ``repeats`` calls (after one warm-up call)."""
    if warmup:
        fn()  # JIT compilation, caches
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)
