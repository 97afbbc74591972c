"""Namespace under which built-in backend plugins are imported.

Its search path is the built-in plugins directory (``plugins/`` in a source
checkout, ``labtui/_bundled/plugins`` in a wheel), so ``labtui._plugins.<name>``
and its submodules (``labtui._plugins.xen.guests``) are the one name each plugin
file has, whether labtui chooses the backend (``labtui.backends``) or a test
imports a plugin module directly.  Importing this package imports no plugin.
"""

from labtui.core.paths import bundled_dir

__path__ = [str(bundled_dir("plugins"))]
