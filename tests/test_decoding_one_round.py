"""Issue 30: `Decoder._one_round` (OSKAAR's lean round records its decision, task loss and surrogate through it) gives
what `decode`, `task_loss` and `surrogate` give for the row, bit for bit: Hamming's own route and the base's."""
import numpy as np
import pytest

from ovk_nb.decoding import Hamming, Spearman, Squared, ZeroOne


class _MyHamming(Hamming):
    "A subclass that decides otherwise: `_one_round` must take the base's route (its own decode)."
    def decode(self, G, reg, n_past=None):
        return np.zeros((len(G), reg["q"]), dtype=np.int64)


CASES = [(Hamming(), lambda r: r.integers(0, 2, (1, 4))), (Hamming(alphabet=3, centre=False), lambda r: r.integers(0, 3, (1, 5))),
         (Hamming(alphabet=5), lambda r: r.integers(0, 5, (1, 33))), (_MyHamming(), lambda r: r.integers(0, 2, (1, 4))),
         (ZeroOne(), lambda r: r.integers(0, 3, 1)), (Squared(), lambda r: r.normal(size=(1, 3))),
         (Spearman(4), lambda r: r.permutation(4)[None])]


@pytest.mark.parametrize("dec,make", CASES, ids=lambda c: type(c).__name__ if not callable(c) or isinstance(c, type) else "")
def test_one_round_equals_the_three_methods(dec, make):
    r = np.random.default_rng(3)
    codes, reg = dec.encode(make(r), dec.start())
    phi = dec.features(codes, reg)
    for _ in range(100):
        G = r.normal(size=phi.shape) * 10.0 ** r.integers(-3, 4)
        z, loss, surr = dec._one_round(G, codes, reg, phi, 0)
        Z = dec.decode(G, reg, np.arange(1))
        assert np.array_equal(np.asarray(z), Z[0])
        assert loss == dec.task_loss(Z, codes, reg)[0]
        assert surr == dec.surrogate(G, codes, reg)[0]
