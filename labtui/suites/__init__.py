"""Suite files: what a benchmark run does, read from TOML and checked."""

from labtui.suites.kinds import all_kinds, kind_named
from labtui.suites.loader import list_suites, load_suite, suite_profiles
from labtui.suites.model import (
    WORKER_MEASURES,
    Measure,
    Program,
    Sampling,
    Scale,
    Suite,
    SuiteInfo,
    Worker,
)
from labtui.suites.serialize import suite_to_dict
from labtui.suites.source import OVERRIDE, SuiteError

__all__ = [
    "OVERRIDE",
    "WORKER_MEASURES",
    "Measure",
    "Program",
    "Sampling",
    "Scale",
    "Suite",
    "SuiteError",
    "SuiteInfo",
    "Worker",
    "all_kinds",
    "kind_named",
    "list_suites",
    "load_suite",
    "suite_profiles",
    "suite_to_dict",
]
