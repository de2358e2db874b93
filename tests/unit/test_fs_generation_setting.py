"""The ``generation`` and ``storage`` settings of ``ignite://``: which Ignite generation a store's
cluster is, and where its tables live."""

from __future__ import annotations

import pytest

from tensorflow_ignite.errors import ConfigurationError
from tensorflow_ignite.fs import config as fs_config


def test_auto_by_default_and_named_by_variable_or_configure() -> None:
    assert fs_config.settings(environ={}).generation == "auto"
    assert fs_config.settings(environ={"IGNITE_FS_GENERATION": " 3 "}).generation == "3"
    assert fs_config.parse_settings({"generation": 2}) == {"generation": "2"}
    assert fs_config.parse_settings({"generation": "AUTO"}) == {"generation": "auto"}


@pytest.mark.parametrize("value", ["4", "ignite3", ""])
def test_other_values_are_refused_naming_the_choices(value: str) -> None:
    with pytest.raises(ConfigurationError, match="expected one of auto, 2, 3"):
        fs_config.parse_settings({"generation": value})
    if value:
        with pytest.raises(ConfigurationError, match="IGNITE_FS_GENERATION"):
            fs_config.settings(environ={"IGNITE_FS_GENERATION": value})


def test_storage_is_the_default_one_unless_named() -> None:
    """``storage``: the Ignite 3 storage profile / Ignite 2 data region of the store's tables."""
    assert fs_config.settings(environ={}).storage == ""
    assert fs_config.settings(environ={"IGNITE_FS_STORAGE": "aimem"}).storage == "aimem"
    assert "storage" in fs_config.SETTING_NAMES
    a = fs_config.settings(environ={}).updated(storage="aimem")
    assert a.storage == "aimem" and a != fs_config.settings(environ={})  # another store in the pool
