"""TensorFlow bridge: a ``tf.data.Dataset`` of a loader's batches.

>>> import stagehand, stagehand.tf                                   # doctest: +SKIP
>>> ds = stagehand.tf.dataset(stagehand.Loader(data, batch_size=4))   # doctest: +SKIP
>>> model.fit(ds, epochs=2)                                          # doctest: +SKIP

Each pass over the ``tf.data.Dataset`` is one epoch of the loader. The
batches are already made: do not ``.batch()`` them again. TensorFlow copies
each array into a tensor of its own (``from_generator`` cannot share
memory); prefetching in the loader keeps that copy off the critical path.
Traces (targets of different lengths) come as ``(x, y, offsets)``: all the
batch's choices and where each sample's start. Records (``Dataset.tfrecord``,
``.npz``, ``.hdf5``) come as ``(x, offsets)``: every byte of the batch,
uint8, and where each sample's start
(``tf.RaggedTensor.from_row_splits(x, offsets)`` gives one row a sample).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from ._loader import Loader
from ._stagehand import Dataset


def signature(dataset: Dataset):
    """The ``output_signature`` of a loader's batches over ``dataset``."""
    if dataset.kind == "records":
        return tf.TensorSpec(shape=(None,), dtype=tf.uint8), tf.TensorSpec(shape=(None,), dtype=tf.int64)
    x = tf.TensorSpec(shape=(None, *dataset.x_shape), dtype=tf.float32)
    if dataset.y_shape is None:
        y = tf.TensorSpec(shape=(None, Dataset.CHOICE_WIDTH), dtype=tf.float32)
        return x, y, tf.TensorSpec(shape=(None,), dtype=tf.int64)
    return x, tf.TensorSpec(shape=(None, *dataset.y_shape), dtype=tf.float32)


def dataset(loader: Loader) -> tf.data.Dataset:
    """The loader's batches, an epoch per pass, as a ``tf.data.Dataset``."""
    ragged = loader.dataset.y_shape is None
    records = loader.dataset.kind == "records"

    def batches():
        for x, y, offsets, _ in loader.raw_batches():
            if records:
                if offsets is None:  # equal lengths: (n, length)
                    offsets = np.arange(x.shape[0] + 1, dtype=np.int64) * x.shape[1]
                yield x.reshape(-1), offsets
            else:
                yield (x, y, offsets) if ragged else (x, y)

    return tf.data.Dataset.from_generator(batches, output_signature=signature(loader.dataset))
