"""IgniteDataset and the writer: Ignite caches and SQL tables as ``tf.data`` pipelines.

Importing this package imports TensorFlow; :mod:`tensorflow_ignite` itself does
not, until ``tensorflow_ignite.IgniteDataset`` is used.
"""
