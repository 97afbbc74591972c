"""Suite files: what a benchmark run does, read from TOML and checked."""

from labtui.suites.loader import OVERRIDE, SuiteError, list_suites, load_suite, suite_profiles, suite_to_dict
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
