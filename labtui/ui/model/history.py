"""Persisted SQL history: a JSON list of queries, newest last, deduplicated and bounded."""

from __future__ import annotations

import json
import os
from pathlib import Path

KEPT = 200


def state_dir() -> Path:
    """$LABTUI_STATE_DIR, else ~/.local/state/labtui."""
    env = os.environ.get("LABTUI_STATE_DIR")
    return Path(env) if env else Path.home() / ".local" / "state" / "labtui"


def history_path() -> Path:
    return state_dir() / "history.json"


class History:
    """Queries run in the SQL view, recalled with older()/newer() like a shell."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or history_path()
        self.items: list[str] = self._load()
        self._cursor = len(self.items)

    def _load(self) -> list[str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [q for q in data if isinstance(q, str)] if isinstance(data, list) else []

    def add(self, query: str) -> None:
        """Append query (moving an earlier copy to the end) and save."""
        query = query.strip()
        if not query:
            return
        self.items = [q for q in self.items if q != query][-(KEPT - 1):] + [query]
        self._cursor = len(self.items)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.items, indent=1), encoding="utf-8")
        tmp.replace(self.path)

    def matching(self, words: str) -> list[str]:
        """The queries holding every word of `words` (ignoring case), newest first; all of them for no words."""
        wanted = words.lower().split()
        return [q for q in reversed(self.items) if all(w in q.lower() for w in wanted)]

    def older(self) -> str | None:
        if not self.items:
            return None
        self._cursor = max(0, self._cursor - 1)
        return self.items[self._cursor]

    def newer(self) -> str | None:
        if self._cursor >= len(self.items) - 1:
            self._cursor = len(self.items)
            return ""
        self._cursor += 1
        return self.items[self._cursor]
