"""The l_r-norm kernel weights shared by MovKL and MONORMA (ovk_nb.weights)."""
import numpy as np

from ovk_nb.weights import lr_norm_weights


def test_monorma_step_is_the_closed_form_minimiser():
    "delta minimises sum_j ||f_j||^2 / delta_j over ||delta||_r <= 1, with ||f_j||^2 = delta_old_j^2 gamma_j."
    rng = np.random.default_rng(0)
    old, gam, r = rng.uniform(0.1, 1, 4), rng.uniform(0.1, 3, 4), 2.0
    new = lr_norm_weights(old ** 2 * gam, r, default=old)
    obj = lambda dl: np.sum(old ** 2 * gam / dl)
    for _ in range(200):
        cand = rng.uniform(0.01, 1, 4)
        cand /= np.sum(cand ** r) ** (1 / r)
        assert obj(new) <= obj(cand) + 1e-12

