"""The self-contained HTML page: figures as inline base64 PNGs, tables, config, hosts, warnings."""

from __future__ import annotations

import base64
import json
from datetime import datetime
from html import escape

from labtui import __version__
from labtui.core.units import MISSING
from labtui.report.alerts import session_warnings
from labtui.report.data import SessionData
from labtui.report.plotting import Chart
from labtui.report.tables import Table, host_table, share_tables, slowdown_tables

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 1.6em; }
.figures { display: flex; flex-wrap: wrap; gap: 1em; }
figure { margin: 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: .9em; color: #555; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: .92em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
caption { text-align: left; font-weight: bold; padding: .3em 0; }
.warn { background: #fff4e0; border-left: 4px solid #f0a000; padding: .5em 1em; }
.ok { color: #2a7a2a; }
.verdict { font-weight: bold; margin: .8em 0 .2em; }
pre { background: #f7f7f7; padding: .8em; overflow-x: auto; font-size: .85em; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; } dt { font-weight: bold; }
"""


def render_page(sessions: list[SessionData], charts: list[Chart], side_by_side: Table | None = None) -> str:
    """The whole HTML document for one session, or several overlaid (with their side-by-side table)."""
    title = " vs ".join(s.id for s in sessions)
    body = [f"<h1>labtui report: {escape(' vs '.join(s.label for s in sessions))}</h1>"]
    body.append(f"<p>sessions {escape(title)} · labtui {escape(__version__)}</p>")
    for s in sessions:
        body.append(_warnings(s, len(sessions) > 1))
    if side_by_side is not None:
        body.append("<h2>Side by side</h2>")
        body.append(_table(side_by_side))
    body.append("<h2>Figures</h2>")
    body.append(_figures(charts) if charts else "<p>The sessions recorded no data to draw.</p>")
    for s in sessions:
        body.append(_session_section(s))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>labtui report {escape(title)}</title><style>{_CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def _warnings(s: SessionData, named: bool) -> str:
    found = session_warnings(s)
    who = f" ({escape(s.label)})" if named else ""
    if not found:
        return f"<p class=\"ok\">No warnings{who}: status completed, no failed step, CV within limits, no swap in use.</p>"
    items = "".join(f"<li>{escape(w)}</li>" for w in found)
    return f"<div class=\"warn\"><strong>Warnings{who}</strong><ul>{items}</ul></div>"


def _figures(charts: list[Chart]) -> str:
    parts = []
    for chart in charts:
        data = base64.b64encode(chart.render("png")).decode("ascii")
        parts.append(
            f"<figure><img alt=\"{escape(chart.title)}\" src=\"data:image/png;base64,{data}\">"
            f"<figcaption>{escape(chart.title)}</figcaption></figure>"
        )
    return f"<div class=\"figures\">{''.join(parts)}</div>"


def _tags(tags: object) -> str:
    """`--tag` labels as `key=value` pairs (the store keeps them as a JSON object)."""
    labels = json.loads(str(tags)) if tags else {}
    return " ".join(f"{key}={value}" for key, value in sorted(labels.items()))


def _session_section(s: SessionData) -> str:
    info = s.session
    facts = [
        ("session", info.get("session_id")), ("suite", info.get("suite")), ("kind", info.get("kind")),
        ("backend", info.get("backend")), ("host", info.get("host")), ("status", info.get("status")),
        ("started", _when(info.get("started_at"))), ("ended", _when(info.get("ended_at"))),
        ("controller", info.get("controller")), ("message", info.get("message") or MISSING),
        ("tags", _tags(info.get("tags")) or MISSING), ("note", info.get("note") or MISSING),
    ]
    overrides = s.config.get("overrides") or []
    parts = [
        f"<h2>Session {escape(s.id)}</h2>",
        "<dl>" + "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in facts) + "</dl>",
        "<h3>Tables</h3>",
        *(_table(t) for t in (share_tables(s) or slowdown_tables(s))),
        "<h3>Hosts</h3>",
        _table(host_table(s)),
        "<h3>Suite and overrides</h3>",
        "<p>overrides: "
        + (", ".join(f"<code>{escape(str(o))}</code>" for o in overrides) if overrides else "none")
        + (f" · source <code>{escape(str(s.config['source']))}</code>" if s.config.get("source") else "")
        + "</p>",
        f"<pre>{escape(json.dumps(s.config, indent=2, sort_keys=True))}</pre>",
    ]
    return "".join(parts)


def _table(table: Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    rows = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    verdict = f"<p class=\"verdict\">{escape(table.verdict)}</p>" if table.verdict else ""
    return f"{verdict}<table><caption>{escape(table.caption)}</caption><tr>{head}</tr>{rows}</table>"


def _when(value: object) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S %Z")
    return MISSING if value is None else str(value)
