"""`mlptui perfetto FILE... [--port 9001] [--keep]`: hand traces to ui.perfetto.dev from 127.0.0.1.

ui.perfetto.dev loads `#!/?url=...` with a fetch from the browser, so the file must be served over
HTTP with `Access-Control-Allow-Origin: https://ui.perfetto.dev`. The server binds 127.0.0.1 only,
answers exactly the given files (nothing else on disk is reachable), refuses requests whose Host is
not loopback (a guard against DNS rebinding), and stops once every file was served (or on Ctrl-C;
`--keep` serves until Ctrl-C). Remote specs (host:path, ssh://, hf://) are fetched to the local
cache first, so no port forwarding is needed for them.
"""

from __future__ import annotations

import argparse
import http.server
import os
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from mlptui.contract.errors import MlptuiError

ORIGIN = "https://ui.perfetto.dev"
DEFAULT_PORT = 9001
_CHUNK = 1 << 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="trace file(s): local path, host:path, ssh://... or hf://...")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)")
    parser.add_argument("--keep", action="store_true", help="keep serving after each file was fetched once")


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


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, routes: dict[str, Path]) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.routes = routes
        self.served: set[str] = set()
        self.all_served = threading.Event()

    def mark_served(self, route: str) -> None:
        self.served.add(route)
        if len(self.served) == len(self.routes):
            self.all_served.set()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = 60  # an idle keep-alive connection is dropped after this many seconds

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass  # one line per served file is printed by do_GET instead

    def _host_ok(self) -> bool:
        host = (self.headers.get("Host") or "").lower()
        port = self.server.server_address[1]
        return host in {f"127.0.0.1:{port}", f"localhost:{port}", "127.0.0.1", "localhost"}

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

    def _target(self) -> tuple[str, Path] | None:
        route = unquote(urlsplit(self.path).path)
        path = self.server.routes.get(route)
        if path is None or not self._host_ok():
            self.send_error(403 if path is not None else 404)
            return None
        return route, path

    def do_HEAD(self) -> None:  # noqa: N802
        target = self._target()
        if target:
            self._headers(target[1].stat().st_size)

    def _headers(self, size: int) -> None:
        self.send_response(200)
        self._cors()
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        target = self._target()
        if target is None:
            return
        route, path = target
        with open(path, "rb") as f:
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
            print(f"served {path.name} ({_human(size)})", flush=True)
            self.server.mark_served(route)


def _human(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.1f} kB"


def _bind(port: int, routes: dict[str, Path]) -> _Server:
    try:
        return _Server(port, routes)
    except OSError as exc:
        if exc.errno in (98, 48):  # EADDRINUSE on Linux, macOS
            raise MlptuiError(f"port {port} on 127.0.0.1 is in use; pick another with --port") from None
        raise MlptuiError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port < 65536:
        raise MlptuiError(f"--port {args.port}: not a port number")
    paths = [_local_copy(spec) for spec in args.files]
    routes = url_names(paths)
    server = _bind(args.port, routes)
    port = server.server_address[1]
    with server:
        for route in routes:
            print(perfetto_url(port, route), flush=True)
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
