"""`mlptui perfetto` serves at most --max-connections connections at once, a thread each: 300 idle
connections held open cost threads up to the cap (they started one thread each, without bound), a
connection beyond the cap waits for a slot and is answered 503 when none frees, and every file is still
served once the flood goes."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from pathlib import Path

import pytest

from mlptui.cli import main
from mlptui.commands.perfetto import Served, _Server


def _serve(tmp_path: Path, cap: int) -> tuple[_Server, int]:
    (tmp_path / "t.json").write_bytes(b'{"traceEvents": []}')
    server = _Server(0, {"/t.json": Served.of(tmp_path / "t.json")}, max_connections=cap, wait_s=0.5)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, server.server_address[1]


def _get(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/t.json")
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_a_flood_of_idle_connections_costs_threads_up_to_the_cap(tmp_path: Path) -> None:
    server, port = _serve(tmp_path, cap=8)
    before = threading.active_count()
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(300)]
    try:
        time.sleep(1.5)
        assert threading.active_count() - before <= 8
        assert _get(port) == 503                      # no slot frees while the flood holds them all
    finally:
        for s in idle:
            s.close()
    deadline = time.monotonic() + 60
    status = 0
    while status != 200 and time.monotonic() < deadline:
        status = _get(port)
    assert status == 200                              # the flood gone, the file is served again
    server.shutdown()
    server.server_close()


def test_a_burst_within_the_cap_is_served_whole(tmp_path: Path) -> None:
    server, port = _serve(tmp_path, cap=4)
    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(_get(port))) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 40                      # each waits its turn for one of the 4 slots
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("bad", ["0", "-1", "10001"])
def test_a_cap_out_of_range_is_one_line(bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t.json").write_text("[]")
    assert main(["perfetto", str(tmp_path / "t.json"), "--port", "0", "--max-connections", bad]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-connections" in err
