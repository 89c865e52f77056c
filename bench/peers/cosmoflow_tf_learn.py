"""Peer of the trainer's learning check: the same Keras model as
the step bench (cosmoflow_keras.py) trained on a simgen CosmoFlow directory
with the trainer's split (the last --held-out share of the files is the
validation set), Adam, batch 8, a reshuffle every epoch. Prints, per epoch,
the training loss and the validation MAE per parameter and as a ratio to
predicting the training mean; the last line is JSON.

    bench/.venv/bin/python bench/peers/cosmoflow_tf_learn.py DIR --epochs 12
"""
import argparse
import glob
import json
import os

parser = argparse.ArgumentParser()
parser.add_argument("data")
parser.add_argument("--epochs", type=int, default=12)
parser.add_argument("--batch", type=int, default=8)
parser.add_argument("--lr", type=float, default=0.001)
parser.add_argument("--held-out", type=float, default=0.2)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--kernel-init", default="glorot_uniform", choices=["glorot_uniform", "he_uniform_mod"])
parser.add_argument("--pool", default="maxpool3d", choices=["maxpool3d", "reduce_max"])
parser.add_argument("--dropout", type=float, default=0.5)
parser.add_argument("--epsilon", type=float, default=1e-7, help="Adam epsilon (Keras default 1e-7; the trainer uses 1e-8)")
parser.add_argument(
    "--init",
    help="start from these parameters: little-endian f32 in the trainer's order and layout "
    "(conv [out, in, k, k, k], dense [in, out], each followed by its bias), as params.f32 of a trainer checkpoint",
)
args = parser.parse_args()

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from cosmoflow_keras import build, trainer_to_keras  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(args.threads)
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.keras.utils.set_random_seed(args.seed)
spec = {"x": tf.io.FixedLenFeature([], tf.string), "y": tf.io.FixedLenFeature([4], tf.float32)}


def load(files):
    xs, ys = [], []
    for record in tf.data.TFRecordDataset(files):
        f = tf.io.parse_single_example(record, spec)
        raw = tf.io.decode_raw(f["x"], tf.int16).numpy()
        edge = round((raw.size // 4) ** (1 / 3))
        xs.append(np.log1p(raw.reshape(edge, edge, edge, 4).astype(np.float32)))
        ys.append(f["y"].numpy())
    return np.stack(xs), np.stack(ys)


files = sorted(glob.glob(os.path.join(args.data, "*.tfrecord")))
held = round(len(files) * args.held_out)
x_train, y_train = load(files[: len(files) - held])
x_val, y_val = load(files[len(files) - held :])
mean_mae = np.abs(y_val - y_train.mean(axis=0)).mean(axis=0)
model = build(x_train.shape[1], 8, dropout=args.dropout, kernel_init=args.kernel_init, pool=args.pool)
if args.init:
    for weight, values in zip(model.trainable_weights, trainer_to_keras(model, np.fromfile(args.init, dtype="<f4"))):
        weight.assign(values)
model.compile(optimizer=tf.keras.optimizers.Adam(args.lr, epsilon=args.epsilon), loss="mse")
history = []
for epoch in range(1, args.epochs + 1):
    fit = model.fit(x_train, y_train, batch_size=args.batch, epochs=1, shuffle=True, verbose=0)
    mae = np.abs(model.predict(x_val, batch_size=64, verbose=0) - y_val).mean(axis=0)
    ratio = float((mae / mean_mae).mean())
    history.append({"epoch": epoch, "loss": fit.history["loss"][0], "val_mae": mae.round(3).tolist(), "ratio": ratio})
    print(f"epoch {epoch}: loss {fit.history['loss'][0]:.4f} val MAE {mae.round(3)} = {100 * ratio:.0f}% of the mean", flush=True)
print(json.dumps({"train": len(x_train), "val": len(x_val), "mean_mae": mean_mae.round(3).tolist(), "epochs": history}))
