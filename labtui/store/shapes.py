"""Each store table's shape for the writer: its columns and their Arrow types, its insert SQL, and the batches of
events in it (rows that change merged per key, append-only events as they came)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from labtui.core.events import (
    Event,
    Log,
    ObserverSample,
    ResourceSample,
    Result,
)

_ARROW_TYPES = {
    "str": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "ts": pa.float64(),  # epoch seconds, converted to _UTC_MICROS before insert
}
_UTC_MICROS = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True, slots=True)
class TableShape:
    """How one table is written: its columns (name, kind) and upsert key."""

    name: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...] = ()
    #: Append tables: string columns whose empty value is stored as NULL.
    blank_is_null: tuple[str, ...] = ()

    @property
    def batch_view(self) -> str:
        return f"_labtui_batch_{self.name}"

    def insert_sql(self) -> str:
        names = ", ".join(name for name, _ in self.columns)
        sql = f"INSERT INTO {self.name} ({names}) SELECT {names} FROM {self.batch_view}"
        if not self.key:
            return sql
        updates = ", ".join(
            f"{name} = coalesce(excluded.{name}, {self.name}.{name})"
            for name, _ in self.columns
            if name not in self.key
        )
        return f"{sql} ON CONFLICT ({', '.join(self.key)}) DO UPDATE SET {updates}"

    def arrow_from_events(self, events: list[Event]) -> pa.Table:
        """Columns read straight off the events (same attribute names); no row tuples in between."""
        columns = {}
        for name, kind in self.columns:
            array = _column(list(map(attrgetter(name), events)), kind)
            if name in self.blank_is_null:
                array = pc.if_else(pc.equal(array, ""), pa.scalar(None, array.type), array)
            columns[name] = array
        return pa.table(columns)

    def row(self, values: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(values.get(name) for name, _ in self.columns)

    def arrow(self, rows: list[tuple[Any, ...]]) -> pa.Table:
        columns = list(zip(*rows)) or [()] * len(self.columns)
        return pa.table(
            {
                name: _column(values, kind)
                for (name, kind), values in zip(self.columns, columns)
            }
        )


def _column(values: Sequence[Any], kind: str) -> pa.Array:
    """One Arrow column; epoch-second floats become UTC timestamps, vectorized."""
    array = pa.array(values, _ARROW_TYPES[kind])
    if kind != "ts":
        return array
    micros = pc.cast(pc.round(pc.multiply(array, 1_000_000.0)), pa.int64())
    return pc.cast(micros, _UTC_MICROS)


TABLES = {
    t.name: t
    for t in (
        TableShape(
            "sessions",
            (
                ("session_id", "str"), ("suite", "str"), ("kind", "str"), ("backend", "str"),
                ("host", "str"), ("status", "str"), ("started_at", "ts"), ("ended_at", "ts"),
                ("config", "str"), ("pid", "int"), ("controller", "str"), ("message", "str"),
                ("tags", "str"), ("note", "str"),
            ),
            key=("session_id",),
        ),
        TableShape(
            "steps",
            (
                ("session_id", "str"), ("repetition", "int"), ("step", "int"), ("steps", "int"),
                ("background", "int"), ("started_at", "ts"), ("ended_at", "ts"), ("ok", "bool"), ("held_s", "float"),
            ),
            key=("session_id", "repetition", "step"),
        ),
        TableShape(
            "instances",
            (
                ("session_id", "str"), ("instance_id", "str"), ("host", "str"), ("backend", "str"),
                ("role", "str"), ("name", "str"), ("created_at", "ts"), ("ready_at", "ts"),
                ("destroyed_at", "ts"), ("boot_s", "float"), ("state", "str"),
            ),
            key=("session_id", "instance_id"),
        ),
        TableShape(
            "hosts",
            (
                ("session_id", "str"), ("host", "str"), ("os", "str"), ("kernel", "str"),
                ("arch", "str"), ("cpu_model", "str"), ("cores", "int"),
                ("mem_total_bytes", "int"), ("backend", "str"), ("backend_version", "str"),
                ("isolation", "str"), ("ts", "ts"),
            ),
            key=("session_id", "host"),
        ),
        TableShape(
            "results",
            (
                ("session_id", "str"), ("repetition", "int"), ("step", "int"),
                ("background", "int"), ("host", "str"), ("instance_id", "str"),
                ("benchmark", "str"), ("metric", "str"), ("value", "float"), ("unit", "str"),
                ("better", "str"), ("ts", "ts"), ("placement", "str"), ("run", "int"),
            ),
            blank_is_null=("placement",),
        ),
        TableShape(
            "resources",
            (
                ("session_id", "str"), ("host", "str"), ("ts", "ts"), ("cpu_avail", "float"),
                ("mem_avail", "float"), ("swap_avail", "float"), ("mem_used_bytes", "int"),
                ("load1", "float"), ("instances", "int"),
            ),
            blank_is_null=("session_id",),
        ),
        TableShape(
            "observer",
            (
                ("session_id", "str"), ("ts", "ts"), ("rss_bytes", "int"), ("cpu_s", "float"),
                ("helper_rss_bytes", "int"), ("helper_cpu_s", "float"),
            ),
        ),
        TableShape(
            "events",
            (("session_id", "str"), ("ts", "ts"), ("level", "str"), ("category", "str"), ("message", "str")),
            blank_is_null=("session_id",),
        ),
    )
}





def table_batches(
    appends: dict[str, list[Event]], upserts: dict[str, dict[tuple[Any, ...], dict[str, Any]]]
) -> list[tuple[TableShape, pa.Table]]:
    """One Arrow batch per table: upserted rows merged per key, appended events as they are."""
    return [
        (TABLES[name], TABLES[name].arrow([TABLES[name].row(values) for values in rows.values()]))
        for name, rows in upserts.items()
    ] + [(TABLES[name], TABLES[name].arrow_from_events(events)) for name, events in appends.items()]



#: Events stored as they are, one row each, in an append-only table.
APPEND_TABLES = {Result: "results", ResourceSample: "resources", ObserverSample: "observer", Log: "events"}
