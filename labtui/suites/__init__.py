"""Suite files: what a benchmark run does, read from TOML and checked."""

from labtui.suites.loader import list_suites, load_suite, suite_profiles
from labtui.suites.model import (
    SUITE_KINDS,
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
    "SUITE_KINDS",
    "WORKER_MEASURES",
    "Measure",
    "Program",
    "Sampling",
    "Scale",
    "Suite",
    "SuiteError",
    "SuiteInfo",
    "Worker",
    "list_suites",
    "load_suite",
    "suite_profiles",
    "suite_to_dict",
]
