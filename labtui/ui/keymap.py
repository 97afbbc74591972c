"""Key bindings the user changed in `keys.toml` (in labtui's config dir), as a Textual keymap.

The file has a table per scope and an action's keys in it (Textual key names,
several separated by commas)::

    [app]
    command_line = "colon,ctrl+k"

    [instances]
    describe = "i"
    destroy = "ctrl+x"

A binding that may be changed carries the id ``<scope>.<action>``; an unknown
scope or action, or a value that is not a string, is refused in one line that
names the file and what is wrong, and the file is then not used at all.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path

from textual.binding import Binding

from labtui.core.paths import config_dir

KEYS_FILE = "keys.toml"


class KeysError(ValueError):
    """keys.toml cannot be used: the message is one line naming the file."""


def keys_path() -> Path:
    """Where the key bindings are read from."""
    return config_dir() / KEYS_FILE


def binding_ids(classes: Iterable[type]) -> set[str]:
    """The ids of the bindings that may be changed, of these widget (or app) classes."""
    return {b.id for cls in classes for b in getattr(cls, "BINDINGS", []) if isinstance(b, Binding) and b.id}


def read_keymap(path: Path) -> dict[str, str]:
    """`{"<scope>.<action>": "keys"}` from the file ({} when there is none); KeysError for a bad one."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise KeysError(f"{path}: {exc}") from None
    keymap = {}
    for scope, actions in data.items():
        if not isinstance(actions, dict):
            raise KeysError(f"{path}: {scope} must be a table [{scope}] of action = \"keys\"")
        for action, keys in actions.items():
            if not isinstance(keys, str) or not keys.strip():
                raise KeysError(f"{path}: [{scope}] {action} must be a string of key names, got {keys!r}")
            keymap[f"{scope}.{action}"] = keys
    return keymap


def check_keymap(path: Path, keymap: dict[str, str], known: set[str]) -> None:
    """KeysError naming the first entry that changes no binding (with the ones that can be changed)."""
    for binding_id in keymap:
        if binding_id not in known:
            scope, action = binding_id.split(".", 1)
            choices = ", ".join(sorted(k.split(".", 1)[1] for k in known if k.startswith(f"{scope}.")))
            scopes = ", ".join(sorted({k.split(".")[0] for k in known}))
            raise KeysError(f"{path}: [{scope}] {action}: no such key binding; "
                            + (f"[{scope}] has {choices}" if choices else f"the scopes are {scopes}"))
