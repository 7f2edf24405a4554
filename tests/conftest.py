import os

# One BLAS thread per process: pytest runs two workers (-n 2) on two cores, and threaded BLAS in both
# oversubscribes the machine (measured 30x slower ridge fits). Must be set before numpy is imported.
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
os.environ.setdefault("MPLBACKEND", "Agg")
