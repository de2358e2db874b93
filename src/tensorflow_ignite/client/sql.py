"""SQL fields queries: pages of rows, streamed with one page requested ahead."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..protocol import requests, responses
from ..protocol.codes import Op
from ..protocol.hashing import cache_id as _cache_id
from ..protocol.responses import SqlPage
from .cursor import stream_pages

if TYPE_CHECKING:
    import uuid

    from .client import IgniteClient

__all__ = ["SqlCursor"]


class SqlCursor:
    """An SQL fields query, executed when first iterated.

    ``schema`` defaults to ``PUBLIC`` (tables made by ``CREATE TABLE``);
    ``cache`` runs the query in a cache's context instead.  Iterate
    :meth:`pages` for raw pages (the dataset decodes them into columns) or the
    cursor itself for decoded rows (lists of Python values).
    """

    def __init__(
        self,
        client: "IgniteClient",
        query: str,
        args: Sequence[Any] = (),
        *,
        schema: str | None = "PUBLIC",
        cache: str | None = None,
        page_size: int = 1024,
        max_rows: int = -1,
        local: bool = False,
        distributed_joins: bool = False,
        lazy: bool = False,
        timeout_ms: int = 0,
        partitions: Sequence[int] | None = None,
        node_id: "uuid.UUID | None" = None,
    ) -> None:
        self.client = client
        #: Run on this server node (node-local system views such as ``SYS.METRICS``), else the default one.
        self.node_id = node_id
        self.query = query
        self.args = tuple(args)
        self.schema = schema
        self.cache_id = _cache_id(cache) if cache else 0
        self.page_size = page_size
        self.max_rows = max_rows
        self.local = local
        self.distributed_joins = distributed_joins
        self.lazy = lazy
        self.timeout_ms = timeout_ms
        self.partitions = partitions
        self.column_names: tuple[str, ...] | None = None

    def pages(self) -> Iterator[SqlPage]:
        """Stream raw pages; ``column_names`` is set once the first page arrived."""
        conn = (
            self.client.connection_for_node(self.node_id)
            if self.node_id is not None
            else self.client.default_connection
        )
        features = conn.features

        def first(rid: int) -> bytes:
            return requests.query_sql_fields(
                rid,
                self.cache_id,
                self.query,
                self.args,
                schema=self.schema,
                page_size=self.page_size,
                max_rows=self.max_rows,
                local=self.local,
                distributed_joins=self.distributed_joins,
                lazy=self.lazy,
                timeout_ms=self.timeout_ms,
                include_field_names=True,
                partitions=self.partitions,
                features=features,
            )

        body = conn.request(first, Op.QUERY_SQL_FIELDS)
        page = responses.decode_sql_fields_page(body, first=True, include_field_names=True)
        self.column_names = page.column_names
        columns = page.column_count
        yield from stream_pages(
            conn,
            body,
            page.cursor_id,
            lambda _b: page,
            requests.query_sql_fields_cursor_get_page,
            Op.QUERY_SQL_FIELDS_CURSOR_GET_PAGE,
            lambda b: responses.decode_sql_fields_page(b, first=False, column_count=columns),
        )

    def __iter__(self) -> Iterator[list[Any]]:
        dec = self.client.decoder()
        for page in self.pages():
            yield from responses.decode_sql_rows(page, dec)

    def fetchall(self) -> list[list[Any]]:
        """Every row, decoded."""
        return list(self)

    def execute(self) -> int:
        """Run a statement (DDL/DML); returns the update count when there is one, else the row count."""
        rows = self.fetchall()
        if self.column_names == ("UPDATED",) and len(rows) == 1:
            return int(rows[0][0])
        return len(rows)
