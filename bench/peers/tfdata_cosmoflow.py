"""Peer: CosmoFlow TFRecords through tf.data, as MLPerf HPC's reference reader does
(TFRecordDataset + parse_single_example + decode_raw(int16) + cast + log(x+1)),
with num_parallel_calls=WORKERS and prefetch. Prints {"samples_per_s": ...}.

usage: tfdata_cosmoflow.py WORKERS REPS FILE...
"""
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

workers, reps, files = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
tf.config.threading.set_inter_op_parallelism_threads(workers)
tf.config.threading.set_intra_op_parallelism_threads(workers)
spec = {"x": tf.io.FixedLenFeature([], tf.string), "y": tf.io.FixedLenFeature([4], tf.float32)}


def parse(record):
    f = tf.io.parse_single_example(record, spec)
    x = tf.reshape(tf.io.decode_raw(f["x"], tf.int16), (128, 128, 128, 4))
    return tf.math.log(tf.cast(x, tf.float32) + 1.0), f["y"]


times = []
for _ in range(reps):
    ds = tf.data.TFRecordDataset(files).map(parse, num_parallel_calls=workers).prefetch(4)
    start = time.perf_counter()
    n = 0
    for x, y in ds:
        n += 1
    times.append(time.perf_counter() - start)
times.sort()
print(json.dumps({"samples": n, "samples_per_s": n / times[len(times) // 2]}))
