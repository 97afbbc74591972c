"""The session service: one headless owner of a session's whole life, under both faces.

`labtui run` and the console's Run view each turn what a person typed into a
`RunRequest`, hand it to a `LabRun`, and draw the events it publishes.  The
store lock, reconcile, opening and closing hosts, signals, teardown and the
session's recorded end all live here, once.
"""

from labtui.engine.kinds import Plan, plan_for
from labtui.session.request import DEFAULT_BACKEND, RunRequest
from labtui.session.service import LabRun, LiveInstance, Outcome, RunRefused, SessionInfo, Stepping

__all__ = [
    "DEFAULT_BACKEND", "LabRun", "LiveInstance", "Outcome", "Plan", "RunRefused", "RunRequest", "SessionInfo",
    "Stepping", "plan_for",
]
