"""The MLPerf HPC CosmoFlow Keras model (mlcommons/hpc
cosmoflow/models/cosmoflow.py layout), shared by the TensorFlow peers of
the trainer benches: 5 x [Conv3D 3^3 same, base*2^i filters, LeakyReLU 0.3,
MaxPool3D 2], Dense 128 and 64 with LeakyReLU and dropout 0.5, Dense 4
tanh x 1.2."""
import tensorflow as tf

layers = tf.keras.layers


def build(input_size, base, dropout=0.5):
    inputs = layers.Input(shape=(input_size, input_size, input_size, 4))
    h = inputs
    for i in range(5):
        h = layers.Conv3D(base * 2**i, kernel_size=3, padding="same")(h)
        h = layers.LeakyReLU(0.3)(h)
        h = layers.MaxPool3D(pool_size=2)(h)
    h = layers.Flatten()(h)
    for width in (128, 64):
        h = layers.Dense(width)(h)
        h = layers.LeakyReLU(0.3)(h)
        h = layers.Dropout(dropout)(h)
    h = layers.Dense(4, activation="tanh")(h)
    outputs = layers.Lambda(lambda x: x * 1.2)(h)
    return tf.keras.Model(inputs, outputs)
