"""Paper 003's baselines in the reproduction module (lp-MKL, OKL) against dense literal formulas, and the Table 1 verdicts."""
import numpy as np
import pytest

from ovk_nb.experiments.paper003 import lpmkl_fit, okl_fit, okl_l_step, table1_verdict


def _problem(seed=0, n=25, offs=(0, 3, 8, 11), t=3):
    rng = np.random.default_rng(seed)
    offs = np.array(offs)
    return rng.normal(size=(n, offs[-1])), offs, rng.normal(size=(n, t))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("p", [1.5, 2.0, 4.0])
def test_lpmkl_is_kernel_ridge_on_the_weighted_sum(seed, p):
    Z, offs, Y = _problem(seed)
    a, b = lpmkl_fit(Z, offs, Y, 0.2, p=p, primal=True), lpmkl_fit(Z, offs, Y, 0.2, p=p, primal=False)
    np.testing.assert_allclose(a["w"], b["w"], rtol=1e-9)
    np.testing.assert_allclose(a["coef"], b["coef"], atol=1e-9)
    Ks = [Z[:, offs[l]:offs[l + 1]] @ Z[:, offs[l]:offs[l + 1]].T for l in range(len(offs) - 1)]
    Kw = sum(w * K for w, K in zip(a["w"], Ks))
    np.testing.assert_allclose(Z @ a["coef"], Kw @ np.linalg.solve(Kw + 0.2 * np.eye(len(Z)), Y), atol=1e-9)
    np.testing.assert_allclose(np.sum(a["w"] ** p), 1.0, rtol=1e-10)           # on the l_p sphere
    assert np.all(a["w"] > 0)
    assert np.all(np.diff(a["objective"]) <= 1e-10 * a["objective"][0])
    # at convergence w is the closed-form weight of its own solution: ||f_v||^2 = w_v^2 tr(c^T K_v c)
    c = np.linalg.solve(Kw + 0.2 * np.eye(len(Z)), Y)
    n2 = np.array([w ** 2 * np.sum(c * (K @ c)) for w, K in zip(a["w"], Ks)])
    np.testing.assert_allclose(a["w"], n2 ** (1 / (p + 1)) / np.sum(n2 ** (p / (p + 1))) ** (1 / p), rtol=1e-4)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("lam", [0.05, 1.0, 10.0])
def test_okl_block_coordinate_descent(seed, lam):
    Z, _, Y = _problem(seed)
    n, t = Y.shape
    o = okl_fit(Z, Y, lam)
    K, L = Z @ Z.T, o["L"]
    C = np.linalg.solve(np.kron(L, K) + lam * np.eye(n * t), Y.T.ravel()).reshape(t, n).T     # the C-step, literally
    np.testing.assert_allclose(o["C"], C, atol=1e-8 * max(1, np.abs(C).max()))
    np.testing.assert_allclose(Z @ o["coef"], K @ C @ L, atol=1e-7 * max(1, np.abs(K @ C @ L).max()))
    assert np.linalg.eigvalsh(L).min() >= -1e-12 * np.abs(L).max() and o["projected"] == 0
    assert np.all(np.diff(o["objective"]) <= 1e-9 * abs(o["objective"][0]))


def test_okl_l_step_is_the_symmetric_minimiser():
    rng = np.random.default_rng(3)
    E, Y = rng.normal(size=(20, 3)), rng.normal(size=(20, 3))
    P = rng.normal(size=(3, 3)); P = P @ P.T
    lam = 0.7
    L = okl_l_step(E, Y, P, lam)
    np.testing.assert_allclose(L, L.T, atol=1e-12)
    Q = lambda M: np.sum((Y - E @ M) ** 2) / (2 * lam) + np.sum(P * M) / 2 + np.sum(M ** 2) / 2
    for _ in range(20):                                    # no symmetric perturbation decreases the objective
        S = rng.normal(size=(3, 3)); S = 1e-3 * (S + S.T)
        assert Q(L + S) >= Q(L) - 1e-12
    M, B = E.T @ E, E.T @ Y
    lit = np.linalg.solve((np.kron(np.eye(3), M) + np.kron(M, np.eye(3))) / (2 * lam) + np.eye(9),
                          ((B + B.T) / (2 * lam) - P / 2).T.ravel()).reshape(3, 3).T
    np.testing.assert_allclose(L, lit, atol=1e-10)


def test_table1_verdicts_follow_the_claims():
    "Issue 32: the verdict is computed (`judge`) from the accuracies, the test count's binomial tolerance and the trivial predictor."
    from ovk_nb.experiments.paper003 import BASICMOTIONS
    a = {"MVML": 97.0, "MVML-sparse": 96.8, "MVML_Cov": 96.5, "MVML_I": 97.2, "lpMKL": 97.0, "OKL": 90.0, "efSVM": 96.5,
         "lfSVM": 99.5, "1-view SVM": 91.0}
    # on stand-in data (UCI mfeat) at most "shape holds"; 300 tests near 97 %: a tolerance of 1.97 points
    assert table1_verdict("MVML", a, n_test=1000).startswith("shape holds")        # 1.08 points: below the paper's 1.1
    assert table1_verdict("MVML", a).startswith("not judged")                       # 1.97 points cannot confirm "within 1.1"
    assert table1_verdict("lpMKL", a, n_test=1000).startswith("not judged")         # nor "within 0.6"
    assert table1_verdict("OKL", a).startswith("shape holds")
    assert table1_verdict("efSVM", a).startswith("differs because")                 # within the noise
    assert "lfSVM is ahead of MVML" in table1_verdict("lfSVM", a)
    assert table1_verdict("1-view SVM", a).startswith("shape holds")
    assert table1_verdict("MVML", {**a, "MVML_Cov": 90.0}, n_test=1000).startswith("differs")
    assert table1_verdict("lpMKL", {**a, "lpMKL": 93.0}).startswith("differs")
    assert not any(table1_verdict(k, a).startswith("reproduced") for k in a)
    # the untuned single-view SVM's row holds only if MVML is also above the tuned one at the same level
    assert table1_verdict("1-view SVM", {**a, "1-view SVM (C tuned)": 97.5}).startswith("differs")
    # BasicMotions: 40 tests, one test is 2.5 points: a 7.5-point gap near 80 % is within 2 binomial stds (12.6 points)
    b = {**a, "MVML": 80.0, "lfSVM": 72.5}
    assert table1_verdict("lfSVM", b, data=BASICMOTIONS, n_test=40, trivial=25.0).startswith("differs because")