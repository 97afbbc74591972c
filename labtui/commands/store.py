"""`labtui store sync`: move the journals of finished and crashed sessions into the store now."""

from __future__ import annotations

import argparse

from labtui.commands.common import db_path
from labtui.store.access import check_file
from labtui.store.feed import sync_store


def cmd_store(args: argparse.Namespace) -> int:
    """Move every finished journal in, waiting for a store another program holds; say what moved."""
    path = db_path(args)
    check_file(path)
    synced = sync_store(path, wait=args.wait)
    print(f"{synced.journals} journal(s), {synced.rows} row(s) moved into {path}"
          + (f"; marked crashed: {', '.join(synced.crashed)}" if synced.crashed else "")
          + (f"; {synced.in_use} journal(s) still being written by running sessions" if synced.in_use else ""))
    return 0
