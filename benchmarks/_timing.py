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


def interleaved_cpu_times(fns, rounds, batch_seconds=2e-4):
    """CPU time per call of each of ``fns``, measured in ``rounds`` interleaved rounds: ``times[k][r]`` is the
    mean CPU time (``time.process_time``) of one call of ``fns[k]`` over a batch in round ``r``.

    Each round times a batch of every function in turn (the order rotated from round to round), so that a
    change in the machine's load falls on all of them alike; a batch holds as many calls as take about
    ``batch_seconds`` (from a first estimate after a warm-up call), which keeps the clock's resolution and
    the cost of reading it out of the per-call time.  Ratios of the same round are the robust comparison
    (see :func:`paired_ratio`)."""
    batches = []
    for fn in fns:
        fn()   # JIT compilation, caches
        calls, t = 0, time.process_time()
        while True:
            fn()
            calls += 1
            spent = time.process_time() - t
            if spent >= batch_seconds / 4 or calls >= 1000:
                break
        batches.append(max(1, round(batch_seconds * calls / max(spent, 1e-9))))
    times = [[] for _ in fns]
    for r in range(rounds):
        for k in [(i + r) % len(fns) for i in range(len(fns))]:
            fn, m = fns[k], batches[k]
            t = time.process_time()
            for _ in range(m):
                fn()
            times[k].append((time.process_time() - t) / m)
    return times


def paired_ratio(times_a, times_b):
    """Median over rounds of ``a / b`` measured in the same round (see :func:`interleaved_cpu_times`)."""
    return statistics.median(a / b for a, b in zip(times_a, times_b))
