"""The store's file: made private (0600), created whole (schema written to a temporary file, then moved in), and
its schema version checked before each write."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

import duckdb

from labtui.store.access import connect
from labtui.store.errors import StoreError, first_line
from labtui.store.schema import SCHEMA_VERSION, check_version, ensure_schema


def restrict_files(path: Path) -> None:
    for file in (path, path.with_name(path.name + ".wal")):
        with contextlib.suppress(FileNotFoundError):
            if stat.S_IMODE(file.stat().st_mode) != 0o600:
                file.chmod(0o600)


def remove_files(*files: Path) -> None:
    for file in files:
        with contextlib.suppress(FileNotFoundError):
            file.unlink()


def create_store(path: Path) -> None:
    """Create a new store at `path` all at once: built beside it, then linked into place.

    A failure (a full disk) leaves nothing at `path`.  When another process
    creates the store first, its file is kept and this one is dropped.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    tmp_wal = tmp.with_name(tmp.name + ".wal")
    try:
        con = connect(tmp, read_only=False, wait=0)
        try:
            tmp.chmod(0o600)
            ensure_schema(con, path)
        finally:
            con.close()  # checkpoints: the schema is in the file, not in a WAL
        if tmp_wal.exists():
            raise StoreError(f"could not create store {path}: the new file could not be completed")
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another labtui created it at the same moment: use that one
        except OSError:  # a file system without hard links
            if not path.exists():
                tmp.rename(path)
    except duckdb.Error as exc:
        raise StoreError(f"could not create store {path}: {first_line(str(exc))}") from exc
    except OSError as exc:
        raise StoreError(f"could not create store {path}: {exc.strerror or exc}") from exc
    finally:
        remove_files(tmp, tmp_wal)


def check_version_fast(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Before each write: the store was not upgraded by a newer labtui since it was opened."""
    rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    if not rows or rows[0][0] != str(SCHEMA_VERSION):
        check_version(con, path)  # the full check, with its message
