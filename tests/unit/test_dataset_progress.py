"""The checkpoint state of a read (client/progress.py) and the op's description (data/portable.py), no server.

Pages are real scan-page regions made by the binary encoder; the ledger is
driven the way the reader drives it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tensorflow_ignite.data import portable
from tensorflow_ignite.client.progress import ReadProgress, ResumeState, format_ranges, plan_fingerprint, row_identities
from tensorflow_ignite.data.schema import DatasetSchema, FieldSchema
from tensorflow_ignite.errors import ConfigurationError, IgniteConnectionError
from tensorflow_ignite.protocol.binary import BinaryEncoder
from tensorflow_ignite.protocol.codes import TypeCode
from tensorflow_ignite.protocol.values import BinaryObject, Int32


def _rows(keys: list[object]) -> memoryview:
    enc = BinaryEncoder()
    return memoryview(b"".join(enc.encode(k) + enc.encode(BinaryObject("R", {"v": Int32(1)})) for k in keys))


def test_identities_are_long_and_int_keys_themselves_and_digests_of_other_keys() -> None:
    ids = row_identities(_rows([7, Int32(-3), "seven", "seven", b"\x01\x02"]), 5)
    assert ids[:2].tolist() == [7, -3]
    assert ids[2] == ids[3] and len({int(ids[2]), int(ids[4]), 7, -3}) == 4


def test_state_encodes_small_and_round_trips() -> None:
    state = ResumeState(plan_fingerprint("c", range(1024)), frozenset(range(0, 700)),
                        {700: np.arange(5000, 5040, dtype=np.int64), 701: np.array([-5, 3], np.int64)})
    data = state.encode()
    back = ResumeState.decode(data)
    assert back.plan == state.plan and back.done == state.done
    assert {p: v.tolist() for p, v in back.partial.items()} == {p: v.tolist() for p, v in state.partial.items()}
    assert len(data) < 200, f"700 finished partitions and 42 keys should encode small, got {len(data)} bytes"
    assert back.epoch is None
    shuffled = ResumeState(state.plan, state.done, state.partial, epoch=12)
    assert ResumeState.decode(shuffled.encode()).epoch == 12
    with pytest.raises(ConfigurationError, match="cannot be read"):
        ResumeState.decode(b"not a state")


def test_ranges_round_trip() -> None:
    assert format_ranges([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"
    assert format_ranges([]) == ""


def test_partition_scan_ledger_states_what_was_handed_out() -> None:
    progress = ReadProgress("plan")
    # partition 3: two pages (4 + 2 rows), then partition 9: one page of 3 rows
    progress.add_page(3, _rows([30, 31, 32, 33]), 4)
    progress.add_page(3, _rows([34, 35]), 2)
    progress.complete(3)
    progress.add_page(9, _rows(["a", "b", "c"]), 3)
    progress.emitted(5)                          # rows 30..34 handed out
    state = progress.state()
    assert state.done == frozenset() and state.partial[3].tolist() == [30, 31, 32, 33, 34]
    progress.emitted(2)                          # 35 and "a": partition 3 is finished
    state = progress.state()
    assert state.done == {3} and list(state.partial) == [9] and len(state.partial[9]) == 1
    progress.complete(9)
    progress.emitted(2)
    assert progress.state().done == {3, 9} and progress.state().partial == {}


def test_a_resumed_read_carries_the_keys_of_its_partly_read_partitions() -> None:
    before = ResumeState("plan", frozenset({1}), {3: np.array([30, 31], np.int64)})
    progress = ReadProgress("plan", ResumeState.decode(before.encode()))
    assert progress.partial_ids(3).tolist() == [30, 31]
    progress.add_page(3, _rows([33]), 1)         # the rest of partition 3, rows 30 and 31 filtered out by the reader
    assert progress.state().partial[3].tolist() == [30, 31]  # nothing new handed out yet
    progress.emitted(1)
    assert progress.state().partial[3].tolist() == [30, 31, 33]
    progress.complete(3)
    assert progress.state().done == {1, 3}


def test_node_scan_partitions_count_as_finished_only_when_trusted() -> None:
    trusted: set[int] = set()
    progress = ReadProgress("plan", trust=lambda partitions: partitions & trusted)
    progress.add_rows(np.array([4, 4, 4, 6, 6]), np.array([40, 41, 42, 60, 61]))
    progress.add_rows(np.array([6, 8]), np.array([62, 80]))
    progress.emitted(7)
    state = progress.state()
    # 4 and 6 are finished by contiguity, but not trusted: their keys go into the state
    assert state.done == frozenset() and state.partial[4].tolist() == [40, 41, 42]
    assert state.partial[6].tolist() == [60, 61, 62] and state.partial[8].tolist() == [80]
    trusted.update({4, 6})
    state = progress.state()
    assert state.done == {4, 6} and list(state.partial) == [8]
    # rows of a partition that seemed finished reopen it
    progress.add_rows(np.array([4]), np.array([43]))
    progress.emitted(1)
    state = progress.state()
    assert 4 not in state.done and state.partial[4].tolist() == [40, 41, 42, 43]


def test_schema_json_round_trip() -> None:
    schema = DatasetSchema(
        key=FieldSchema("key", TypeCode.LONG, "int64"),
        value=FieldSchema("val", TypeCode.OBJ, "",
                          fields=(FieldSchema("pixels", TypeCode.BYTE_ARR, "uint8", (28, 28)),
                                  FieldSchema("tags", TypeCode.LONG_ARR, "int64", (None,)),
                                  FieldSchema("name", TypeCode.STRING, "string", nullable=False)),
                          type_name="Digit"),
        null_masks=True,
    )
    text = json.dumps(portable.schema_to_json(schema))
    assert portable.schema_from_json(json.loads(text)) == schema


def _description(**connection: object) -> str:
    conn = {"endpoints": ["127.0.0.1:1"], "username": "ignite", "password": True, "tls": False, "cafile": None,
            "client_cert": False, "key_password": False, "server_hostname": None, "insecure_skip_verify": False,
            "insecure_skip_hostname_verification": False, "timeout": 1.0, "credentials": None, **connection}
    schema = DatasetSchema(FieldSchema("key", TypeCode.LONG, "int64"), FieldSchema("val", TypeCode.LONG, "int64"))
    return json.dumps({"v": portable.DESCRIPTION_VERSION, "kind": "cache", "connection": conn, "cache": "c",
                       "plan": {"partitions": "0-1023", "local": False, "count": 1024, "node_scans": True},
                       "schema": portable.schema_to_json(schema), "page_size": None, "page_bytes": 1 << 22,
                       "batch_size": 8, "drop_remainder": False})


def test_a_rebuild_without_credentials_says_what_to_set(monkeypatch) -> None:
    for name in ("PASSWORD", "USERNAME", "PROD_PASSWORD"):
        monkeypatch.delenv(f"IGNITE_DATASET_{name}", raising=False)
    with pytest.raises(ConfigurationError, match=r"set IGNITE_DATASET_PASSWORD \(the password of Ignite user 'ignite'\)"):
        portable.rebuild(_description())
    with pytest.raises(ConfigurationError, match="IGNITE_DATASET_PROD_PASSWORD.*register_credentials\\('prod'"):
        portable.rebuild(_description(credentials="prod"))
    with pytest.raises(ConfigurationError, match="IGNITE_DATASET_CERTFILE and IGNITE_DATASET_KEYFILE"):
        portable.rebuild(_description(password=False, username=None, tls=True, client_cert=True))


def test_a_rebuild_takes_credentials_from_the_environment_or_a_registered_source(monkeypatch) -> None:
    # Credentials found: the rebuild goes on to connect (nothing listens on port 1).
    monkeypatch.setenv("IGNITE_DATASET_PASSWORD", "secret")
    with pytest.raises(IgniteConnectionError):
        portable.rebuild(_description())
    monkeypatch.delenv("IGNITE_DATASET_PASSWORD")
    portable.register_credentials("vault", lambda: {"password": "from-the-vault"})
    try:
        with pytest.raises(IgniteConnectionError):
            portable.rebuild(_description(credentials="vault"))
    finally:
        portable.register_credentials("vault", None)
    with pytest.raises(ConfigurationError, match="credentials source name"):
        portable.register_credentials("not a name", lambda: {})


def test_a_description_from_another_version_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="another version of tensorflow-ignite"):
        portable.rebuild(json.dumps({"v": 99}))
