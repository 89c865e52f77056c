"""Peer: DeepCAM HDF5 samples read by h5py in a multiprocessing pool (the
climate paper's answer to libhdf5's global lock), min-max normalised with
stats.h5 and transposed to CHW, arrays returned to the consumer.
Prints {"samples_per_s": ...}.

usage: h5py_deepcam.py WORKERS REPS STATS FILE...
"""
import json
import multiprocessing as mp
import sys
import time

import h5py
import numpy as np

workers, reps, stats_path, files = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
with h5py.File(stats_path, "r") as f:
    MINVAL = f["climate/minval"][...]
    RANGE = f["climate/maxval"][...] - MINVAL


def load(path):
    with h5py.File(path, "r") as f:
        data = f["climate/data"][...]
        labels = f["climate/labels_0"][...]
    data = (data - MINVAL) / RANGE
    return np.ascontiguousarray(np.transpose(data, (2, 0, 1))), labels


if __name__ == "__main__":
    times = []
    with mp.Pool(workers) as pool:
        for _ in range(reps):
            start = time.perf_counter()
            n = sum(1 for _ in pool.imap(load, files))
            times.append(time.perf_counter() - start)
    times.sort()
    print(json.dumps({"samples": n, "samples_per_s": n / times[len(times) // 2]}))
