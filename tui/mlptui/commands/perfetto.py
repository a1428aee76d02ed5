"""`mlptui perfetto FILE... [--port 9001] [--keep]`: hand traces to ui.perfetto.dev from 127.0.0.1.

ui.perfetto.dev loads `#!/?url=...` with a fetch from the browser, so the file must be served over
HTTP with `Access-Control-Allow-Origin: https://ui.perfetto.dev`. The server binds 127.0.0.1 only,
answers exactly the given files (nothing else on disk is reachable), refuses requests whose Host is
not loopback (a guard against DNS rebinding), and stops once every file was served (or on Ctrl-C;
`--keep` serves until Ctrl-C). Each file is served as it was at start: opened without following a
symlink and only while it is the same regular file (else 410 and one line); a browser that hangs up
early costs nothing on the terminal, and the listen backlog takes a page's burst of requests. At most
--max-connections connections are served at once (a thread each); one more waits for a slot, then is
answered 503, so a flood of connections costs threads up to the cap, not one per connection. Remote
specs (host:path, ssh://, hf://) are fetched to the local cache first, so no port forwarding is needed.

The port is 9001 because ui.perfetto.dev fetches nothing else over plain HTTP from this machine: its
Content-Security-Policy, built by `setupContentSecurityPolicy()` in google/perfetto's
`ui/src/frontend/index.ts`, allows `connect-src` to `http://127.0.0.1:9001` (trace_processor's --httpd
port) and to HTTPS, and no other `http://127.0.0.1` port (its 'Relax Content Security Policy for
127.0.0.1:*' flag swaps 9001 for the `rpc_port` of the URL, for trace_processor, not for `?url=`).
Another --port serves, and says in one line that the link will load only through 9001.
"""

from __future__ import annotations

import argparse
import http.server
import os
import socket
import stat
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote, unquote, urlsplit

from mlptui.base.errors import MlptuiError
from mlptui.base.text import printable
from mlptui.base.units import size as size_text

ORIGIN = "https://ui.perfetto.dev"
DEFAULT_PORT = 9001
DEFAULT_MAX_CONNECTIONS = 32      # a page fetches each trace once; a few tabs and retries fit
BUSY_WAIT_S = 5.0                 # how long a connection over the cap waits for a slot before a 503
_CHUNK = 1 << 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="trace file(s): local path, host:path, ssh://... or hf://...")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}, the only one ui.perfetto.dev fetches "
                             "from; 0 picks a free one)")
    parser.add_argument("--keep", action="store_true", help="keep serving after each file was fetched once")
    parser.add_argument("--max-connections", type=int, default=DEFAULT_MAX_CONNECTIONS, metavar="N",
                        help=f"connections served at once, each by a thread (default {DEFAULT_MAX_CONNECTIONS}); "
                             f"one more waits up to {BUSY_WAIT_S:.0f} s, then is answered 503")


def _local_copy(spec: str) -> Path:
    """A readable local file for `spec` (remote specs are fetched into the local cache)."""
    from mlptui.sources.dispatch import source_kind

    kind = source_kind(spec)
    if kind == "ssh":
        from mlptui.sources.ssh import fetch

        return fetch(spec, _fetch_progress(spec))
    if kind == "hf":
        from mlptui.sources.hub import fetch_file
        from mlptui.sources.hub_spec import parse_hf_spec

        return fetch_file(parse_hf_spec(spec))
    path = Path(spec).expanduser()
    if path.is_dir():
        raise MlptuiError(f"{spec}: is a folder; name the trace file(s) to serve")
    if not path.is_file():
        raise MlptuiError(f"{spec}: no such file")
    if not os.access(path, os.R_OK):
        raise MlptuiError(f"{spec}: permission denied")
    return path


def _fetch_progress(spec: str) -> Callable[[int, int], None] | None:
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        pct = 100 * done // total if total else 100
        sys.stderr.write(f"\rfetching {spec}  {pct:3d}%")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


@dataclass(frozen=True)
class Served:
    """A file as it was when the server started: its real path and identity. Requests open that path
    without following a symlink and serve it only while it is still the same regular file."""

    path: Path
    dev: int
    ino: int

    @classmethod
    def of(cls, path: Path) -> Served:
        real = path.resolve()
        st = real.stat()
        return cls(real, st.st_dev, st.st_ino)

    @property
    def name(self) -> str:
        """The file name as printed on the terminal (control characters spelled out)."""
        return printable(self.path.name)


def url_names(paths: list[Path]) -> dict[str, Path]:
    """URL path ("/name", or "/2/name" when two files share a name) -> file."""
    routes: dict[str, Path] = {}
    for i, path in enumerate(paths, start=1):
        route = "/" + path.name
        if route in routes:
            route = f"/{i}/{path.name}"
        routes[route] = path
    return routes


def perfetto_url(port: int, route: str) -> str:
    return f"{ORIGIN}/#!/?url=http://127.0.0.1:{port}{quote(route)}"


class _Gone(Exception):
    """The served file is no longer the one named at start (deleted, replaced, turned into a symlink)."""


