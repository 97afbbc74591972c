"""Bad suite values and --set strings get one line naming --set (or the file), never a traceback."""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import cli_run
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labtui.cli import main
from labtui.suites import SuiteError, load_suite
from labtui.suites.keys import MAX_STEPS

KEYS = ["scale.steps", "scale.per_step", "scale.start", "suite.repetitions", "suite.operation_timeout_s",
        "suite.name", "worker.args", "worker.runs", "worker.program", "sampling.interval_s", "sampling.settle_s",
        "nosuch.key", "scale"]
VALUES = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: repr(f).replace("inf", "inf")),
    st.text(max_size=12).map(lambda t: '"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"'),
    st.text(max_size=12),
    st.sampled_from(["nan", "inf", "-inf", "true", "[]", '["a\\u0000b"]', "{", "1e309", "0x10"]),
)


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(KEYS), value=VALUES)
def test_any_set_string_loads_or_is_a_suite_error_naming_set(key: str, value: str) -> None:
    try:
        load_suite("boot-scaling", [f"{key}={value}"])
    except SuiteError as exc:
        text = str(exc)
        assert "\n" not in text.strip() or "--set" in text
        assert "--set" in text, text
        assert "Traceback" not in text


@pytest.mark.parametrize("setting,words", [
    (f"scale.steps={MAX_STEPS + 1}", "an integer from 1 to"),
    ("scale.steps=9223372036854775807", "an integer from 1 to"),
    ("suite.operation_timeout_s=nan", "a number from"),
    ("sampling.settle_s=inf", "a number from"),
    ("sampling.settle_s=-1", "a number from"),
    ('worker.args=["a\\u0000b"]', "no control characters"),
    ('suite.name="x\\u0007"', "no control characters"),
])
def test_out_of_range_and_control_characters_are_refused(setting: str, words: str) -> None:
    with pytest.raises(SuiteError, match=words) as caught:
        load_suite("boot-scaling", [setting])
    assert "--set" in str(caught.value)


