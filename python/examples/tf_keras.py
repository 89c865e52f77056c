"""Keras training on a CosmoFlow dataset read by Stagehand.

    python tf_keras.py /data/cosmo

The loader makes the batches (do not `.batch()` them again); each pass
over the `tf.data.Dataset` is one epoch of the loader.
"""

import sys

import tensorflow as tf

import stagehand
import stagehand.tf


def main(root: str, epochs: int = 2) -> None:
    tf.random.set_seed(0)
    data = stagehand.Dataset.from_manifest(root)
    loader = stagehand.Loader(data, batch_size=4, workers=2, seed=0)
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=data.x_shape),
            tf.keras.layers.Conv3D(8, 3, padding="same", activation="leaky_relu"),
            tf.keras.layers.GlobalAveragePooling3D(),
            tf.keras.layers.Dense(data.y_shape[0]),
        ]
    )
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss="mse")
    history = model.fit(stagehand.tf.dataset(loader), epochs=epochs, verbose=0)
    for epoch, loss in enumerate(history.history["loss"]):
        print(f"epoch {epoch}: loss {loss:.4f}")


if __name__ == "__main__":
    main(sys.argv[1])
