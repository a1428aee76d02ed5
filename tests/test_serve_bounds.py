"""`mlptui serve` bounds what a browser tab may cost: a tab asking for a 20000×20000 terminal (2.1 GB in
one app process) gets at most 1000×400, at start and on every resize; a tab that goes frees its slot
within seconds even when its app does not answer; SIGTERM closes every tab and ends the server quietly."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from test_serve import _serve

from mlptui.commands.serve_session import MAX_COLUMNS, MAX_ROWS, bounded_size, handle_message

aiohttp = pytest.importorskip("aiohttp")


@pytest.fixture
def served_one_session():
    yield from _serve("--max-sessions", "1")


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def _app_environ(server: int, seconds: float = 20) -> dict[str, str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for pid in _children(server):
            raw = Path(f"/proc/{pid}/environ").read_bytes()
            env = dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)
            if "COLUMNS" in env:
                return env
        time.sleep(0.1)
    raise AssertionError("no tab's app process started")


def _handshake(port: int, token: str, size: str = "width=80&height=24") -> socket.socket:
    """A websocket opened by hand, for a client that then vanishes without closing it."""
    own = f"http://127.0.0.1:{port}"
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall((f"GET /ws?{size}&token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {own}\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    assert s.recv(12) == b"HTTP/1.1 101"
    return s


async def _status(port: int, token: str) -> int:
    own = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(f"{own}/ws?width=80&height=24&token={token}", headers={"Origin": own}):
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


def test_a_huge_terminal_asked_at_start_is_capped(served_one_session) -> None:
    port, proc, token = served_one_session
    tab = _handshake(port, token, "width=20000&height=20000")
    try:
        env = _app_environ(proc.pid)
        assert (env["COLUMNS"], env["ROWS"]) == (str(MAX_COLUMNS), str(MAX_ROWS))
    finally:
        tab.close()


class _Service:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    async def set_terminal_size(self, width: int, height: int) -> None:
        self.calls.append(("size", width, height))

    async def send_bytes(self, data: bytes) -> None:
        self.calls.append(("stdin", data))

    async def blur(self) -> None:
        self.calls.append(("blur",))

    async def focus(self) -> None:
        self.calls.append(("focus",))


def test_a_resize_is_capped_and_odd_messages_are_ignored() -> None:
    service = _Service()
    messages = ['["resize", {"width": 20000, "height": 20000}]', '["resize", {"width": "x", "height": -5}]',
                '["resize", {"width": 1e308, "height": true}]', '["resize", 5]', '["stdin", "q"]', '["stdin", 5]',
                "not json", "{}", "[]", '["other"]', '["focus"]', '["blur"]', '["resize", {"width": 120, "height": 40}]']
    for text in messages:
        asyncio.run(handle_message(service, None, text))      # type: ignore[arg-type]
    assert service.calls == [("size", MAX_COLUMNS, MAX_ROWS), ("size", 80, 1), ("size", 80, 24), ("stdin", b"q"),
                             ("focus",), ("blur",), ("size", 120, 40)]
    assert bounded_size("20000", "0") == (MAX_COLUMNS, 1) and bounded_size("9" * 401, None) == (80, 24)


def test_a_tab_that_goes_frees_its_slot_even_when_its_app_does_not_answer(served_one_session) -> None:
    port, proc, token = served_one_session
    tab = _handshake(port, token)
    _app_environ(proc.pid)
    app = _children(proc.pid)
    for pid in app:
        os.kill(pid, signal.SIGSTOP)        # a hung app: it will never read the quit it is sent
    tab.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    tab.close()                             # the client vanishes (a reset, no websocket close)
    status, deadline = 0, time.monotonic() + 30
    while status != 101 and time.monotonic() < deadline:
        time.sleep(0.5)
        status = asyncio.run(_status(port, token))
    assert status == 101
    assert not any(p in _children(proc.pid) for p in app)      # the hung app was killed, not left behind


def test_sigterm_closes_every_tab_and_ends_quietly(served_one_session) -> None:
    port, proc, token = served_one_session
    own = f"http://127.0.0.1:{port}"

    async def tab_then_term() -> object:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"{own}/ws?width=80&height=24&token={token}",
                                          headers={"Origin": own}) as ws:
                _app_environ(proc.pid)
                proc.send_signal(signal.SIGTERM)
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline:
                    msg = await ws.receive(timeout=deadline - time.monotonic())
                    if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                        return msg.data
                return None

    assert asyncio.run(tab_then_term()) == 1001          # "going away"
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and err == "" and "Traceback" not in out
