"""Built-in backend plugins load by name, also from several threads at once (the console checks backends in threads)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# A fresh interpreter, so that labtui._plugins is not imported yet. Its initialisation is slowed down
# (bundled_dir sleeps) so that every thread reaches the import while the first is still inside it.
THREADS_LOADING_AT_ONCE = textwrap.dedent(
    """
    import threading, time
    import labtui.core.paths as paths
    real = paths.bundled_dir
    def slow(name):
        time.sleep(0.3)
        return real(name)
    paths.bundled_dir = slow
    from labtui.backends.base import backend_names, load_backend_class
    names = [n for n in backend_names() if n in ("process", "docker", "xen", "zones")]
    failures = []
    def load(name):
        try:
            load_backend_class(name)
        except Exception as exc:
            failures.append(f"{name}: {exc}")
    threads = [threading.Thread(target=load, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
        time.sleep(0.05)
    for thread in threads:
        thread.join()
    print(len(names), "loaded" if not failures else failures)
    """
)


def test_backends_loaded_from_several_threads_at_once_all_load() -> None:
    """Each thread gets its plugin, not 'No module named labtui._plugins.<name>' from a half-imported package."""
    done = subprocess.run([sys.executable, "-c", THREADS_LOADING_AT_ONCE], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=True)
    assert done.stdout.strip() == "4 loaded", done.stdout + done.stderr
