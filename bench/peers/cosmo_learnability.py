"""How much of the cosmological parameters a simgen CosmoFlow dataset gives
away, without a CNN (the learning target).

Reads every sample of a `simgen cosmo` directory (TFRecords of int16 counts
[D, D, D, 4] and 4 unit parameters), reduces each to summary statistics per
redshift channel (mean, std, skewness and kurtosis of log(1 + counts), the
empty-voxel fraction, the mean count, and the log power of the overdensity
in 4 wavenumber bins), and fits a ridge regression on the first files,
holding out the last ones (whole simulations: one file per box). Prints the
held-out MAE per parameter against predicting the training mean, and the
ratio of their averages (the target asks a CNN for at most 0.7).

    bash bench/setup-peers.sh
    simgen cosmo --out /tmp/c200 --boxes 200 --grid 64 --particles 64 \\
        --box-size 256 --split 2 --samples-per-file 8 --seed 7
    bench/.venv/bin/python bench/peers/cosmo_learnability.py /tmp/c200 --held-out 0.2
"""

import argparse
import glob
import os
import struct

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402  (only to parse tf.train.Example)


def samples(path):
    """(file index, x int16 [D,D,D,C], y [4]) for every record of the directory."""
    for k, name in enumerate(sorted(glob.glob(os.path.join(path, "*.tfrecord")))):
        data = open(name, "rb").read()
        at = 0
        while at < len(data):
            (length,) = struct.unpack("<Q", data[at : at + 8])
            record = data[at + 12 : at + 12 + length]
            at += 12 + length + 4
            example = tf.train.Example.FromString(record)
            y = np.array(example.features.feature["y"].float_list.value, dtype=np.float64)
            raw = example.features.feature["x"].bytes_list.value[0]
            edge = round((len(raw) // 8) ** (1 / 3))
            x = np.frombuffer(raw, dtype="<i2").reshape(edge, edge, edge, 4).astype(np.float64)
            yield k, x, y


def features(x):
    edge = x.shape[0]
    k = np.sqrt(
        np.add.outer(np.add.outer(np.fft.fftfreq(edge) ** 2, np.fft.fftfreq(edge) ** 2), np.fft.rfftfreq(edge) ** 2)
    )
    out = []
    for c in range(x.shape[3]):
        counts = x[..., c]
        v = np.log1p(counts)
        m, s = v.mean(), v.std() + 1e-12
        out += [m, s, ((v - m) ** 3).mean() / s**3, ((v - m) ** 4).mean() / s**4, (counts == 0).mean(), counts.mean()]
        delta = counts / max(counts.mean(), 1e-9) - 1
        power = np.abs(np.fft.rfftn(delta)) ** 2
        for lo, hi in [(0.01, 0.06), (0.06, 0.12), (0.12, 0.25), (0.25, 0.5)]:
            out.append(np.log(power[(k >= lo) & (k < hi)].mean() + 1e-12))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data")
    parser.add_argument("--held-out", type=float, default=0.2, help="fraction of files held out")
    args = parser.parse_args()
    files, xs, ys = [], [], []
    for k, x, y in samples(args.data):
        files.append(k)
        xs.append(features(x))
        ys.append(y)
    files, X, Y = np.array(files), np.array(xs), np.array(ys)
    cut = files.max() + 1 - max(1, round((files.max() + 1) * args.held_out))
    train, test = files < cut, files >= cut
    mu, sd = X[train].mean(0), X[train].std(0) + 1e-12
    A, B = (X[train] - mu) / sd, (X[test] - mu) / sd
    base = np.abs(Y[train].mean(0) - Y[test]).mean(0)
    print(f"{len(X)} samples, {cut} files to fit, {files.max() + 1 - cut} held out ({test.sum()} samples)")
    print(f"predicting the training mean: MAE {base.round(3)}")
    for lam in [0.1, 1.0, 10.0, 100.0]:
        W = np.linalg.solve(A.T @ A + lam * np.eye(A.shape[1]), A.T @ (Y[train] - Y[train].mean(0)))
        mae = np.abs(B @ W + Y[train].mean(0) - Y[test]).mean(0)
        print(f"ridge lambda {lam:>5}: MAE {mae.round(3)}, ratio to the mean predictor {mae.mean() / base.mean():.3f}")


if __name__ == "__main__":
    main()
