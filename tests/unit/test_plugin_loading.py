"""Built-in backend plugins load by name, also from several threads at once (the console checks backends in threads)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# A fresh interpreter, so that no plugin package (nor their namespace `plugins`) is imported yet; the
# threads wait at a barrier so that all of them reach the entry points' imports at the same moment.
THREADS_LOADING_AT_ONCE = textwrap.dedent(
    """
    import threading
    from labtui.backends.base import backend_names, load_backend_class
    names = [n for n in backend_names() if n in ("process", "docker", "xen", "zones")]
    barrier = threading.Barrier(len(names))
    failures = []
    def load(name):
        barrier.wait()
        try:
            load_backend_class(name)
        except Exception as exc:
            failures.append(f"{name}: {exc}")
    threads = [threading.Thread(target=load, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(len(names), "loaded" if not failures else failures)
    """
)


def test_backends_loaded_from_several_threads_at_once_all_load() -> None:
    """Each thread gets its plugin, not 'No module named plugins.<name>' from a half-imported package."""
    done = subprocess.run([sys.executable, "-c", THREADS_LOADING_AT_ONCE], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=True)
    assert done.stdout.strip() == "4 loaded", done.stdout + done.stderr
