"""Runnable examples; each has a ``main`` that the test suite calls against real nodes."""
