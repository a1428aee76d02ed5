"""`mlptui perfetto` under load and abuse: 200 concurrent GETs all answered, clients that hang up
early and files that vanish or turn into symlinks after start cost one quiet answer, never a traceback."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mlptui.commands.perfetto import Served, _Server

ROOT = Path(__file__).resolve().parents[1]


def _serve(routes: dict[str, Path]) -> tuple[_Server, int]:
    server = _Server(0, {route: Served.of(path) for route, path in routes.items()})
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, server.server_address[1]


def _get(port: int, route: str, host: str | None = None, timeout: float = 30) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", route, headers={"Host": host} if host else {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_200_concurrent_gets_all_succeed(tmp_path: Path) -> None:
    data = os.urandom(256 << 10)
    (tmp_path / "t.json").write_bytes(data)
    server, port = _serve({"/t.json": tmp_path / "t.json"})
    try:
        barrier = threading.Barrier(200)

        def fetch(_: int) -> tuple[int, bytes]:
            barrier.wait()         # all 200 connect at the same moment
            try:
                return _get(port, "/t.json", timeout=5)     # with a backlog of 5, dozens time out
            except OSError as exc:
                return 0, str(exc).encode()

        with ThreadPoolExecutor(200) as pool:
            results = list(pool.map(fetch, range(200)))
    finally:
        server.shutdown()
        server.server_close()
    assert [status for status, _ in results] == [200] * 200
    assert all(body == data for _, body in results)


def test_ipv6_loopback_host_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_bytes(b"{}")
    server, port = _serve({"/t.json": tmp_path / "t.json"})
    try:
        assert _get(port, "/t.json", host=f"[::1]:{port}") == (200, b"{}")
        assert _get(port, "/t.json", host="[::1]") == (200, b"{}")
        assert _get(port, "/t.json", host=f"[::2]:{port}")[0] == 403
    finally:
        server.shutdown()
        server.server_close()


def test_vanished_and_symlinked_files_are_not_served(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"not for the browser")
    for name in ("gone.json", "swapped.json", "fifo.json"):
        (tmp_path / name).write_bytes(b"{}")
    server, port = _serve({f"/{n}": tmp_path / n for n in ("gone.json", "swapped.json", "fifo.json")})
    try:
        (tmp_path / "gone.json").unlink()
        (tmp_path / "swapped.json").unlink()
        (tmp_path / "swapped.json").symlink_to(secret)
        (tmp_path / "fifo.json").unlink()
        os.mkfifo(tmp_path / "fifo.json")            # would block a plain open() forever
        for route in ("/gone.json", "/swapped.json", "/fifo.json"):
            status, body = _get(port, route)
            assert status == 410 and b"not for the browser" not in body
    finally:
        server.shutdown()
        server.server_close()


def test_client_disconnects_and_vanished_files_print_no_traceback(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (48 << 20))
    small = tmp_path / "small.json"
    small.write_bytes(b"{}")
    proc = subprocess.Popen([sys.executable, "-m", "mlptui.cli", "perfetto", str(big), str(small),
                             "--port", "0", "--keep"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        port = int(first.split("127.0.0.1:", 1)[1].split("/", 1)[0])
        for _ in range(5):        # ask for 48 MB, read a little, hang up (RST: unread data is discarded)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(f"GET /big.json HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
                s.recv(4096)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        small.unlink()
        assert _get(port, "/small.json")[0] == 410
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/big.json", timeout=30).read(10) == b" " * 10
        proc.send_signal(2)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
        proc.wait()
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if not line.startswith("note: ")]   # the port note: not 9001
    assert lines == ["mlptui: small.json: no longer served (No such file or directory)"]


def test_file_names_reach_the_terminal_escaped(tmp_path: Path) -> None:
    evil = tmp_path / "a\x1b]0;owned\x07\x1b[2J.json"
    evil.write_bytes(b"{}")
    proc = subprocess.Popen([sys.executable, "-m", "mlptui.cli", "perfetto", str(evil), "--port", "0"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline()
        port = int(url.split("127.0.0.1:", 1)[1].split("/", 1)[0])
        route = "/" + url.strip().rsplit("/", 1)[1]          # percent-encoded in the URL
        assert "\x1b" not in url and _get(port, route)[0] == 200
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
        proc.wait()
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "served a\\x1b]0;owned\\x07\\x1b[2J.json (2 B)" in out
