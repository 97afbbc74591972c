"""Everything a report needs about one session, read from the store as polars frames."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import polars as pl

from labtui.core.cpulist import cpu_list_size
from labtui.figures import METRIC_KEY
from labtui.figures.table import repetition_samples, with_trust
from labtui.store import StoreError, fetch_frame, list_sessions, resolve_session, slowdown_frame

_RESOURCES_BY_STEP = """
SELECT r.host, s.background, count(*) AS samples,
       avg(r.cpu_avail) AS cpu, stddev_samp(r.cpu_avail) AS cpu_std,
       avg(r.mem_avail) AS mem, stddev_samp(r.mem_avail) AS mem_std,
       avg(r.swap_avail) AS swap, stddev_samp(r.swap_avail) AS swap_std
FROM resources r
JOIN steps s ON s.session_id = r.session_id
            AND r.ts BETWEEN s.started_at AND coalesce(s.ended_at, r.ts)
WHERE r.session_id = ?
GROUP BY r.host, s.background ORDER BY r.host, s.background
"""

_RESOURCES_BY_INSTANCES = """
SELECT host, instances AS background, count(*) AS samples,
       avg(cpu_avail) AS cpu, stddev_samp(cpu_avail) AS cpu_std,
       avg(mem_avail) AS mem, stddev_samp(mem_avail) AS mem_std,
       avg(swap_avail) AS swap, stddev_samp(swap_avail) AS swap_std
FROM resources WHERE session_id = ?
GROUP BY host, instances ORDER BY host, instances
"""

#: Every fairshare worker's requested and achieved share, with its instance's role (``reserved`` or ``worker``).
_SHARES = """
SELECT r.repetition, r.step, r.instance_id, coalesce(i.role, 'worker') AS role, r.metric, r.value, r.unit
FROM results r
LEFT JOIN instances i ON i.session_id = r.session_id AND i.instance_id = r.instance_id
WHERE r.session_id = ? AND r.metric IN ('requested_share', 'achieved_share')
"""

@dataclass(frozen=True)
class SessionData:
    """One session's rows, shaped for figures and tables."""

    session: dict[str, Any]
    config: dict[str, Any]
    hosts: pl.DataFrame
    steps: pl.DataFrame
    #: The store's slowdown view, with a `placement` column ("" outside isolation runs).
    slowdown: pl.DataFrame
    #: Mean resource availability per host and background count.
    resources: pl.DataFrame
    #: Lowest swap availability sampled (None without swap).
    min_swap: float | None
    #: Worker-side results (achieved/requested CPU share): a fairshare run's; empty for other runs.
    shares: pl.DataFrame
    #: The session's log entries of level warning or error.
    problems: pl.DataFrame
    #: Added to the label when two compared sessions would otherwise look alike.
    label_suffix: str = ""
    #: Each figure's per-repetition values (repetition_samples), for labtui.core.stats.trust.trust.
    samples: pl.DataFrame = field(default_factory=pl.DataFrame)

    @cached_property
    def figures(self) -> pl.DataFrame:
        """The figures table of the session (labtui.figures.table.with_trust: each figure with its trust, median
        slowdown and verdict), computed once for every table and alert of the report."""
        return with_trust(self.slowdown, self.samples)

    @property
    def id(self) -> str:
        return str(self.session["session_id"])

    @property
    def kind(self) -> str:
        return str(self.session.get("kind") or "")

    @property
    def label(self) -> str:
        """How figures name the session: suite and backend."""
        return f"{self.session.get('suite')} · {self.session.get('backend')}{self.label_suffix}"

    def scaling(self) -> pl.DataFrame:
        """Slowdown rows measured against a background count (no attacker placement)."""
        return self.slowdown.filter(pl.col("placement") == "")

    def isolation(self) -> pl.DataFrame:
        """Slowdown rows of an isolation run, one per placement."""
        return self.slowdown.filter(pl.col("placement") != "")

    def shared_cpus(self) -> int:
        """How many CPUs a fairshare run's instances shared: its ``fairshare.cpus`` list, else the host's cores."""
        cpus = (self.config.get("fairshare") or {}).get("cpus")
        if cpus:
            return cpu_list_size(str(cpus))
        cores = self.hosts["cores"].drop_nulls() if "cores" in self.hosts.columns else pl.Series([], dtype=pl.Int64)
        return int(cores[0]) if len(cores) else 1

    def share_names(self) -> list[str]:
        """A fairshare run's configurations by step: ``equal``, then its methods (``weight``, ``cap``)."""
        return ["equal", *(self.config.get("fairshare") or {}).get("methods", [])]


