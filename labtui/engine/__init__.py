"""The engine: runs suites as sessions and emits typed events. Never imports Textual."""

from labtui.engine.bus import EventBus
from labtui.engine.gate import Aborted, StepGate
from labtui.engine.kinds import ExperimentKind, Plan, kinds, plan_for
from labtui.engine.runner import SessionRunner, new_session_id

__all__ = ["Aborted", "EventBus", "ExperimentKind", "Plan", "SessionRunner", "StepGate", "kinds", "new_session_id", "plan_for"]
