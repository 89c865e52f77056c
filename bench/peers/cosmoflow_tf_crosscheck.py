"""TensorFlow side of the trainer's cross-check (trainer/benches/tf_crosscheck.rs):
loads the trainer's initial parameters into the same Keras model
(cosmoflow_keras.py, dropout off), feeds it the same batches and compares
the first step's predictions, loss and gradients, then runs the same Adam
steps (lr 1e-3, epsilon 1e-8 as the trainer) and prints both loss curves.

The first step's gradients are compared twice: with Keras' MaxPool3D, and
with the pooling written as reshape + reduce_max. Only the second routes
each window's gradient to its maximum, as the definition (and the trainer)
does; MaxPool3D's gradient kernel on the CPU differs from it by several per
cent in the layers before the last pool.

    bench/.venv/bin/python bench/peers/cosmoflow_tf_crosscheck.py DIR STEPS
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from cosmoflow_keras import build, trainer_to_keras  # noqa: E402

BATCH = 8
directory, steps = sys.argv[1], int(sys.argv[2])
tf.config.threading.set_intra_op_parallelism_threads(2)
tf.config.threading.set_inter_op_parallelism_threads(1)


def read(name):
    return np.fromfile(os.path.join(directory, name), dtype="<f4")


model = build(32, 8, dropout=0.0)
weights = model.trainable_weights
exact = build(32, 8, dropout=0.0, pool="reduce_max")


x = read("x.f32").reshape(steps, BATCH, 32, 32, 32, 4)
y = read("y.f32").reshape(steps, BATCH, 4)
for values, weight, twin in zip(trainer_to_keras(model, read("params.f32")), weights, exact.trainable_weights):
    weight.assign(values)
    twin.assign(values)
ours_grads = trainer_to_keras(model, read("grads.f32"))
ours_losses = read("losses.f32")

def relative_errors(theirs, ours):
    """Per tensor: max |ours - theirs| / max |theirs|."""
    return [float(np.abs(t - o).max() / max(np.abs(t).max(), 1e-30)) for t, o in zip(theirs, ours)]


with tf.GradientTape() as tape:
    loss = tf.reduce_mean(tf.square(exact(x[0], training=True) - y[0]))
exact_grads = [g.numpy() for g in tape.gradient(loss, exact.trainable_weights)]

optimizer = tf.keras.optimizers.Adam(1e-3, epsilon=1e-8)
losses, first = [], {}
for step in range(steps):
    with tf.GradientTape() as tape:
        prediction = model(x[step], training=True)
        loss = tf.reduce_mean(tf.square(prediction - y[step]))
    grads = tape.gradient(loss, weights)
    if step == 0:
        first["prediction_max_abs_diff"] = float(np.abs(prediction.numpy().ravel() - read("pred.f32")).max())
        first["gradient_rel_error_maxpool3d"] = relative_errors([g.numpy() for g in grads], ours_grads)
        first["gradient_rel_error_reduce_max"] = relative_errors(exact_grads, ours_grads)
    optimizer.apply_gradients(zip(grads, weights))
    losses.append(float(loss))

print("step  loss (TensorFlow)  loss (trainer)")
for step in range(steps):
    print(f"{step:4d}  {losses[step]:.6f}           {ours_losses[step]:.6f}")
print(f"first step: |prediction diff| max {first['prediction_max_abs_diff']:.2e}")
for pool in ("maxpool3d", "reduce_max"):
    errors = " ".join(f"{e:.1e}" for e in first[f"gradient_rel_error_{pool}"])
    print(f"first step gradient error per tensor against TensorFlow with {pool} pooling: {errors}")
print(
    json.dumps(
        {
            **first,
            "loss_max_abs_diff": float(np.abs(np.array(losses) - ours_losses).max()),
            "tf_losses": losses,
            "ours_losses": ours_losses.tolist(),
        }
    )
)
