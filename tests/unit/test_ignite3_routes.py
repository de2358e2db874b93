"""The one source of an Ignite 3 table's partition assignment, and the generation a client speaks.

``routes.Assignments`` asks PARTITION_ASSIGNMENT_GET once and keeps the answer until a response says
the assignment changed after it (or a caller forgets it); a stand-in connection counts the requests.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("msgpack")

from tensorflow_ignite.client.client import IgniteClient  # noqa: E402
from tensorflow_ignite.client.options import ConnectionOptions  # noqa: E402
from tensorflow_ignite.errors import ConfigurationError, TableNotFoundError  # noqa: E402
from tensorflow_ignite.generation import generation_of, parse_generation  # noqa: E402
from tensorflow_ignite.ignite3.client import Ignite3Client  # noqa: E402
from tensorflow_ignite.ignite3.protocol.codes import ClientOp  # noqa: E402
from tensorflow_ignite.ignite3.protocol.msgpack_io import Reader, Writer  # noqa: E402
from tensorflow_ignite.ignite3.routes import Assignments, find_table  # noqa: E402


class StandInConnection:
    """Answers TABLE_GET and PARTITION_ASSIGNMENT_GET as a node would; remembers what was asked."""

    def __init__(self, timestamp: int = 10, table: tuple[int, str] | None = (7, "PUBLIC.T")) -> None:
        self.timestamp = timestamp
        self.table = table
        self.assignment_time: int | None = None
        self.asked: list[ClientOp] = []

    def call(self, op: ClientOp, body: bytes = b"", *, what: str | None = None) -> Reader:
        self.asked.append(op)
        if op == ClientOp.TABLE_GET:
            return Reader(Writer().values(*(self.table if self.table else (None,))).bytes())
        assert op == ClientOp.PARTITION_ASSIGNMENT_GET
        return Reader(Writer().values(2, True, self.timestamp, "n1", "n2").bytes())


def _source(conn: Any) -> Assignments:
    return Assignments(7, "PUBLIC.T", lambda: conn)


def test_the_assignment_is_asked_once_and_kept() -> None:
    conn = StandInConnection()
    source = _source(conn)
    assert source.get().primaries == ("n1", "n2")
    assert source.get().primaries == ("n1", "n2")
    assert conn.asked == [ClientOp.PARTITION_ASSIGNMENT_GET]


def test_a_response_saying_the_assignment_changed_invalidates_it() -> None:
    conn = StandInConnection(timestamp=10)
    source = _source(conn)
    source.get()
    conn.assignment_time = 10  # not newer than the one kept
    source.get()
    assert len(conn.asked) == 1
    conn.assignment_time, conn.timestamp = 12, 12  # a response flagged a change at 12
    assert source.get().timestamp == 12
    source.get()
    assert len(conn.asked) == 2
    source.saw(13)  # a change another connection saw
    source.get()
    source.forget()  # a lost primary
    source.get()
    assert len(conn.asked) == 4


def test_an_assignment_without_primaries_yet_is_asked_again() -> None:
    conn = StandInConnection(timestamp=0)
    source = _source(conn)
    source.get()
    source.get()
    assert len(conn.asked) == 2


def test_a_missing_table_names_it_and_what_to_do() -> None:
    with pytest.raises(TableNotFoundError, match="table T does not exist on the Ignite 3 cluster; create it"):
        find_table(StandInConnection(table=None), "T")  # type: ignore[arg-type]


def test_a_client_says_which_generation_it_speaks_without_its_type_name() -> None:
    assert generation_of(Ignite3Client(ConnectionOptions())) == 3
    assert IgniteClient.generation == 2
    with pytest.raises(TypeError):
        generation_of(object())
    assert parse_generation(3) == "3" and parse_generation(" AUTO ") == "auto"
    with pytest.raises(ConfigurationError, match="generation=4"):
        parse_generation(4)
