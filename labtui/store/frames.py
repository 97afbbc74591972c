"""The store's own definitions run over a results frame: the slowdown view and each repetition's
value, so a live pane (which has results before the store does) and a report of the same session
agree number for number."""

from __future__ import annotations

import polars as pl

from labtui.store.schema import REPETITION_VALUES, SLOWDOWN_SELECT


def slowdown_table(results: pl.DataFrame) -> pl.DataFrame:
    """The store's slowdown view, computed over a results frame (the live panes' results).

    One definition: the SQL of the ``slowdown`` view (SLOWDOWN_SELECT)
    runs over the frame in an in-memory DuckDB, so a live pane and a report of the
    same session agree number for number.  The frame needs the results table's columns
    session_id, repetition, step, background, benchmark, metric, unit, better, value,
    placement and run.
    """
    return _over_results(results, SLOWDOWN_SELECT + " ORDER BY benchmark, metric, step, background")


def repetition_table(results: pl.DataFrame) -> pl.DataFrame:
    """Each repetition's value of each figure at each condition, computed over a results frame (the
    store's own definition, REPETITION_VALUES; it needs slowdown_table's columns)."""
    return _over_results(results, REPETITION_VALUES)


def _over_results(results: pl.DataFrame, sql: str) -> pl.DataFrame:
    """The frame of `sql` run over `results` registered as the table ``results`` of an in-memory DuckDB."""
    import duckdb  # here, not at import: the console imports this module before its first paint

    with duckdb.connect() as con:
        con.register("results", results.to_arrow())
        return con.sql(sql).pl()
