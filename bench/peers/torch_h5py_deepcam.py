"""Peer: DeepCAM HDF5 samples through torch.utils.data.DataLoader with h5py
in its worker processes (what a PyTorch user writes: a map-style Dataset
opening each file, min-max normalising with stats.h5, CHW), batched by the
DataLoader. Prints {"samples_per_s": ...}.

usage: torch_h5py_deepcam.py WORKERS REPS BATCH STATS FILE...
"""
import json
import statistics
import sys
import time

import h5py
import numpy as np
import torch

workers, reps, batch, stats_path, files = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:]
torch.set_num_threads(1)
with h5py.File(stats_path, "r") as f:
    MINVAL = f["climate/minval"][...]
    RANGE = f["climate/maxval"][...] - MINVAL


class Deepcam(torch.utils.data.Dataset):
    def __len__(self):
        return len(files)

    def __getitem__(self, i):
        with h5py.File(files[i], "r") as f:
            data = f["climate/data"][...]
            labels = f["climate/labels_0"][...]
        data = np.ascontiguousarray(np.transpose((data - MINVAL) / RANGE, (2, 0, 1)), dtype=np.float32)
        return torch.from_numpy(data), torch.from_numpy(labels.astype(np.float32))


if __name__ == "__main__":
    loader = torch.utils.data.DataLoader(Deepcam(), batch_size=batch, num_workers=workers, prefetch_factor=2,
                                         persistent_workers=True)
    rates = []
    for _ in range(reps):
        started = time.perf_counter()
        samples = sum(len(x) for x, _ in loader)
        rates.append(samples / (time.perf_counter() - started))
    print(json.dumps({"samples_per_s": statistics.median(rates)}))