def open_served(served: Served) -> BinaryIO:
    """Open the file named at start: never through a symlink, never a FIFO or device, never another file."""
    try:
        fd = os.open(served.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _Gone(exc.strerror or str(exc)) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (served.dev, served.ino):
        os.close(fd)
        raise _Gone("replaced since the server started")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 drops connections when a page (or a test) opens many at once.
    request_queue_size = 1024
    _BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n"
             b"Retry-After: 1\r\n\r\n")

    def __init__(self, port: int, routes: dict[str, Served], max_connections: int = DEFAULT_MAX_CONNECTIONS,
                 wait_s: float = BUSY_WAIT_S) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.routes = routes
        self.served: set[str] = set()
        self.all_served = threading.Event()
        self._lock = threading.Lock()
        # one thread per connection, at most max_connections at once: a connection beyond waits up to
        # wait_s for one to end (a page's burst), then is answered 503 without a thread of its own. Once a
        # wait found no slot, the next ones do not wait (a flood would hold the accept loop wait_s each)
        # until a slot is taken again.
        self._slots = threading.BoundedSemaphore(max_connections)
        self._wait_s = wait_s
        self._full = False

    def process_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        self._full = not self._slots.acquire(timeout=0 if self._full else self._wait_s)
        if self._full:
            try:
                request.sendall(self._BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()       # no thread started: nothing else will give the slot back
            raise

    def process_request_thread(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def mark_served(self, route: str) -> None:
        with self._lock:
            self.served.add(route)
            if len(self.served) == len(self.routes):
                self.all_served.set()

    def handle_error(self, request: object, client_address: object) -> None:
        """A browser that closes the connection early is routine: say nothing. Anything else: one line."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        print(f"mlptui: request from {client_address} failed: {type(exc).__name__}: {exc}", file=sys.stderr,
              flush=True)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = 60  # an idle keep-alive connection is dropped after this many seconds

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass  # one line per served file is printed by do_GET instead

    def _host_ok(self) -> bool:
        host = (self.headers.get("Host") or "").lower()
        port = self.server.server_address[1]
        names = ("127.0.0.1", "localhost", "[::1]")
        return host in {*names, *(f"{name}:{port}" for name in names)}

    def _cors(self) -> None:
        self.send_header("Access-Control-Allow-Origin", ORIGIN)
        self.send_header("Vary", "Origin")

    def do_OPTIONS(self) -> None:  # noqa: N802 - http.server's naming
        # Preflight (Chrome's Private Network Access asks before a public page reads from 127.0.0.1).
        self.send_response(204)
        self._cors()
        self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
        self.send_header("Access-Control-Allow-Headers", "*")
        self.send_header("Access-Control-Allow-Private-Network", "true")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _open(self) -> tuple[str, Served, BinaryIO] | None:
        """The route, the file and an open handle, or None once an error answer was sent."""
        route = unquote(urlsplit(self.path).path)
        served = self.server.routes.get(route)
        if served is None or not self._host_ok():
            self.send_error(403 if served is not None else 404)
            return None
        try:
            return route, served, open_served(served)
        except _Gone as exc:
            print(f"mlptui: {served.name}: no longer served ({exc})", file=sys.stderr, flush=True)
            self.send_error(410, "the file changed or vanished since the server started")
            return None

    def do_HEAD(self) -> None:  # noqa: N802
        target = self._open()
        if target:
            with target[2] as f:
                self._headers(os.fstat(f.fileno()).st_size)

    def _headers(self, size: int) -> None:
        self.send_response(200)
        self._cors()
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        target = self._open()
        if target is None:
            return
        route, served, f = target
        with f:
            size = os.fstat(f.fileno()).st_size
            self._headers(size)
            sent = 0
            while sent < size:
                chunk = f.read(min(_CHUNK, size - sent))
                if not chunk:
                    break
                self.wfile.write(chunk)
                sent += len(chunk)
        if sent == size:
            print(f"served {served.name} ({size_text(size)})", flush=True)
            self.server.mark_served(route)
        else:
            self.close_connection = True     # the file shrank: the promised length cannot be kept


def port_note(port: int) -> str | None:
    """The line `perfetto` prints when it serves on a port ui.perfetto.dev will not fetch from."""
    if port == DEFAULT_PORT:
        return None
    return (f"note: ui.perfetto.dev fetches ?url= traces only from 127.0.0.1:{DEFAULT_PORT} (its Content-Security-"
            f"Policy), so these links will not load from port {port}: use the default --port {DEFAULT_PORT}, or "
            f"forward it: ssh -L {DEFAULT_PORT}:127.0.0.1:{port} HOST, and open the link with {DEFAULT_PORT}")


def _bind(port: int, routes: dict[str, Served], max_connections: int) -> _Server:
    try:
        return _Server(port, routes, max_connections)
    except OSError as exc:
        if exc.errno in (98, 48):  # EADDRINUSE on Linux, macOS
            raise MlptuiError(f"port {port} on 127.0.0.1 is in use; pick another with --port") from None
        raise MlptuiError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port < 65536:
        raise MlptuiError(f"--port {args.port}: not a port number")
    if not 1 <= args.max_connections <= 10_000:
        raise MlptuiError(f"--max-connections {args.max_connections}: from 1 to 10000")
    paths = [_local_copy(spec) for spec in args.files]
    routes = {route: Served.of(path) for route, path in url_names(paths).items()}
    server = _bind(args.port, routes, args.max_connections)
    port = server.server_address[1]
    with server:
        for route in routes:
            print(perfetto_url(port, route), flush=True)
        note = port_note(port)
        if note is not None:
            print(note, file=sys.stderr, flush=True)
        host = socket.gethostname()
        print(f"Open the URL above in a browser on this machine. From another machine, forward the port "
              f"first: ssh -L {port}:127.0.0.1:{port} {host}", flush=True)
        print("Stops after each file was fetched once" + (" (--keep: Ctrl-C stops)" if args.keep else
              "; Ctrl-C stops sooner"), flush=True)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        thread.start()
        try:
            while not (server.all_served.wait(0.5) and not args.keep):
                pass
        except KeyboardInterrupt:
            print("stopped", flush=True)
        finally:
            server.shutdown()
    return 0