def resolve(db: str | os.PathLike[str], prefix: str) -> str:
    """The session id `prefix` names; StoreError listing the candidates otherwise."""
    try:
        return resolve_session(db, prefix)
    except StoreError as exc:
        sessions = list_sessions(db)
        if any(sid.startswith(prefix) for sid in sessions["session_id"]):
            raise  # ambiguous: the message lists the matches
        if sessions.is_empty():
            raise StoreError(f"{exc}; the store has no sessions") from None
        lines = [
            f"  {r['session_id']}  {r['suite']}  {r['backend']}  {r['status']}"
            for r in sessions.head(20).iter_rows(named=True)
        ]
        raise StoreError(f"{exc}; sessions in the store (newest first):\n" + "\n".join(lines)) from None


def load_session(db: str | os.PathLike[str], session_id: str) -> SessionData:
    """Read one session (by its full id) from the store."""
    rows = fetch_frame(db, "SELECT * FROM sessions WHERE session_id = ?", [session_id]).to_dicts()
    if not rows:
        raise StoreError(f"no session {session_id!r} in {db}")
    session = rows[0]
    config = session.get("config") or "{}"
    return SessionData(
        session=session,
        config=json.loads(config) if isinstance(config, str) else dict(config),
        hosts=fetch_frame(db, "SELECT * FROM hosts WHERE session_id = ? ORDER BY host", [session_id]),
        steps=fetch_frame(db, "SELECT * FROM steps WHERE session_id = ? ORDER BY repetition, step", [session_id]),
        slowdown=with_placement(slowdown_frame(db, session_id)),
        resources=_resources(db, session_id),
        min_swap=fetch_frame(db, "SELECT min(swap_avail) AS m FROM resources WHERE session_id = ?", [session_id])["m"][0],
        shares=_shares(db, session_id),
        problems=fetch_frame(
            db, "SELECT level, category, message FROM events WHERE session_id = ? "
            "AND level IN ('warning', 'error') ORDER BY ts", [session_id],
        ),
        samples=repetition_samples(db, session_id),
    )


def with_placement(slowdown: pl.DataFrame) -> pl.DataFrame:
    """The slowdown frame with a `placement` column.

    Reads the store's `placement` column when it has one; an older store that
    encodes it as ``benchmark = "<benchmark>@<placement>"`` is split instead,
    and the normalization is redone against the first placement.
    """
    if "placement" in slowdown.columns:
        return slowdown.with_columns(pl.col("placement").fill_null(""))
    split = slowdown.with_columns(
        pl.col("benchmark").str.split_exact("@", 1).struct.rename_fields(["bench", "placement"]).alias("_p")
    ).unnest("_p")
    split = split.with_columns(
        pl.col("bench").alias("benchmark"), pl.col("placement").fill_null("")
    ).drop("bench")
    base = pl.col("mean").sort_by(["background"]).first().over(["session_id", *METRIC_KEY, pl.col("placement") == ""])
    higher = pl.col("better") == "higher"
    ratio = pl.col("mean") / base
    return split.with_columns(
        normalized=ratio,
        slowdown_pct=pl.when(higher).then((1 - ratio) * 100).otherwise((ratio - 1) * 100),
    )


