"""Peer of `simgen multislice`'s benchmark: the same CBED scan in abTEM.

Reads the specimen and probe positions the Rust bench wrote (so both codes
image the very same atoms), runs abTEM's multislice on the CPU with the
same thread count, grid, slices, Kirkland parameterisation, band limit
(2/3 of Nyquist, no taper) and scan, and prints one JSON line: the median
wall time of `reps` scans and the patterns' file. The patterns (positions,
kx, ky), float32, cropped by abTEM to the antialiasing cutoff, go to
DIR/abtem_patterns.f32.

usage: abtem_multislice.py DIR THREADS REPS
DIR holds atoms.txt (x y z Z per line, Å), positions.txt (x y per line),
config.json (cell, grid, energy, semiangle, slices).
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
from ase import Atoms  # noqa: E402


def main():
    out = sys.argv[1]
    reps = int(sys.argv[3])
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
    patterns.tofile(os.path.join(out, "abtem_patterns.f32"))
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
    }))


if __name__ == "__main__":
    main()
