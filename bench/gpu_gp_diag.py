"""Where the GP's GPU answer departs from NumPy's (issue 24): OVKGaussianProcess at fixed hyper-parameters (the ones NumPy
learned at n = 2000 on bench/gpu_check.py's data, saved in bench/results/gpu_gp_point.json) on NumPy, on NumPy with X
moved by a relative 1e-15 (the problem's own sensitivity), on PyTorch CUDA, and on PyTorch CUDA with the eigendecomposition
done on the host; the same at a well-conditioned point (gamma = 0.1, noise 0.1). Output: bench/results/gpu_gp_diag.txt.

    python bench/gpu_gp_diag.py      # on the GPU machine, after gpu_check.sh's wheel install (PyTorch CPU elsewhere)
"""
import json
import sys

import numpy as np
import torch

import ovk_nb.gp as gp
from ovk_nb.gp import OVKGaussianProcess
from ovk_nb.kernels import RBF, Coregionalization, Separable

sys.path.insert(0, "bench")
from gpu_check import data  # noqa: E402

X, Y = data(2000)
Xt, _ = data(200, seed=1)
P = json.load(open("bench/results/gpu_gp_point.json"))
kernel = Separable(RBF(P["gamma"]), Coregionalization(d=4, W=np.array(P["W"]), kappa=np.array(P["kappa"])))
noise = P["noise"]
good = (Separable(RBF(0.1), Coregionalization(4)), 0.1)
DEV = "cuda" if torch.cuda.is_available() else "cpu"
dev = lambda A: torch.asarray(A, device=DEV)
host_eigh = gp.eigh_psd


def eigh_on_host(A, *a, **k):
    s, U = host_eigh(A.cpu().numpy(), *a, **k)
    return dev(s), dev(U)


for label, (k, s2) in [("NumPy's learned point (gamma %.4g, noise %.4g)" % (kernel.scalar_kernel.gamma, noise), (kernel, noise)),
                       ("well-conditioned point (gamma 0.1, noise 0.1)", good)]:
    ref = OVKGaussianProcess(optimizer=None, kernel=k, noise=s2).fit(X, Y)
    F0, S0 = ref.predict(Xt, return_std=True)
    Xp = OVKGaussianProcess(optimizer=None, kernel=k, noise=s2).fit(X * (1 + 1e-15), Y)
    rows = [("NumPy, X * (1 + 1e-15)", Xp, False)]
    rows.append((f"torch {DEV}", OVKGaussianProcess(optimizer=None, kernel=k, noise=s2).fit(dev(X), dev(Y)), True))
    gp.eigh_psd = eigh_on_host
    rows.append((f"torch {DEV}, eigh on the host", OVKGaussianProcess(optimizer=None, kernel=k, noise=s2).fit(dev(X), dev(Y)), True))
    gp.eigh_psd = host_eigh
    Kn = k.scalar_kernel(X)
    Kd = k.scalar_kernel(dev(X)).cpu().numpy()
    print(f"{label}: LML {ref.log_marginal_likelihood_value_:.6f}; scalar Gram max |diff| NumPy vs {DEV} {np.abs(Kn - Kd).max():.2e}")
    for name, m, on_dev in rows:
        F, S = m.predict(dev(Xt) if on_dev else Xt, return_std=True)
        F, S = (A.cpu().numpy() if on_dev else A for A in (F, S))
        dl = abs(m.log_marginal_likelihood_value_ - ref.log_marginal_likelihood_value_)
        print(f"  {name}: LML |diff| {dl:.2e} nats (rel {dl / abs(ref.log_marginal_likelihood_value_):.2e}); mean rel "
              f"{np.abs(F - F0).max() / np.abs(F0).max():.2e}; std rel {np.abs(S - S0).max() / np.abs(S0).max():.2e}")
