"""Every entry point takes the same connection keywords (issue 45: one API): ``ConnectionKeywords``,
checked by ``ConnectionOptions.settings_given`` before anything is dialled."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import tensorflow_ignite as ti
from tensorflow_ignite.client import IgniteClient as Ignite2Client
from tensorflow_ignite.client.options import ConnectionKeywords, ConnectionOptions
from tensorflow_ignite.errors import ConfigurationError

#: The fields of ConnectionOptions that say where the cluster is, not how to talk to it.
ENDPOINT = {"host", "port", "fallbacks"}

#: Each entry point, called with ``**connection`` and nothing that could reach a server first.
ENTRY_POINTS = {
    "IgniteClient": lambda **kw: ti.IgniteClient("127.0.0.1:1", **kw),
    "IgniteClient (Ignite 2)": lambda **kw: Ignite2Client("127.0.0.1:1", **kw),
    "write": lambda **kw: ti.write("c", {"x": [1]}, host="127.0.0.1", port=1, **kw),
    "predict": lambda **kw: ti.predict("model.keras", "src", "out", host="127.0.0.1", port=1, **kw),
    "IgniteDataset.from_sql": lambda **kw: ti.IgniteDataset.from_sql("SELECT 1", (), "127.0.0.1", 1, **kw),
    "IgniteDataset.follow": lambda **kw: ti.IgniteDataset.follow("c", "127.0.0.1", 1, **kw),
}


def test_the_keywords_are_the_options_fields_but_the_endpoint() -> None:
    assert set(ConnectionKeywords.__annotations__) == set(ConnectionOptions.field_names()) - ENDPOINT


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_entry_point_takes_the_connection_keywords(entry: str) -> None:
    target: Any = {"IgniteClient": ti.IgniteClient.__init__, "IgniteClient (Ignite 2)": Ignite2Client.__init__,
                   "write": ti.write, "predict": ti.predict, "IgniteDataset.from_sql": ti.IgniteDataset.from_sql,
                   "IgniteDataset.follow": ti.IgniteDataset.follow}[entry]
    params = inspect.signature(target).parameters
    assert "connection" in params and params["connection"].kind is inspect.Parameter.VAR_KEYWORD
    assert not set(params) & set(ConnectionKeywords.__annotations__), "spelled out besides **connection"


def test_ignite_dataset_spells_every_keyword_out() -> None:
    """``IgniteDataset`` keeps tf.contrib's positional signature (cache, host, port, local, part,
    page_size, username, password, certfile, keyfile, cert_password), so it names each keyword."""
    params = inspect.signature(ti.IgniteDataset.__init__).parameters
    assert set(ConnectionKeywords.__annotations__) <= set(params)
    assert list(params)[1:12] == ["cache_name", "host", "port", "local", "part", "page_size", "username", "password",
                                  "certfile", "keyfile", "cert_password"]
    for name in ConnectionKeywords.__annotations__:
        assert params[name].default in (None, False), name  # None or off: ConnectionOptions' default


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_misspelt_keyword_is_a_type_error_naming_the_setting_meant(entry: str) -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'pasword'; did you mean 'password'\?"):
        ENTRY_POINTS[entry](username="u", pasword="p")
    with pytest.raises(TypeError, match=r"'colour'; the connection keywords are username, password"):
        ENTRY_POINTS[entry](colour="blue")


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_username_without_a_password_is_refused_before_dialling(entry: str) -> None:
    with pytest.raises(ConfigurationError, match="username and password go together"):
        ENTRY_POINTS[entry](username="alice")


def test_none_takes_the_default_and_values_pass_through() -> None:
    given = {"username": None, "timeout": None, "idle_timeout": 3.0, "insecure_skip_verify": True}
    settings = ConnectionOptions.settings_given("f", given)
    assert settings == {"idle_timeout": 3.0, "insecure_skip_verify": True}
    options = ConnectionOptions(host="h", **settings)
    assert (options.timeout, options.idle_timeout, options.uses_tls) == (30.0, 3.0, True)
