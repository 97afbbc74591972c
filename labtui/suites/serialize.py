"""A checked suite as JSON-able data, stored with each session."""

from __future__ import annotations

import dataclasses
from typing import Any

from labtui.suites.model import Suite


def suite_to_dict(suite: Suite) -> dict[str, Any]:
    """The suite as JSON-able data (tuples become lists), for storing with a session; its kind's own tables
    sit beside the common ones, by table name (``config["fairshare"]``), as in the suite file."""
    data = dataclasses.asdict(suite)
    data.update(dict(data.pop("settings")))
    return _jsonable(data)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    return value
