"""Everything is declared in pyproject.toml; this only marks the wheel as platform-specific.

The package ships prebuilt native libraries (``tensorflow_ignite/native/*.so``), so
its wheel is tagged for one CPython ABI and platform, not ``py3-none-any``.
"""

from setuptools import setup
from setuptools.dist import Distribution


class BinaryDistribution(Distribution):
    """A distribution with compiled code, though setuptools builds none of it."""

    def has_ext_modules(self) -> bool:
        return True


setup(distclass=BinaryDistribution)
