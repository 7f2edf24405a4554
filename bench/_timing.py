"""Timing helper shared by the benchmark scripts (run as `python bench/bench_*.py`, so this folder is on sys.path)."""
import time


def best_time(f, repeat):
    "Smallest wall time of `repeat` calls (the least disturbed by other processes), and the last result."
    ts, res = [], None
    for _ in range(repeat):
        t = time.perf_counter(); res = f(); ts.append(time.perf_counter() - t)
    return min(ts), res


def best_wall_cpu(f, repeat=5):
    "Best wall time and best CPU time of `repeat` calls; returns (wall, cpu, last result)."
    wall = cpu = float("inf")
    res = None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        res = f()
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return wall, cpu, res
