"""Benchmarks of tensorflow-ignite against Ignite's own Java thin client, pyignite and the loopback limit.

``python -m bench.run`` (``make bench``) starts its own Ignite nodes, runs every
scenario with every contender in one process, alternating, and writes
``BENCHMARKS.md``.  Modules:

* :mod:`bench.run` -- the command line, the order of scenarios, ``--runs N`` (the whole
  measurement N times in one command: issue 19's targets over 3 runs, ``make bench-3``) and what
  was cut to keep one full run near 10 minutes;
* :mod:`bench.scenarios` -- data set-up and contenders of each scenario;
* :mod:`bench.contenders` -- the readers being compared (IgniteDataset, our reader
  alone, Ignite's Java thin client, pyignite + ``from_generator``, a raw socket);
* :mod:`bench.loading` -- the loading scenario (issue 19): ``write`` and ``ignite-tf load``
  against the Java thin client's ``putAll``, a thick client's ``IgniteDataStreamer`` and
  pyignite, into a fresh cache per run, with the bytes sent to each node;
* :mod:`bench.harness` -- alternating repetitions, medians, ratios, targets;
* :mod:`bench.memory`, :mod:`bench.ceiling`, :mod:`bench.machine` -- peak RSS, the
  loopback ceiling server, machine and version facts;
* :mod:`bench.profiling` -- py-spy (or pyinstrument) profiles of contenders that
  miss a target;
* :mod:`bench.report` -- the tables (the targets over several runs too) and BENCHMARKS.md;
* :mod:`bench.javaclient` -- runs the Java reference programs of ``bench/java``
  (``JavaLoader``: the long-lived loading references);
* :mod:`bench.filesystem`, :mod:`bench.s3anchor` -- checkpoints and one file through
  ``ignite://`` against local disk and an S3 server (SeaweedFS, reached through s3fs)
  started for them.
"""
