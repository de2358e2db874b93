"""The seed's first example: an SQL table read as a dataset.

Needs a node with an SQL engine: ``ignite-tf node start --sql``.
"""

from __future__ import annotations

from typing import Any

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient


def main(host: str = "localhost", port: int = 10800) -> list[dict[str, Any]]:
    with IgniteClient(f"{host}:{port}") as client:
        client.sql("DROP TABLE IF EXISTS KITTEN_CACHE").execute()
        client.sql("CREATE TABLE KITTEN_CACHE (ID LONG PRIMARY KEY, NAME VARCHAR)").execute()
        for i, name in enumerate(["WARM KITTY", "SOFT KITTY", "LITTLE BALL OF FUR"], start=1):
            client.sql("INSERT INTO KITTEN_CACHE VALUES (?, ?)", [i, name]).execute()

    # The table's cache, read like any cache: {'key': 1, 'val': {'NAME': b'WARM KITTY'}}
    dataset = IgniteDataset(cache_name="SQL_PUBLIC_KITTEN_CACHE", host=host, port=port)
    elements = sorted(dataset.as_numpy_iterator(), key=lambda e: e["key"])
    for element in elements:
        print(element)

    # Or let Ignite filter and project: {'NAME': b'SOFT KITTY'}
    for row in IgniteDataset.from_sql("SELECT NAME FROM KITTEN_CACHE WHERE ID = ?", [2], host, port):
        print({k: v.numpy() for k, v in row.items()})
    return elements


if __name__ == "__main__":
    from _common import parse_address

    args = parse_address(__doc__ or "")
    main(args.host, args.port)
