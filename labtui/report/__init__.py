"""Reports and exports of recorded sessions: the studies' figures, an HTML page, table files.

matplotlib is imported only by the figure modules, which the CLI loads when
`labtui report` runs, so `labtui --help` stays fast.
"""

from labtui.report.build import FORMATS, charts_for, write_report
from labtui.report.data import SessionData, load_session, resolve
from labtui.report.export import EXPORT_FORMATS, SESSION_TABLES, export_session

__all__ = [
    "EXPORT_FORMATS",
    "FORMATS",
    "SESSION_TABLES",
    "SessionData",
    "charts_for",
    "export_session",
    "load_session",
    "resolve",
    "write_report",
]
