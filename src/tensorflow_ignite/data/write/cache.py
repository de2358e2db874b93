"""The target cache: its name-derived type and table, creation (with an SQL table), clean-up after failure."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...errors import CacheExistsError, ConfigurationError, IgniteError, ServerError
from ...protocol.cache_config import CacheConfiguration, QueryEntity, QueryField
from ...protocol.types import JAVA_TYPE_NAMES
from ..tensor_schema import delete_schema
from .fields import FieldPlan
from .plan import WritePlan

if TYPE_CHECKING:
    from ...client import Cache, IgniteClient

log = logging.getLogger(__name__)


def default_type_name(cache_name: str) -> str:
    """``"mnist-train"`` -> ``"MnistTrainRow"``: the binary type written when none is given."""
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", cache_name) if p]
    base = "".join(p[:1].upper() + p[1:] for p in parts) or "Data"
    if base[0].isdigit():
        base = "T" + base
    return base + "Row"


def sql_table_name(cache_name: str) -> str:
    """The SQL table of a written cache: the cache name as an upper-case identifier."""
    name = re.sub(r"[^0-9A-Za-z_]", "_", cache_name).upper()
    if not name or name[0].isdigit():
        name = "T_" + name
    return name


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _query_entity(type_name: str, table: str, key: FieldPlan, fields: Sequence[FieldPlan]) -> QueryEntity:
    qfields = [QueryField(key.name, JAVA_TYPE_NAMES[key.code], is_key=True)]
    aliases: dict[str, str] = {}
    for f in fields:
        java = JAVA_TYPE_NAMES.get(f.code)
        if java is None:  # string/timestamp arrays: in the value, not in the table
            continue
        qfields.append(QueryField(f.name, java))
    for qf in qfields:
        if not _IDENT.match(qf.name):
            aliases[qf.name] = re.sub(r"\W", "_", qf.name).upper()
    return QueryEntity(
        key_type=JAVA_TYPE_NAMES[key.code],
        value_type=type_name,
        table_name=table,
        key_field_name=key.name,
        fields=qfields,
        aliases=aliases,
    )


def sql_engine_available(client: "IgniteClient") -> tuple[bool, str]:
    """Whether the cluster runs SQL; Ignite 2.18 ``ignite-core`` alone accepts query entities but has no engine."""
    try:
        client.sql("SELECT 1").fetchall()
        return True, ""
    except ServerError as exc:
        text = str(exc)
        if "indexing is disabled" in text or "no query engine" in text.lower():
            return False, text
        log.debug("SQL probe failed (%s); assuming an SQL engine is present", exc)
        return True, ""


def prepare_cache(
    client: "IgniteClient",
    cache_name: str,
    existing: bool,
    plan: WritePlan,
    *,
    mode: str,
    backups: int,
    atomicity: int,
    write_sync: int,
    sql: bool,
) -> tuple["Cache", bool, bool, str | None]:
    """Returns the cache, whether we created it, whether it was empty before, and its SQL table."""
    cache = client.cache(cache_name)
    if existing and mode == "create":
        size = cache.size()
        if size:
            raise ConfigurationError(
                f"cache {cache_name!r} already exists and holds {size:,} entries; use mode='append' to add "
                "rows or mode='overwrite' to replace them"
            )
        log.info("writing into the existing, empty cache %r (its configuration is kept)", cache_name)
        return cache, False, True, existing_sql_table(cache)
    if existing and mode == "append":
        return cache, False, False, existing_sql_table(cache)
    if existing and mode == "overwrite":
        log.info("overwrite: destroying cache %r", cache_name)
        client.destroy_cache(cache_name)
        delete_schema(client, cache_name)

    config = CacheConfiguration(
        cache_name, backups=backups, atomicity_mode=atomicity, write_synchronization_mode=write_sync
    )
    sql_table = None
    if sql:
        available, why = sql_engine_available(client)
        if available:
            table = sql_table_name(cache_name)
            config.query_entities = [_query_entity(plan.type_name, table, plan.key, plan.fields)]
            config.sql_schema = "PUBLIC"
            sql_table = f"PUBLIC.{table}"
        else:
            note = (
                "the cluster has no SQL engine (Ignite 2.18 ships none; an SQL node needs ignite-indexing), "
                "so the cache was created without an SQL table"
            )
            plan.notes.append(note)
            log.info("%s: %s", cache_name, note)
            log.debug("SQL probe answer: %s", why)
    try:
        client.create_cache(config)
    except ServerError as exc:
        if isinstance(exc, CacheExistsError):
            raise ConfigurationError(f"cache {cache_name!r} was created by someone else meanwhile: {exc}") from None
        if not config.query_entities:
            raise
        note = f"creating the cache with an SQL table failed ({exc}); created it without one"
        log.warning("%s: %s", cache_name, note)
        plan.notes.append(note)
        sql_table = None
        config.query_entities = []
        config.sql_schema = None
        client.create_cache(config)
    return cache, True, False, sql_table


def existing_sql_table(cache: "Cache") -> str | None:
    """The SQL table (``SCHEMA.TABLE``) of an existing cache, None when it has none (or its configuration
    cannot be read)."""
    try:
        cfg = cache.configuration()
        entities = cfg.query_entities
    except IgniteError as exc:
        log.debug("cannot read the configuration of %r: %s", cache.name, exc)
        return None
    if not entities:
        return None
    table = entities[0].table_name or entities[0].value_type.rsplit(".", 1)[-1].upper()
    schema = cfg.sql_schema or f'"{cache.name}"'
    return f"{schema}.{table}"


def after_failure(
    client: "IgniteClient", cache: "Cache", exc: BaseException, *, mode: str, created: bool, emptied_ok: bool, rows: int
) -> None:
    if mode == "append":
        return
    try:
        if created:
            client.destroy_cache(cache.name)
            what = "destroyed"
        else:
            cache.clear()
            what = "emptied again"
        delete_schema(client, cache.name)
        exc.add_note(f"tensorflow_ignite.write: cache {cache.name!r} was {what}; {rows:,} rows had been written")
    except BaseException as cleanup:  # noqa: BLE001 - never hide the original error
        log.error("could not clean up cache %r after a failed write: %s", cache.name, cleanup)
        exc.add_note(f"tensorflow_ignite.write: cleaning up cache {cache.name!r} failed too: {cleanup}")
