"""Peer of `simgen multislice`'s benchmark: the same CBED scan in abTEM.

Reads the specimen and probe positions the Rust bench wrote (so both codes
image the very same atoms), runs abTEM's multislice on the CPU with the
same thread count, grid, slices, Kirkland parameterisation, band limit
(2/3 of Nyquist, no taper) and scan, and prints one JSON line: the median
wall time of `reps` scans and the patterns' file. The patterns (positions,
kx, ky), float32, cropped by abTEM to the antialiasing cutoff, go to
DIR/abtem_patterns.f32.

usage: abtem_multislice.py DIR THREADS REPS [--exact-structure-factors]
DIR holds atoms.txt (x y z Z per line, Å), positions.txt (x y per line),
config.json (cell, grid, energy, semiangle, slices).

abTEM's infinite projection places each atom on the grid by spreading a
delta function bilinearly over the four nearest pixels and dividing the
spectrum by sin(k)/k (Van den Broek et al., Ultramicroscopy 158 (2015)
89-97, the hybrid method abTEM cites). The bilinear spread low-passes an
atom that sits between pixels (one midway keeps half its amplitude per
axis at the 2/3 cutoff, which the sinc divides by only 0.98), so heavy
atoms scatter less to high angles than their scattering factor says.
`--exact-structure-factors` replaces that step with the exact sum over
atoms of f(k) exp(-2 pi i k.r) (Kirkland, Advanced Computing in
Electron Microscopy, 2nd ed. 2010, ch. 6: a slice's potential as each
atom's scattering factor times the phase of its position), which is what
`simgen multislice` computes: the bench times stock abTEM (what users
run) and checks our patterns against this mode (the same physics, so
any remaining difference is ours). The patterns then go to
DIR/abtem_exact_patterns.f32.
"""

import json
import os
import sys
import time

threads = int(sys.argv[2])
# FFTW and numpy's BLAS stay single-threaded; dask's threads carry the
# parallelism over probe positions, as our threads do.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import abtem  # noqa: E402
import dask  # noqa: E402
import numpy as np  # noqa: E402
from abtem import integrals  # noqa: E402
from ase import Atoms  # noqa: E402
from ase.data import chemical_symbols  # noqa: E402


def exact_projection(self, atoms, a, b, gpts, sampling, device="cpu"):
    """abTEM's `ScatteringFactorProjectionIntegrals.integrate_on_grid` with
    the structure factor summed exactly over the atoms' positions instead
    of bilinear deltas over a sinc: the projected potential of each
    element is the inverse DFT of f(k) S(k) / A, S(k) = sum_a
    exp(-2 pi i (kx x_a + ky y_a)), A the pixel area (abTEM's factors are
    per unit area of a pixel's delta)."""
    array = np.zeros(gpts, dtype=np.float32)
    if len(atoms) == 0:
        return array
    kx = np.fft.fftfreq(gpts[0], sampling[0])
    ky = np.fft.fftfreq(gpts[1], sampling[1])
    for number in np.unique(atoms.numbers):
        factor = self.get_scattering_factor(chemical_symbols[number], gpts, sampling, device)
        positions = atoms.positions[atoms.numbers == number]
        structure = np.exp(-2j * np.pi * np.outer(kx, positions[:, 0])) @ np.exp(
            -2j * np.pi * np.outer(positions[:, 1], ky))
        array += np.fft.ifft2(structure * factor / (sampling[0] * sampling[1])).real.astype(np.float32)
    return array


def main():
    out = sys.argv[1]
    reps = int(sys.argv[3])
    exact = "--exact-structure-factors" in sys.argv[4:]
    if exact:
        projections = getattr(integrals, "ScatteringFactorProjectionIntegrals", None)
        if not all(hasattr(projections, name) for name in ("integrate_on_grid", "get_scattering_factor")):
            sys.exit(f"--exact-structure-factors: abTEM {abtem.__version__} has no "
                     "ScatteringFactorProjectionIntegrals.integrate_on_grid to replace (written for 1.0.11)")
        projections.integrate_on_grid = exact_projection
    config = json.load(open(os.path.join(out, "config.json")))
    table = np.loadtxt(os.path.join(out, "atoms.txt"), ndmin=2)
    positions = np.loadtxt(os.path.join(out, "positions.txt"), ndmin=2)
    abtem.config.set({"antialias.taper": 0.0, "antialias.cutoff": 2.0 / 3.0, "precision": "float32",
                      "fft": "fftw", "fftw.threads": 1})
    atoms = Atoms(numbers=table[:, 3].astype(int), positions=table[:, :3], cell=config["cell"], pbc=True)
    potential = abtem.Potential(atoms, gpts=config["grid"], slice_thickness=config["slice_thickness"],
                                parametrization="kirkland", projection="infinite")
    # A hard aperture edge, as ours (abTEM tapers it by default).
    probe = abtem.Probe(energy=config["volts"], semiangle_cutoff=config["semiangle_mrad"], defocus=0, soft=False)
    probe.grid.match(potential)
    scan = abtem.CustomScan(positions)
    detector = abtem.PixelatedDetector(max_angle="cutoff")
    times = []
    patterns = None
    for _ in range(reps):
        started = time.perf_counter()
        measurement = probe.scan(potential, scan=scan, detectors=detector)
        with dask.config.set(scheduler="threads", num_workers=threads):
            measurement.compute(progress_bar=False)
        times.append(time.perf_counter() - started)
        patterns = np.asarray(measurement.array, dtype=np.float32)
    patterns.tofile(os.path.join(out, "abtem_exact_patterns.f32" if exact else "abtem_patterns.f32"))
    times.sort()
    print(json.dumps({
        "seconds_median": times[len(times) // 2],
        "seconds": times,
        "positions": int(len(positions)),
        "slices": int(potential.num_slices),
        "pattern_shape": list(patterns.shape),
        "sampling": list(potential.sampling),
        "abtem": abtem.__version__,
        "threads": threads,
        "structure_factors": "exact" if exact else "abtem",
    }))


if __name__ == "__main__":
    main()
