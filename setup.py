"""Everything is declared in pyproject.toml; this marks the wheel platform-specific and adds its binaries.

The package ships native libraries (``tensorflow_ignite/native/*.so``), so its
wheel is tagged for one CPython ABI and platform, not ``py3-none-any``; the
``build_py`` of ``build_backend/tensorflow_ignite_build.py`` compiles them and
adds the jars to every wheel built from source (see that module).
"""

import sys
from pathlib import Path

from setuptools import setup
from setuptools.dist import Distribution

# The in-tree backend's directory is on sys.path under a PEP 517 frontend; not when setup.py is run directly.
sys.path.insert(0, str(Path(__file__).resolve().parent / "build_backend"))
from tensorflow_ignite_build import BuildPy  # noqa: E402


class BinaryDistribution(Distribution):
    """A distribution with compiled code, though setuptools compiles none of it itself."""

    def has_ext_modules(self) -> bool:
        return True


setup(distclass=BinaryDistribution, cmdclass={"build_py": BuildPy})
