"""The report's tables as plain rows: slowdown per metric, host facts."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from labtui.core.units import MISSING, display_unit, interval, share_pct
from labtui.core.units import shown as fmt
from labtui.figures import METRIC_KEY, sample_figures
from labtui.figures.verdict import slowdown_text
from labtui.report.data import SessionData, share_points, share_unit
from labtui.report.isolation import placement_name, placement_order
from labtui.report.plotting import better_text


@dataclass(frozen=True)
class Table:
    """A caption, column headers and formatted cells."""

    caption: str
    headers: list[str]
    rows: list[list[str]]
    #: A line the page prints above the table: a metric's verdict (labtui.figures.verdict).
    verdict: str = ""


def slowdown_tables(data: SessionData) -> list[Table]:
    """One table per metric (Table 5.1 for isolation runs) under its verdict: mean, the sample figures (median,
    ...), 95% interval, std, n, CV, normalized (of the means, as the figure draws them), the median slowdown with
    its interval, and trust flags: the figures table (labtui.figures.table.with_trust), as the CLI's run table
    draws it."""
    tables = []
    frame = data.figures
    extra = [f.name for f in sample_figures()]
    for key in frame.select(METRIC_KEY).unique(maintain_order=True).iter_rows(named=True):
        part = frame.filter(*(pl.col(k) == v for k, v in key.items()))
        isolation = (part["placement"] != "").any()
        if isolation:
            order = placement_order(part["placement"].to_list())
            part = part.with_columns(pl.col("placement").replace_strict(order, range(len(order))).alias("_o"))
            part = part.sort("_o")
        else:
            part = part.sort("background")
        shown, factor = display_unit(key["unit"])
        first = "attacker placement" if isolation else "background"
        headers = [first, f"mean ({shown})", *(f"{name} ({shown})" for name in extra), f"95% CI ({shown})",
                   f"std ({shown})", "n", "CoV", "normalized", "median slowdown % (95% CI)", "trust"]
        rows = []
        for r in part.iter_rows(named=True):
            where = placement_name(r["placement"]) if isolation else str(r["background"])
            rows.append([
                where, fmt(r["mean"] / factor), *(fmt(None if r[name] is None else r[name] / factor) for name in extra),
                interval(r["ci_low"], r["ci_high"], key["unit"]),
                fmt(None if r["std"] is None else r["std"] / factor),
                str(r["n"]), share_pct(r["cv"]), fmt(r["normalized"]),
                slowdown_text(r["median_slowdown_pct"], r["median_slowdown_low"], r["median_slowdown_high"]),
                r["flags"],
            ])
        caption = f"{key['benchmark']}: {key['metric']} {better_text(key['better'])}"
        tables.append(Table(caption, headers, rows, "" if isolation else (part["verdict"][0] or "")))
    return tables


def share_tables(data: SessionData) -> list[Table]:
    """A fairshare session's Table 3 (study 004, §5.1): achieved against requested share, one row per configuration
    and requested share (weight and cap apart), in % of one CPU as the paper states them (none otherwise)."""
    if data.shares.is_empty():
        return []
    rows = [
        [r["configuration"], share_instances(r["configuration"], r["role"]), fmt(r["requested"]), fmt(r["achieved"]),
         fmt(r["achieved_std"]), str(r["n"]), fmt(r["achieved"] / r["requested"])]
        for r in share_points(data).iter_rows(named=True)
    ]
    headers = ["configuration", "instances", "requested %", "achieved %", "std (points)", "n", "achieved / requested"]
    return [Table(f"fairshare (study 004 Table 3): CPU share achieved against requested, in {share_unit(data)}",
                  headers, rows)]


def share_instances(configuration: str, role: str) -> str:
    """Which instances a Table 3 row is about: the reserved one, each other one, or each (equal shares)."""
    if role == "reserved":
        return "reserved"
    return "each" if configuration == "equal" else "each other"


_FACTS = (
    ("host", "host"), ("os", "OS"), ("kernel", "kernel"), ("arch", "arch"), ("cpu_model", "CPU"),
    ("cores", "cores"), ("mem_total_bytes", "memory"), ("backend", "backend"),
    ("backend_version", "backend version"), ("isolation", "isolation"),
)


def host_table(data: SessionData) -> Table:
    """The facts gathered about each host of the session."""
    rows = []
    for r in data.hosts.iter_rows(named=True):
        cells = []
        for column, _ in _FACTS:
            value = r.get(column)
            if column == "mem_total_bytes" and value is not None:
                value = f"{value / 2**30:.1f} GiB"
            cells.append(MISSING if value in (None, "") else str(value))
        rows.append(cells)
    return Table("hosts", [h for _, h in _FACTS], rows)