def test_the_cli_says_one_line_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    proc = cli_run.labtui("run", "boot-scaling", "--set", "scale.steps=9223372036854775807", "--db", str(db), timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--set scale.steps" in proc.stderr
    assert not db.exists()


# --- the bad-input table (docs/bad-input.md): every row through the CLI ---------------------------------

BOOT = (Path(__file__).resolve().parents[2] / "suites" / "boot-scaling.toml").read_text()


def _suite(folder: Path, old: str, new: str) -> str:
    """boot-scaling.toml with one line changed, as ./bad.toml."""
    assert old in BOOT
    (folder / "bad.toml").write_text(BOOT.replace(old, new, 1))
    return "./bad.toml"


def _config(folder: Path, content: bytes) -> str:
    (folder / "lab.toml").write_bytes(content)
    return str(folder / "lab.toml")


def _sql(query: str) -> Callable[[Path], list[str]]:
    """`labtui sql QUERY` on a labtui store (lab.duckdb)."""
    def setup(folder: Path) -> list[str]:
        from test_store_files import _labtui_store

        _labtui_store(folder / "lab.duckdb")
        return ["sql", query, "--db", "lab.duckdb"]
    return setup


def _store(kind: str, *command: str) -> Callable[[Path], list[str]]:
    """A file of the named kind (tests/unit/test_store_files.py) as the store of `labtui run` (or of command)."""
    def setup(folder: Path) -> list[str]:
        from test_store_files import CASES

        CASES[kind][0](folder / "lab.duckdb")
        return [*(command or ("run", "boot-scaling")), "--db", "lab.duckdb"]
    return setup


DEEP = "[" * 5000 + "]" * 5000
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n"

#: id -> (setup(folder) -> argv, the message (a regex), exit status); the folder is the working directory.
ROWS: dict[str, tuple[Callable[[Path], list[str]], str, int]] = {
    "corrupt store": (_store("corrupt"), r"^labtui run: cannot open store lab\.duckdb: it is damaged or not a DuckDB", 2),
    "sqlite file": (_store("sqlite"), r"is a SQLite database, not a labtui store", 2),
    "other file": (_store("text"), r"is not a DuckDB database \(unknown file header\)", 2),
    "foreign duckdb": (_store("foreign duckdb"), r"is a DuckDB database but not a labtui store", 2),
    # a store that cannot be read is not a session missing from it: no "(see `labtui sessions`)"
    "compare other file": (lambda f: _store("text")(f) and ["compare", "a", "b", "--db", "lab.duckdb"],
                           r"^labtui compare: store lab\.duckdb is not a DuckDB database \(unknown file header\); "
                           r"labtui will not touch it$", 2),
    "newer schema": (_store("newer schema"), r"newer than this labtui understands", 2),
    "truncated store": (_store("half"), r"^labtui run: cannot open store lab\.duckdb: it is damaged \(truncated\)$", 2),
    "sessions truncated store": (_store("half", "sessions"),
                                 r"^labtui sessions: cannot open store lab\.duckdb: it is damaged \(truncated\)$", 2),
    "directory store": (_store("directory"), r"^labtui run: store lab\.duckdb is a directory, not a DuckDB file$", 2),
    "sessions directory": (_store("directory", "sessions"),
                           r"^labtui sessions: store lab\.duckdb is a directory, not a DuckDB file$", 2),
    "sql directory": (_store("directory", "sql", "select 1"),
                      r"^labtui sql: store lab\.duckdb is a directory, not a DuckDB file$", 2),
    "suite integer": (lambda f: ["run", _suite(f, "steps = 100", "steps = 9223372036854775807"), "--db", "x.duckdb"],
                      r"^labtui run: bad\.toml:\d+: scale\.steps: .*an integer from 1 to 100000", 2),
    "--set integer": (lambda f: ["run", "boot-scaling", "--set", "scale.per_step=-5", "--db", "x.duckdb"],
                      r"^labtui run: --set scale\.per_step: .*an integer from 1 to", 2),
    "suite control character": (lambda f: ["run", _suite(f, 'name = "boot-scaling"', 'name = "boot\\u0000"'),
                                           "--db", "x.duckdb"], r"bad\.toml:\d+: suite\.name: .*no control characters", 2),
    "--set NUL": (lambda f: ["run", "boot-scaling", "--set", 'worker.args=["a\\u0000b"]', "--db", "x.duckdb"],
                  r"^labtui run: --set worker\.args: .*no control characters", 2),
    "config control character": (lambda f: ["--config", _config(f, b'[hosts.h]\naddress = "a\\u0007b"\n'), "hosts"],
                                 r"lab\.toml:2: host 'h': address: must be a non-empty string without control", 2),
    "suite nan": (lambda f: ["run", _suite(f, "[suite]\n", "[suite]\noperation_timeout_s = nan\n"), "--db", "x.duckdb"],
                  r"bad\.toml:\d+: suite\.operation_timeout_s: .*a number from", 2),
    "--set inf": (lambda f: ["run", "boot-scaling", "--set", "sampling.interval_s=inf", "--db", "x.duckdb"],
                  r"^labtui run: --set sampling\.interval_s: .*a number from", 2),
    "--set negative": (lambda f: ["run", "boot-scaling", "--set", "sampling.settle_s=-0.5", "--db", "x.duckdb"],
                       r"^labtui run: --set sampling\.settle_s: .*a number from", 2),
    "binary config": (lambda f: ["--config", _config(f, b"\x00\x01\xff\xfe\x80binary"), "hosts"],
                      r"lab\.toml: not a UTF-8 text file \(byte 0xff at offset 2\)", 2),
    "latin-1 config": (lambda f: ["--config", _config(f, b'[hosts.h]\naddress = "caf\xe9"\n'), "hosts"],
                       r"lab\.toml: not a UTF-8 text file \(byte 0xe9 at offset 24\)", 2),
    "bad identity": (lambda f: (f / "id").write_text(KEY) and
                     ["--config", _config(f, f'[hosts.h]\naddress = "127.0.0.1"\nidentity = "{f}/id"\n'.encode()), "hosts"],
                     r"lab\.toml:3: host 'h': identity: .*/id is not a private key labtui can use", 2),
    "deep suite": (lambda f: ["run", _suite(f, "[suite]\n", f"nested = {DEEP}\n[suite]\n"), "--db", "x.duckdb"],
                   r"^labtui run: bad\.toml: invalid TOML: arrays or tables nested too deeply$", 2),
    "deep config": (lambda f: ["--config", _config(f, f"a = {DEEP}\n".encode()), "hosts"],
                    r"lab\.toml: invalid TOML: arrays or tables nested too deeply$", 2),
    "deep --set": (lambda f: ["run", "boot-scaling", "--set", f"worker.args={DEEP}", "--db", "x.duckdb"],
                   r"^labtui run: --set worker\.args: invalid TOML: arrays or tables nested too deeply$", 2),
    "missing program": (lambda f: ["run", _suite(f, 'program = "hello"', 'program = "nosuch"'), "--db", "x.duckdb"],
                        r"bad\.toml:\d+: worker\.program: no probe 'nosuch'; known probes: the \d+ in suites/probes/$", 2),
    "--set missing program": (lambda f: ["run", "boot-scaling", "--set", "background.program=nosuch", "--db", "x.duckdb"],
                              r"^labtui run: --set background\.program: no probe 'nosuch'; known probes: the \d+ in", 2),
    "unknown suite": (lambda f: ["run", "nosuch", "--db", "x.duckdb"],
                      r"^labtui run: nosuch: expected a suite file or one of the \d+ in `labtui suites`$", 2),
    "misspelt suite": (lambda f: ["run", "boot-scalin", "--db", "x.duckdb"],
                       r"^labtui run: boot-scalin: no such suite; did you mean 'boot-scaling'\?$", 2),
    "sql unknown table": (_sql("select * from nosuch"),
                          r'^labtui sql: table with name nosuch does not exist! Did you mean "\w+"\?$', 2),
    "sql syntax error": (_sql("selec 1"), r'^labtui sql: syntax error at or near "selec"$', 2),
    "backend cannot run suite": (lambda f: ["run", "xen-domu", "--backend", "process", "--db", "x.duckdb"],
                                 r"^labtui run: backend process cannot run image 'guest'; run zone-worker instead$", 2),
    "--set unknown key": (lambda f: ["run", "boot-scaling", "--set", "nosuch.key=1", "--db", "x.duckdb"],
                          r"^labtui run: --set nosuch\.key: unknown key, not one of the \d+ in docs/suites\.md$", 2),
}


#: The terminal's width ($COLUMNS) the rows run at: a message line is at most that wide.
WIDTH = 80
#: Rows whose line is wider, as written before lines were held to the width: a path of the test's folder (DIR),
#: what DuckDB says of a damaged block, a value quoted back, a range or a store's state in full words.
WIDER = {"corrupt store", "sqlite file", "other file", "foreign duckdb", "compare other file", "newer schema",
         "suite integer", "suite control character", "--set NUL", "config control character", "suite nan",
         "--set negative", "binary config", "latin-1 config", "bad identity", "deep config", "missing program",
         "--set missing program"}

#: `labtui run` draws its progress line before the store is opened; without a terminal it stays on stderr.
PROGRESS = re.compile(r"^boot-scaling +0/\d+ starting ")


def _one_line(err: str) -> str:
    """The one error line of stderr (besides run's progress line), never a traceback."""
    lines = [line for line in err.splitlines() if not PROGRESS.match(line)]
    assert len(lines) == 1 and lines[0].startswith("labtui ") and "Traceback" not in err, err
    return lines[0]


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file and directory under folder, with each file's bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"/"
            for p in sorted(folder.rglob("*"))}


