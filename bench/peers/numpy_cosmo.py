"""Peer of `simgen cosmo`: the same steps for one box, written the
way a scientist writes them with NumPy (numpy.fft in single precision, as
simgen computes): E&H no-wiggle P(k) normalised to sigma_8, growth D1/D2 by
RK4, Gaussian field, Zel'dovich + 2LPT displacements, NGP counts for each
redshift, cut into int16 sub-volumes.

usage: numpy_cosmo.py PARTICLES GRID BOX_SIZE SPLIT REPS
prints one JSON line: seconds per box (median), seconds in FFTs per box.
"""
import json
import sys
import time

import numpy as np

FFT_TIME = 0.0


def timed(f, *args):
    global FFT_TIME
    t = time.perf_counter()
    out = f(*args)
    FFT_TIME += time.perf_counter() - t
    return out


def transfer(k, om, ob, h, tcmb=2.7255):
    omh2, obh2, theta, fb = om * h * h, ob * h * h, tcmb / 2.7, ob / om
    k_eq = 0.0746 * omh2 / theta**2
    s = 44.5 * np.log(9.83 / omh2) / np.sqrt(1 + 10 * obh2**0.75)
    alpha = 1 - 0.328 * np.log(431 * omh2) * fb + 0.38 * np.log(22.3 * omh2) * fb**2
    kk = k * h
    q = kk / (13.41 * k_eq)
    gamma = omh2 * (alpha + (1 - alpha) / (1 + (0.43 * kk * s) ** 4))
    qe = q * omh2 / gamma
    l0 = np.log(2 * np.e + 1.8 * qe)
    c0 = 14.2 + 731 / (1 + 62.5 * qe)
    return l0 / (l0 + c0 * qe**2)


def power(om, ob, h, ns, s8):
    def p(k):
        return k**ns * transfer(k, om, ob, h) ** 2

    lnk = np.linspace(np.log(1e-5), np.log(1e3), 20001)
    k = np.exp(lnk)
    x = 8 * k
    w = 3 * (np.sin(x) - x * np.cos(x)) / x**3
    var = np.trapezoid(k**3 * p(k) / (2 * np.pi**2) * w**2, lnk)
    amp = s8**2 / var
    return lambda k: amp * p(k)


def growth(om, a_end):
    def d(x, y):
        a = np.exp(x)
        oma = om / a**3 / (om / a**3 + 1 - om)
        fr = 2 - 1.5 * oma
        return np.array([y[1], -fr * y[1] + 1.5 * oma * y[0], y[3], -fr * y[3] + 1.5 * oma * (y[2] - y[0] ** 2)])

    def run(a1):
        a0 = 1e-3
        y = np.array([a0, a0, -3 / 7 * a0**2, -6 / 7 * a0**2])
        x, n = np.log(a0), 4000
        dx = (np.log(a1) - x) / n
        for _ in range(n):
            k1 = d(x, y)
            k2 = d(x + dx / 2, y + dx / 2 * k1)
            k3 = d(x + dx / 2, y + dx / 2 * k2)
            k4 = d(x + dx, y + dx * k3)
            y = y + dx / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            x += dx
        return y[0], y[2]

    d1, d2 = run(a_end)
    n1, _ = run(1.0)
    return d1 / n1, d2 / n1**2


def one_box(n, grid, box, split, redshifts, seed):
    rng = np.random.default_rng(seed)
    om, s8, ns, h = 0.3, 0.8, 0.96, 0.7
    p = power(om, 0.049, h, ns, s8)
    kf = 2 * np.pi / box
    f = np.fft.fftfreq(n, 1.0 / n).astype(np.float32)
    kx, ky, kz = np.meshgrid(f, f, f, indexing="ij")
    k2 = (kx**2 + ky**2 + kz**2) * kf**2
    k2[0, 0, 0] = 1
    noise = rng.standard_normal((n, n, n)).astype(np.float32)
    dk = timed(np.fft.fftn, noise) / np.float32(np.sqrt(n**3))
    dk *= np.sqrt(p(np.sqrt(k2)) / box**3).astype(np.float32)
    dk[0, 0, 0] = 0
    ny = -n // 2
    ks = [kx * kf, ky * kf, kz * kf]
    fs = [kx, ky, kz]
    psi = []
    for a in range(3):
        g = 1j * ks[a] * dk / k2
        g[fs[a] == ny] = 0
        psi.append(timed(np.fft.ifftn, g).real * n**3)
    phi = {}
    for a, b in [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]:
        g = fs[a] * fs[b] * dk / (k2 / kf**2)
        g[(fs[a] == ny) | (fs[b] == ny)] = 0
        phi[(a, b)] = timed(np.fft.ifftn, g).real * n**3
    src = (phi[(0, 0)] * phi[(1, 1)] + phi[(0, 0)] * phi[(2, 2)] + phi[(1, 1)] * phi[(2, 2)]
           - phi[(0, 1)] ** 2 - phi[(0, 2)] ** 2 - phi[(1, 2)] ** 2)
    sk = timed(np.fft.fftn, src.astype(np.float32)) / n**3
    psi2 = []
    for a in range(3):
        g = -1j * ks[a] * sk / k2
        g[fs[a] == ny] = 0
        psi2.append(timed(np.fft.ifftn, g).real * n**3)
    q = np.arange(n, dtype=np.float32) * (box / n)
    qx, qy, qz = np.meshgrid(q, q, q, indexing="ij")
    s = grid // split
    out = np.zeros((split**3, s, s, s, len(redshifts)), np.int16)
    for c, z in enumerate(redshifts):
        d1, d2 = growth(om, 1 / (1 + z))
        idx = []
        for qa, p1, p2 in [(qx, psi[0], psi2[0]), (qy, psi[1], psi2[1]), (qz, psi[2], psi2[2])]:
            x = (qa + d1 * p1 + d2 * p2) * (grid / box)
            idx.append(np.floor(x + 0.5).astype(np.int64) % grid)
        flat = (idx[0] * grid + idx[1]) * grid + idx[2]
        counts = np.bincount(flat.ravel(), minlength=grid**3).reshape(grid, grid, grid)
        sub = counts.reshape(split, s, split, s, split, s).transpose(0, 2, 4, 1, 3, 5).reshape(split**3, s, s, s)
        out[..., c] = np.minimum(sub, 32767).astype(np.int16)
    return out


def main():
    global FFT_TIME
    n, grid, box, split, reps = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    times, ffts = [], []
    for r in range(reps):
        FFT_TIME = 0.0
        t = time.perf_counter()
        one_box(n, grid, box, split, [0.0, 0.5, 1.5, 3.0], r)
        times.append(time.perf_counter() - t)
        ffts.append(FFT_TIME)
    print(json.dumps({"seconds_per_box": float(np.median(times)), "fft_seconds_per_box": float(np.median(ffts))}))


if __name__ == "__main__":
    main()
