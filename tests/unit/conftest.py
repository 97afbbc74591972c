"""The unit tier: labtui's logic with nothing real around it but what an edge needs.

No sshd starts, no Textual app runs: stats, figures, parsers, suites, the store and its journal,
paths, registries, liveness, the listings' formats.  Stores are DuckDB files in tmp_path; the engine
tests run their workers through a script backend of their own (test_adaptive_repetitions.py).  The
edges of docs/testing.md (a prefix cleanup of a running session, the intent journalled before a
create, SIGHUP as a stop signal) use the process backend's instances, as does one check each of
test_edges.py and test_journal.py.  `runtime_dir` and `env` come from tests/conftest.py.
"""