@pytest.fixture
def workdir(tmp_path: Path, runtime_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.delenv("LABTUI_CONFIG", raising=False)
    monkeypatch.delenv("LABTUI_DB", raising=False)
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    return folder


@pytest.mark.parametrize("row", list(ROWS))
def test_bad_input_row_is_one_line_exit_2_and_changes_nothing(row: str, workdir: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    setup, message, status = ROWS[row]
    argv = setup(workdir)
    before = _snapshot(workdir)
    assert main(argv) == status
    line = _one_line(capsys.readouterr().err)
    assert re.search(message, line)
    assert len(line) <= WIDTH or row in WIDER, f"{len(line)} characters: {line}"
    assert _snapshot(workdir) == before  # nothing created, nothing modified (a refused store byte-identical)


# --- a full disk: a small tmpfs, filled ---------------------------------------------------------------


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs with no space left (mounting needs root: skipped, with the reason, otherwise)."""
    mount = tmp_path / "full"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill (needs root): {done.stderr.strip()}")
    try:
        with open(mount / "filler", "wb", buffering=0) as filler, contextlib.suppress(OSError):
            while True:
                filler.write(b"\0" * 4096)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def _session_store(path: Path) -> Path:
    from labtui.core.events import Result, SessionEnded, SessionStarted, StepEnded, StepStarted
    from labtui.store import record_events

    record_events(path, [SessionStarted("s1", "boot", "scaling", "process", "local", {}, 0, ts=1.79e9),
                         StepStarted("s1", 0, 0, 1, 0, ts=1.79e9),
                         Result("s1", 0, 0, 0, "local", "w1", "boot", "boot_time", 0.01, "s", "lower", 1.79e9),
                         StepEnded("s1", 0, 0, 0, ts=1.79e9 + 1), SessionEnded("s1", "completed", "", ts=1.79e9 + 2)])
    return path


@pytest.mark.parametrize("command,status", [
    (["run", "boot-scaling", "--profile", "quick", "--db", "{full}/new/lab.duckdb"], 2),
    (["export", "s1", "--format", "parquet", "--db", "{store}", "--out", "{full}/out/s1"], 1),
    (["export", "s1", "--format", "csv", "--db", "{store}", "--out", "{full}/out/s1"], 1),
    (["report", "s1", "--db", "{store}", "--out", "{full}/out/report"], 1),
])
def test_a_full_disk_is_one_line_and_leaves_nothing(command: list[str], status: int, full_disk: Path, workdir: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    store = _session_store(workdir / "lab.duckdb")
    argv = [a.format(full=full_disk, store=store) for a in command]
    before = _snapshot(workdir)
    assert main(argv) == status
    line = _one_line(capsys.readouterr().err)
    assert "No space left on device" in line and str(full_disk) in line, line
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler"]  # no store, temp file, export or directory
    assert _snapshot(workdir) == before
