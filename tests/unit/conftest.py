"""The unit tier: labtui's logic with nothing real around it.

No backend plugin creates an instance, no sshd starts, no Textual app runs: stats, figures,
parsers, suites, the store and its journal, paths, registries, liveness.  Stores are DuckDB files
in tmp_path; the engine tests run their workers through a script backend of their own
(test_adaptive_repetitions.py).  The runtime dir (`runtime_dir`) comes from tests/conftest.py.
"""
