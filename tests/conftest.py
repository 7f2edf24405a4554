import os

# One BLAS thread per process: pytest runs two workers (-n 2) on two cores, and threaded BLAS in both
# oversubscribes the machine (measured 30x slower ridge fits). Must be set before numpy is imported.
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
os.environ.setdefault("MPLBACKEND", "Agg")


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """A real Dask LocalCluster (2 worker processes x 1 thread, no mocks) and its client, one per test module that asks
    for it; skipped without the distributed extra."""
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=40)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()
