"""The MLPerf HPC CosmoFlow Keras model (mlcommons/hpc
cosmoflow/models/cosmoflow.py layout), shared by the TensorFlow peers of
the trainer benches: 5 x [Conv3D 3^3 same, base*2^i filters, LeakyReLU 0.3,
MaxPool3D 2], Dense 128 and 64 with LeakyReLU and dropout 0.5, Dense 4
tanh x 1.2."""
import numpy as np
import tensorflow as tf

layers = tf.keras.layers


def initializer(name):
    """`glorot_uniform` (Keras' default) or `he_uniform_mod` (the MLPerf
    reference's option: He-uniform scaled for LeakyReLU 0.3)."""
    if name == "he_uniform_mod":
        return tf.keras.initializers.VarianceScaling(scale=2.0 / (1 + 0.3**2), mode="fan_in", distribution="uniform")
    return name


def max_pool_by_reduce_max(t):
    """2^3 max pooling as reshape + reduce_max: TensorFlow then routes each
    window's gradient to its maximum (the exact subgradient), which its
    MaxPool3D gradient kernel does not do (see cosmoflow_tf_crosscheck.py)."""
    b, d, h, w, c = (-1, t.shape[1] // 2, t.shape[2] // 2, t.shape[3] // 2, t.shape[4])
    windows = tf.transpose(tf.reshape(t, [b, d, 2, h, 2, w, 2, c]), [0, 1, 3, 5, 7, 2, 4, 6])
    return tf.reduce_max(tf.reshape(windows, [b, d, h, w, c, 8]), axis=-1)


def build(input_size, base, dropout=0.5, kernel_init="glorot_uniform", pool="maxpool3d"):
    init = initializer(kernel_init)
    inputs = layers.Input(shape=(input_size, input_size, input_size, 4))
    h = inputs
    for i in range(5):
        h = layers.Conv3D(base * 2**i, kernel_size=3, padding="same", kernel_initializer=init)(h)
        h = layers.LeakyReLU(0.3)(h)
        h = layers.MaxPool3D(pool_size=2)(h) if pool == "maxpool3d" else layers.Lambda(max_pool_by_reduce_max)(h)
    h = layers.Flatten()(h)
    for width in (128, 64):
        h = layers.Dense(width, kernel_initializer=init)(h)
        h = layers.LeakyReLU(0.3)(h)
        h = layers.Dropout(dropout)(h)
    h = layers.Dense(4, activation="tanh", kernel_initializer=init)(h)
    outputs = layers.Lambda(lambda x: x * 1.2)(h)
    return tf.keras.Model(inputs, outputs)


def trainer_to_keras(model, flat):
    """The trainer's flat f32 parameters (its traversal order: conv kernel
    [out, in, k, k, k] then bias, dense [in, out] then bias) as arrays in
    the layout of `model`'s trainable weights (Keras keeps a 3-D kernel as
    [k, k, k, in, out])."""
    arrays, offset = [], 0
    for weight in model.trainable_weights:
        shape = tuple(weight.shape)
        ours = shape[::-1][:2] + shape[:3] if len(shape) == 5 else shape
        n = int(np.prod(shape))
        values = flat[offset : offset + n].reshape(ours)
        arrays.append(values.transpose(2, 3, 4, 1, 0) if len(shape) == 5 else values)
        offset += n
    assert offset == flat.size, f"{flat.size} values, the model has {offset}"
    return arrays
