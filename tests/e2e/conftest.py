"""The e2e tier: whole runs through the CLI (`python -m labtui ...` or `labtui.cli.main`) or the
session service, into real DuckDB stores, and what is read back from them (report, compare,
trend, import, the studies' figures), interrupted by signals, faults and other programs.

`lab` is a Lab (tests/backend_lab.py) for the module's ``BACKEND``, for the tests that make
or inspect instances beside a run.
"""

from backend_lab import lab  # noqa: F401
