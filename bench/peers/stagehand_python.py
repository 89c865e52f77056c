"""Stagehand's Python loader over the bench's files.

Two modes:

    stagehand_python.py cosmo|deepcam WORKERS REPS BATCH CONSUMER_SECONDS [STATS] FILE...

runs REPS epochs and prints {"samples_per_s": ..., "consumer_wait_fraction": ...}:
the median epoch after the first, and the share of the run the consumer
waited (after the first epoch; over the one epoch when REPS is 1). With
CONSUMER_SECONDS > 0 the consumer sleeps that long per batch (a training
step slower than decoding).

    stagehand_python.py serve cosmo|deepcam WORKERS BATCH [STATS] FILE...

runs N epochs in a row for each line "epochs N" read from stdin and
answers each with {"samples_per_s": [...]}, one rate per epoch, on a line
of its own, so that the bench can run the Rust loader's epochs between
this loader's, in the same seconds of the host.
"""
import json
import sys
import time

import stagehand


def open_loader(kind, workers, batch, rest):
    if kind == "cosmo":
        data = stagehand.Dataset.cosmoflow(rest, size=128, channels=4)
    else:
        data = stagehand.Dataset.deepcam(rest[1:], rest[0])
    return stagehand.Loader(data, batch_size=batch, workers=workers, prefetch=4, shuffle=False, rank=0, world_size=1)


def epoch_rate(loader, consumer=0.0):
    started = time.perf_counter()
    samples = 0
    for x, y in loader:
        samples += len(x)
        if consumer > 0:
            time.sleep(consumer)
    return samples / (time.perf_counter() - started)


def serve(kind, workers, batch, rest):
    loader = open_loader(kind, workers, batch, rest)
    for line in sys.stdin:
        words = line.split()
        if len(words) != 2 or words[0] != "epochs":
            break
        rates = [epoch_rate(loader) for _ in range(int(words[1]))]
        print(json.dumps({"samples_per_s": rates}), flush=True)


def run(kind, workers, reps, batch, consumer, rest):
    loader = open_loader(kind, workers, batch, rest)
    rates = []
    # Zeros before the first epoch: with REPS 1 the wait is that of the whole run.
    first = loader.metrics()
    for epoch in range(reps):
        if epoch == 1:
            # The first epoch also allocates the batch buffers: the wait is measured after it.
            first = loader.metrics()
        rates.append(epoch_rate(loader, consumer))
    end = loader.metrics()
    waited = end["consumer_wait_seconds"] - first["consumer_wait_seconds"]
    # The epochs after the first, as the Rust loader's figure: the first one
    # faults in this new process's fresh memory.
    steady = rates[1:] if len(rates) > 1 else rates
    # The upper middle, as the Rust bench's median takes it.
    print(json.dumps({"samples_per_s": sorted(steady)[len(steady) // 2], "consumer_wait_fraction": waited / (end["seconds"] - first["seconds"])}))


if sys.argv[1] == "serve":
    serve(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
else:
    run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6:])
