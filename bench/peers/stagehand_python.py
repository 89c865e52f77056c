"""Stagehand's Python loader over the bench's files: samples/s of a Python
consumer (the median epoch after the first), and the share of the run it waited (after the first epoch; over the one epoch when REPS
is 1). With CONSUMER_SECONDS > 0 the
consumer sleeps that long per batch (a training step slower than decoding).
Prints {"samples_per_s": ..., "consumer_wait_fraction": ...}.

usage: stagehand_python.py cosmo|deepcam WORKERS REPS BATCH CONSUMER_SECONDS [STATS] FILE...
"""
import json
import sys
import time

import stagehand

kind, workers, reps, batch, consumer = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
if kind == "cosmo":
    data = stagehand.Dataset.cosmoflow(sys.argv[6:], size=128, channels=4)
else:
    data = stagehand.Dataset.deepcam(sys.argv[7:], sys.argv[6])
loader = stagehand.Loader(data, batch_size=batch, workers=workers, prefetch=4, shuffle=False, rank=0, world_size=1)
rates = []
# Zeros before the first epoch: with REPS 1 the wait is that of the whole run.
first = loader.metrics()
for epoch in range(reps):
    if epoch == 1:
        # The first epoch also allocates the batch buffers: the wait is measured after it.
        first = loader.metrics()
    started = time.perf_counter()
    samples = 0
    for x, y in loader:
        samples += len(x)
        if consumer > 0:
            time.sleep(consumer)
    rates.append(samples / (time.perf_counter() - started))
end = loader.metrics()
waited = end["consumer_wait_seconds"] - first["consumer_wait_seconds"]
# The epochs after the first, as the Rust loader's figure: the first one
# faults in this new process's fresh memory.
steady = rates[1:] if len(rates) > 1 else rates
# The upper middle, as the Rust bench's median takes it.
print(json.dumps({"samples_per_s": sorted(steady)[len(steady) // 2], "consumer_wait_fraction": waited / (end["seconds"] - first["seconds"])}))
