"""Timing helper shared by the benchmark scripts (run as `python bench/bench_*.py`, so this folder is on sys.path)."""
import time


def best_time(f, repeat):
    "Smallest wall time of `repeat` calls (the least disturbed by other processes), and the last result."
    ts, res = [], None
    for _ in range(repeat):
        t = time.perf_counter(); res = f(); ts.append(time.perf_counter() - t)
    return min(ts), res
