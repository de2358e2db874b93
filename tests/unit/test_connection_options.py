"""ConnectionOptions.from_env: the one reader of the connection variables (no server needed)."""

from __future__ import annotations

import pytest

from tensorflow_ignite.client import ConnectionOptions
from tensorflow_ignite.client.env import DATASET_PREFIX, FS_PREFIX
from tensorflow_ignite.errors import ConfigurationError


def test_every_connection_field_has_its_variable() -> None:
    env = {"IGNITE_DATASET_HOST": "node-3", "IGNITE_DATASET_PORT": "10900", "IGNITE_DATASET_USERNAME": "u",
           "IGNITE_DATASET_PASSWORD": "p", "IGNITE_DATASET_CAFILE": "ca.pem", "IGNITE_DATASET_CERTFILE": "c.pem",
           "IGNITE_DATASET_KEYFILE": "k.pem", "IGNITE_DATASET_CERT_PASSWORD": "kp",
           "IGNITE_DATASET_SERVER_HOSTNAME": "ignite.example", "IGNITE_DATASET_INSECURE_SKIP_VERIFY": "no",
           "IGNITE_DATASET_INSECURE_SKIP_HOSTNAME_VERIFICATION": "yes", "IGNITE_DATASET_TIMEOUT": "7.5",
           "IGNITE_DATASET_CONNECT_TIMEOUT": "2", "IGNITE_DATASET_IDLE_TIMEOUT": "4.5"}
    assert ConnectionOptions.from_env(env, host="given", timeout=3.0) == ConnectionOptions(
        host="node-3", port=10900, username="u", password="p", cafile="ca.pem", certfile="c.pem",
        keyfile="k.pem", cert_password="kp", server_hostname="ignite.example", insecure_skip_verify=False,
        insecure_skip_hostname_verification=True, timeout=7.5, connect_timeout=2.0, idle_timeout=4.5)


def test_arguments_stand_where_no_variable_is_set_and_empty_means_unset() -> None:
    options = ConnectionOptions.from_env({"IGNITE_DATASET_HOST": ""}, host="given", port=11000)
    assert (options.host, options.port, options.uses_tls) == ("given", 11000, False)


def test_one_rule_turns_tls_on() -> None:
    assert not ConnectionOptions().uses_tls
    for name in ("CAFILE", "CERTFILE", "SERVER_HOSTNAME"):
        assert ConnectionOptions.from_env({DATASET_PREFIX + name: "x"}).uses_tls, name
    for name in ("INSECURE_SKIP_VERIFY", "INSECURE_SKIP_HOSTNAME_VERIFICATION"):
        assert ConnectionOptions.from_env({DATASET_PREFIX + name: "1"}).uses_tls, name


def test_the_first_prefix_that_sets_a_field_wins() -> None:
    env = {"IGNITE_FS_HOST": "fs-host", "IGNITE_DATASET_HOST": "ds-host", "IGNITE_DATASET_PORT": "1234"}
    options = ConnectionOptions.from_env(env, prefixes=(FS_PREFIX, DATASET_PREFIX))
    assert (options.host, options.port) == ("fs-host", 1234)
    assert ConnectionOptions.from_env(env).host == "ds-host"


@pytest.mark.parametrize(("name", "value"), [("PORT", "ten"), ("PORT", "70000"), ("TIMEOUT", "soon"),
                                             ("TIMEOUT", "0"), ("INSECURE_SKIP_VERIFY", "maybe"),
                                             ("IDLE_TIMEOUT", "-1"), ("CONNECT_TIMEOUT", "never")])
def test_a_bad_value_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=DATASET_PREFIX + name):
        ConnectionOptions.from_env({DATASET_PREFIX + name: value})


def test_every_wait_is_bounded_by_default_within_failure_detection() -> None:
    # Ignite drops a silent node after failureDetectionTimeout (10 s by default); a client
    # abandons it sooner, so a read goes on elsewhere as soon as the cluster allows.
    options = ConnectionOptions()
    assert (options.connect_timeout, options.idle_timeout, options.timeout) == (5.0, 8.0, 30.0)
    assert options.idle_timeout < 10.0 and options.connect_timeout < 10.0


@pytest.mark.parametrize("name", ["timeout", "connect_timeout", "idle_timeout"])
@pytest.mark.parametrize("value", [0, -2.0, None, True])
def test_a_timeout_that_is_not_a_positive_number_is_refused_by_name(name: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=f"{name}="):
        ConnectionOptions(**{name: value})  # type: ignore[arg-type]


def test_the_partitions_variable_is_read_in_one_place() -> None:
    from tensorflow_ignite.client.env import PARTS_VARIABLE, env_partitions
    from tensorflow_ignite.data.env import apply_env_overrides
    from tensorflow_ignite.launcher.worker import WorkerContext

    assert PARTS_VARIABLE == "IGNITE_DATASET_PARTS"
    assert env_partitions({PARTS_VARIABLE: "5-7, 1,1"}) == (1, 5, 6, 7)
    assert env_partitions({PARTS_VARIABLE: ""}) is None and env_partitions({}) is None
    assert apply_env_overrides({}, {PARTS_VARIABLE: "0,2"})["parts"] == (0, 2)
    assert WorkerContext.from_env({PARTS_VARIABLE: "3-4"}).partitions == (3, 4)
    assert WorkerContext.from_env({}).partitions == ()
    with pytest.raises(ConfigurationError, match=PARTS_VARIABLE):
        env_partitions({PARTS_VARIABLE: "x"})


def test_settings_in_hands_on_what_a_function_was_given() -> None:
    def connect(host: str = "h", port: int = 1, *, username: str | None = None, password: str | None = None,
                timeout: float | None = None, batch_size: int = 8) -> dict[str, object]:
        return ConnectionOptions.settings_in(locals())

    # The endpoint stays with the caller, other keywords are not settings, None takes the field's default.
    assert connect(username="u", password="p") == {"username": "u", "password": "p"}
    assert connect(timeout=2.5) == {"timeout": 2.5}
    full = ConnectionOptions(host="a", port=2, username="u", password="p", cafile="ca.pem", timeout=3.0,
                             fallbacks=("b:3",))
    # Round trip of every setting (IgniteClient.from_options builds its client this way).
    assert ConnectionOptions.from_address(full.endpoints, **ConnectionOptions.settings_in(vars(full))) == full
