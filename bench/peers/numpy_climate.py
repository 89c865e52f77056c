"""Peer of `simgen climate`: the same steps for one sample,
written the way a scientist writes them with NumPy and h5py: five
red-spectrum random fields synthesised by FFT on a grid 4x coarser per axis
(latitude doubled so the poles do not wrap), bilinear upsampling, 16
channels as the same linear mixtures of them around a zonal climatology,
geostrophic winds from the pressure gradient, a label mask with one disc
per cyclone, and one HDF5 file per sample in the DeepCAM layout
(climate/data float32 (H, W, 16), climate/labels_0 int32 (H, W)).

usage: numpy_climate.py HEIGHT WIDTH SAMPLES OUT_DIR
prints one JSON line: synthesis and writing seconds per sample.
"""
import json
import os
import sys
import time

import h5py
import numpy as np

COARSE = 4
SPECTRA = [(8.0, 3.0), (10.0, 2.5), (6.0, 3.0), (12.0, 3.0), (12.0, 3.0)]


def random_field(h, w, k0, slope, rng):
    ch, cw = -(-h // COARSE), -(-w // COARSE)
    th, tw = 2 * ch, cw
    noise = rng.standard_normal((th, tw), dtype=np.float32)
    spec = np.fft.fft2(noise)
    ky = np.fft.fftfreq(th, 1.0 / th)[:, None] / 2.0
    kx = np.fft.fftfreq(tw, 1.0 / tw)[None, :]
    amp = (1.0 + (kx * kx + ky * ky) / (k0 * k0)) ** (-slope / 2.0)
    amp[0, 0] = 0.0
    coarse = np.fft.ifft2(spec * amp.astype(np.float32)).real[:ch].astype(np.float32)
    # Bilinear upsampling, periodic in longitude.
    ys = (np.arange(h) + 0.5) / COARSE - 0.5
    xs = (np.arange(w) + 0.5) / COARSE - 0.5
    y0 = np.clip(np.floor(ys).astype(int), 0, ch - 1)
    y1 = np.clip(y0 + 1, 0, ch - 1)
    fy = (ys - np.floor(ys)).astype(np.float32)[:, None]
    x0 = np.floor(xs).astype(int) % cw
    x1 = (x0 + 1) % cw
    fx = (xs - np.floor(xs)).astype(np.float32)[None, :]
    top = coarse[y0][:, x0] * (1 - fx) + coarse[y0][:, x1] * fx
    bottom = coarse[y1][:, x0] * (1 - fx) + coarse[y1][:, x1] * fx
    field = top * (1 - fy) + bottom * fy
    return (field - field.mean()) / field.std()


def sample(h, w, rng):
    pressure, moisture, temperature, wind_u, wind_v = (random_field(h, w, k0, s, rng) for k0, s in SPECTRA)
    lat = (90.0 - (np.arange(h) + 0.5) * 180.0 / h)[:, None].astype(np.float32)
    bump = np.exp(-((lat / 25.0) ** 2))
    scale = w / (2 * np.pi * 8.0)
    dpdx = (np.roll(pressure, -1, 1) - np.roll(pressure, 1, 1)) / 2 * scale
    dpdy = -np.gradient(pressure, axis=0) * scale
    coriolis = np.sign(lat) * np.minimum(np.abs(lat) / 10.0, 1.0)
    ug, vg = -dpdy * coriolis, dpdx * coriolis
    data = np.empty((h, w, 16), dtype=np.float32)
    psl = 101325 + 1500 * np.cos(np.radians(lat * 3)) + 800 * pressure
    data[..., 7] = psl
    data[..., 6] = psl - 400 + 40 * wind_u
    data[..., 13] = (psl - 100000) / 100 * 8
    jet = 12 * np.exp(-(((np.abs(lat) - 45) / 12) ** 2)) - 6 * bump
    data[..., 1] = jet + 5 * (0.8 * ug + 0.6 * wind_u)
    data[..., 2] = 5 * (0.8 * vg + 0.6 * wind_v)
    data[..., 3] = 0.7 * jet + 4 * (0.8 * ug + 0.6 * wind_u)
    data[..., 4] = 4 * (0.8 * vg + 0.6 * wind_v)
    t = 250 + 40 * np.cos(np.radians(lat))
    data[..., 9] = t - 20 + 3 * temperature
    data[..., 8] = 215 + 3 * (0.6 * temperature - 0.4 * pressure)
    data[..., 11] = t + 3 * (0.8 * temperature + 0.2 * moisture)
    data[..., 12] = t - 1 + 3 * (0.8 * temperature + 0.2 * moisture)
    data[..., 14] = 11800 + 1000 * np.cos(np.radians(lat)) + 80 * (0.7 * temperature + 0.3 * pressure)
    data[..., 15] = 60 + 5 * temperature
    clim_tmq = 4 + 46 * bump
    data[..., 0] = np.maximum(clim_tmq * (1 + 0.35 * moisture) + 0.6 * clim_tmq / 50 * wind_u, 0)
    data[..., 5] = np.maximum(0.018 * bump * (1 + 0.3 * moisture), 0)
    data[..., 10] = 3e-8 * bump * np.exp(1.2 * moisture - 0.72)
    labels = np.zeros((h, w), dtype=np.int32)
    yy, xx = np.mgrid[0:h, 0:w]
    for _ in range(rng.integers(0, 5)):
        cy, cx, r = rng.integers(h // 3, 2 * h // 3), rng.integers(0, w), max(h // 100, 2)
        labels[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = 1
    return data, labels


def main():
    h, w, n, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    synthesis = writing = 0.0
    for i in range(n):
        t = time.perf_counter()
        data, labels = sample(h, w, rng)
        synthesis += time.perf_counter() - t
        t = time.perf_counter()
        with h5py.File(os.path.join(out, f"data-{i:06}.h5"), "w") as f:
            f.create_dataset("climate/data", data=data)
            f.create_dataset("climate/labels_0", data=labels)
        writing += time.perf_counter() - t
    print(json.dumps({"synthesis_seconds_per_sample": synthesis / n, "writing_seconds_per_sample": writing / n}))


if __name__ == "__main__":
    main()
