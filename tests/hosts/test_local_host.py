import os

import pytest

from labtui.hosts import CommandTimeout, HostError, get_host, linux
from labtui.hosts.local import LocalHost

MEMINFO = """MemTotal:        1000 kB
MemFree:          100 kB
MemAvailable:     250 kB
SwapTotal:        400 kB
SwapFree:         100 kB
"""


def test_parse_proc_stat_and_cpu_available():
    before = linux.parse_proc_stat("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n")
    after = linux.parse_proc_stat("cpu  150 0 150 800 100 0 0 0 0 0\n")
    assert before.total == 1000 and before.idle == 800
    assert linux.cpu_available(before, after) == pytest.approx(100 / 200)
    assert linux.cpu_available(after, after) is None


def test_memory_figures_with_and_without_swap():
    mem = linux.memory_figures(linux.parse_meminfo(MEMINFO))
    assert mem.mem_avail == pytest.approx(0.25)
    assert mem.swap_avail == pytest.approx(0.25)
    assert mem.mem_used_bytes == 750 * 1024
    no_swap = linux.memory_figures(linux.parse_meminfo(MEMINFO.replace("SwapTotal:        400", "SwapTotal:          0")))
    assert no_swap.swap_avail is None


def test_unknown_host_lists_known():
    with pytest.raises(HostError, match="known hosts: local"):
        get_host("nowhere")


async def test_run_collects_output_and_exit_code():
    host = LocalHost()
    result = await host.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    with pytest.raises(HostError, match="exited 3: err"):
        result.check()


async def test_run_timeout_kills_the_command():
    host = LocalHost()
    with pytest.raises(CommandTimeout, match="timed out after 0.3 s"):
        await host.run(["sleep", "30"], timeout=0.3)


async def test_run_missing_command_is_a_host_error():
    with pytest.raises(HostError, match="command not found"):
        await LocalHost().run(["labtui-no-such-command"])


async def test_stream_yields_lines():
    lines = [line async for line in LocalHost().stream(["printf", "a\\nb\\nc\\n"])]
    assert lines == ["a", "b", "c"]


async def test_samples_are_real_and_periodic():
    host = LocalHost()
    got = []
    async for sample in host.samples(0.2):
        got.append(sample)
        if len(got) == 3:
            break
    assert all(0.0 <= s.cpu_avail <= 1.0 for s in got)
    assert all(0.0 < s.mem_avail <= 1.0 for s in got)
    assert all(s.mem_used_bytes > 0 for s in got)
    # periodic: never faster than the interval (how much slower a busy machine makes it is not checked here)
    assert got[0].ts < got[1].ts < got[2].ts
    assert got[2].ts - got[0].ts > 0.3


async def test_facts_describe_this_machine():
    facts = await LocalHost().facts()
    assert facts.os == "Linux"
    assert facts.cores == os.cpu_count()
    assert facts.mem_total_bytes > 0


async def test_put_and_get_file(tmp_path):
    src = tmp_path / "a.txt"
    src.write_text("hello")
    host = LocalHost()
    await host.put_file(str(src), str(tmp_path / "sub" / "b.txt"), mode=0o600)
    assert (tmp_path / "sub" / "b.txt").read_text() == "hello"
    assert (tmp_path / "sub" / "b.txt").stat().st_mode & 0o777 == 0o600
    await host.get_file(str(tmp_path / "sub" / "b.txt"), str(tmp_path / "c.txt"))
    assert (tmp_path / "c.txt").read_text() == "hello"
