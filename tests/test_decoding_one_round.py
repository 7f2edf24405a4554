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


def test_hamming_one_row_encode_is_the_batch_route():
    """issue 30 (learn6): Hamming.encode's one-row integer route (Python's min and max) gives the codes, dtype and registry
    of the general route, and refuses what it refuses with its messages (out of range, negative, a wrong length)."""
    dec = Hamming(alphabet=3)
    reg = dec.encode(np.array([[0, 1, 2, 0]]), dec.start())[1]
    r = np.random.default_rng(0)
    for dt in (np.int64, np.int32, np.uint8, np.int8):
        for _ in range(20):
            y = r.integers(0, 3, (1, 4)).astype(dt)
            codes, reg2 = dec.encode(y, reg)
            ref, _ = dec.encode(np.concatenate([y, y]), reg)            # two rows: the general route
            assert reg2 is reg and codes.dtype == np.int64 and np.array_equal(codes, ref[:1])
    for bad, msg in [(np.array([[0, 3, 1, 0]]), "integer symbols"), (np.array([[0, -1, 1, 0]]), "integer symbols"),
                     (np.array([[0, 1, 1]]), "4 labels per row"), (np.zeros((1, 0), int), "2-D array")]:
        with pytest.raises(ValueError, match=msg):
            dec.encode(bad, reg)