def _resources(db: str | os.PathLike[str], session_id: str) -> pl.DataFrame:
    """Availability per background count: by step time window, else by the sample's instance count."""
    frame = fetch_frame(db, _RESOURCES_BY_STEP, [session_id])
    if frame.is_empty():
        frame = fetch_frame(db, _RESOURCES_BY_INSTANCES, [session_id])
    return frame


def _shares(db: str | os.PathLike[str], session_id: str) -> pl.DataFrame:
    """Requested and achieved CPU share of every worker run, paired by instance and step."""
    results = fetch_frame(db, _SHARES, [session_id])
    if results.is_empty():
        return results
    return results.pivot(
        on="metric", index=["repetition", "step", "instance_id", "role", "unit"], values="value",
        aggregate_function="mean",
    ).drop_nulls()


def share_scale(session: SessionData) -> float:
    """The factor from a stored share (a ratio of the CPU set the instances shared) to % of one CPU: a quarter of a
    two-CPU set, 200%, is 50%, as study 004 states its SMP shares (§5.1, Table 3)."""
    return session.shared_cpus() * (100.0 if str(session.shares["unit"][0]) == "ratio" else 1.0)


def share_points(session: SessionData) -> pl.DataFrame:
    """Table 3's points (study 004, §5.1): per configuration and requested share (weight and cap apart), the
    achieved share's mean, std, min, max and n, in % of one CPU (share_scale); ``of_all``, the mean fraction of
    what all instances received together that one got (no unit), and ``instances``, how many a repetition ran."""
    scale = share_scale(session)
    shares = session.shares.with_columns(
        of_all=pl.col("achieved_share") / pl.col("achieved_share").sum().over(["step", "repetition"]))
    return (
        shares.group_by(["step", "role", "requested_share"])
        .agg(mean=pl.col("achieved_share").mean(), std=pl.col("achieved_share").std(),
             low=pl.col("achieved_share").min(), high=pl.col("achieved_share").max(), n=pl.len(),
             of_all=pl.col("of_all").mean(),
             instances=(pl.len() / pl.col("repetition").n_unique()).ceil().cast(pl.Int64))
        .sort(["step", "requested_share"], descending=[False, True])
        .with_columns(
            configuration=_configuration(session.share_names()),
            requested=pl.col("requested_share") * scale,
            achieved=pl.col("mean") * scale,
            achieved_std=pl.col("std") * scale,
            achieved_min=pl.col("low") * scale,
            achieved_max=pl.col("high") * scale,
        )
    )


def together_points(session: SessionData) -> pl.DataFrame:
    """Per configuration, what all instances received together, in % of one CPU (share_scale): the sum of their
    achieved shares in a repetition, the mean over repetitions."""
    return (
        session.shares.group_by(["step", "repetition"]).agg(pl.col("achieved_share").sum())
        .group_by("step").agg(achieved=pl.col("achieved_share").mean() * share_scale(session)).sort("step")
        .with_columns(configuration=_configuration(session.share_names()))
    )


def _configuration(names: list[str]) -> pl.Expr:
    """A fairshare step's configuration name (equal, weight, cap; the step number past them)."""
    return pl.col("step").map_elements(lambda step: names[step] if step < len(names) else str(step),
                                       return_dtype=pl.String)


def share_unit(session: SessionData) -> str:
    """What a share in % means: of one CPU, with the set's total when it has more than one."""
    cpus = session.shared_cpus()
    return "% of one CPU" + (f"; the {cpus} CPUs shared are {cpus * 100}%" if cpus > 1 else "")


def distinct_labels(sessions: list[SessionData]) -> list[SessionData]:
    """The sessions, with their start time (or id) added to labels that would collide."""
    if len({s.label for s in sessions}) == len(sessions):
        return sessions
    def suffix(s: SessionData) -> str:
        started = s.session.get("started_at")
        return f" ({started:%Y-%m-%d %H:%M})" if hasattr(started, "strftime") else f" ({s.id})"
    named = [replace(s, label_suffix=suffix(s)) for s in sessions]
    if len({s.label for s in named}) == len(named):
        return named
    return [replace(s, label_suffix=f" ({s.id})") for s in sessions]
