"""Peer of the trainer step bench: the MLPerf HPC CosmoFlow
Keras model (mlcommons/hpc cosmoflow/models/cosmoflow.py layout) at the
trainer's reduced size, trained with SGD + momentum on random batches, on a
fixed number of CPU threads. Prints one JSON line: median step seconds,
and forward-only seconds.

    bench/.venv/bin/python bench/peers/cosmoflow_tf_step.py --batch 8 --steps 10 --threads 2 [--precision bf16]
"""
import argparse
import json
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--batch", type=int, default=8)
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--warmup", type=int, default=2)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--input", type=int, default=32)
parser.add_argument("--base-filters", type=int, default=8)
# bf16: Keras' "mixed_bfloat16" policy (layers compute in bf16 through
# oneDNN, variables and the optimiser stay f32; the loss in f32 on the
# output cast back): TensorFlow's mixed-precision recipe.
parser.add_argument("--precision", choices=["f32", "bf16"], default="f32")
args = parser.parse_args()

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# TensorFlow turns its oneDNN kernels on by default only on CPUs with
# AVX-512 VNNI or newer; on an AVX2-only CPU it falls back to Eigen, whose
# Conv3D step is about 3x slower here. The peer gets its fastest path.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(args.threads)
tf.config.threading.set_inter_op_parallelism_threads(1)
from cosmoflow_keras import build  # noqa: E402

if args.precision == "bf16":
    tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")

model = build(args.input, args.base_filters)
optimizer = tf.keras.optimizers.SGD(learning_rate=0.001, momentum=0.9)
loss_fn = tf.keras.losses.MeanSquaredError()


@tf.function
def step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, tf.cast(model(x, training=True), tf.float32))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


@tf.function
def forward(x):
    return model(x, training=False)


rng = np.random.default_rng(0)
shape = (args.batch, args.input, args.input, args.input, 4)
x = tf.constant(np.log1p(rng.poisson(2.0, size=shape)).astype(np.float32))
y = tf.constant(rng.uniform(-1, 1, size=(args.batch, 4)).astype(np.float32))
times, fwd = [], []
for k in range(args.warmup + args.steps):
    t = time.perf_counter()
    step(x, y).numpy()
    if k >= args.warmup:
        times.append(time.perf_counter() - t)
for k in range(args.warmup + args.steps):
    t = time.perf_counter()
    forward(x).numpy()
    if k >= args.warmup:
        fwd.append(time.perf_counter() - t)
print(json.dumps({
    "step_seconds": float(np.median(times)),
    "forward_seconds": float(np.median(fwd)),
    "parameters": int(model.count_params()),
    "tensorflow": tf.__version__,
    "onednn": os.environ["TF_ENABLE_ONEDNN_OPTS"] == "1",
    "threads": args.threads,
    "batch": args.batch,
    "precision": args.precision,
}))
