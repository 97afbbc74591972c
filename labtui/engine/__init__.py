"""The engine: runs suites as sessions and emits typed events. Never imports Textual."""

from labtui.engine.bus import EventBus
from labtui.engine.gate import Aborted, StepGate
from labtui.engine.kinds import ExperimentKind, Plan, experiment_kind, plan_for
from labtui.engine.runner import SessionRunner, check_backend_runs, new_session_id

__all__ = [
    "Aborted", "EventBus", "ExperimentKind", "Plan", "SessionRunner", "StepGate", "experiment_kind",
    "check_backend_runs", "new_session_id", "plan_for",
]
