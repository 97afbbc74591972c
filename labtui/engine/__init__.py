"""The engine: runs suites as sessions and emits typed events. Never imports Textual."""

from labtui.engine.bus import EventBus
from labtui.engine.gate import Aborted, StepGate
from labtui.engine.runner import KINDS, SessionRunner, new_session_id

__all__ = ["KINDS", "Aborted", "EventBus", "SessionRunner", "StepGate", "new_session_id"]
