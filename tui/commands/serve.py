"""`mlptui serve [SPEC...] [--port 8000] [--host 127.0.0.1]`: the explorer in a browser (textual-serve).

Each browser tab starts its own `mlptui view SPEC...` process. textual-serve has no login, so the
server binds 127.0.0.1 unless told otherwise (reach it from a laptop with `ssh -L`), and only pages
served by this server may open the app's websocket: the Origin and Host of each request, to any route
(/static/ included, which lists no folders), must be this server's own (another web page in the same
browser, or a DNS-rebinding name, is refused).
"""

from __future__ import annotations

import argparse
import ipaddress
import shlex
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mlptui.base.errors import MlptuiError

if TYPE_CHECKING:
    from aiohttp import web
    from textual_serve.server import Server

DEFAULT_PORT = 8000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("specs", nargs="*", metavar="SPEC",
                        help="what each browser tab opens, as for `mlptui view` (default: the bundled samples)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; anything else lets others run the app as you)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--public-url", default=None,
                        help="the URL the browser uses, when it differs (e.g. ssh -L 9000:127.0.0.1:8000 -> "
                             "http://127.0.0.1:9000)")


def app_command(specs: list[str]) -> str:
    """The shell line textual-serve runs per tab (it uses a shell, so every word is quoted)."""
    argv = [sys.executable, "-m", "mlptui.cli"]
    if specs:
        argv += ["view", "--", *specs] if any(s.startswith("-") for s in specs) else ["view", *specs]
    return shlex.join(argv)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_origins(host: str, port: int, public_url: str | None) -> set[str]:
    names = {host, "127.0.0.1", "localhost"} if is_loopback(host) else {host}
    origins = {f"http://{name}:{port}" for name in names}
    if public_url:
        u = urlsplit(public_url)
        origins.add(f"{u.scheme}://{u.netloc}")
    return origins


def make_server(specs: list[str], bind: str, port: int, public_url: str | None) -> Server:
    """A textual-serve Server for `mlptui view SPECS`, listening on `bind`:`port`."""
    from aiohttp import web
    from textual_serve.server import Server

    host = f"[{bind}]" if ":" in bind else bind     # as written inside a URL
    origins = allowed_origins(host, port, public_url)
    hosts = {o.split("://", 1)[1] for o in origins}

    class GuardedServer(Server):
        """textual-serve with the Host/Origin checks a login-less local server needs."""

        def _check(self, request: web.Request, need_origin: bool) -> None:
            if request.host not in hosts:
                raise web.HTTPForbidden(text="unexpected Host header")
            origin = request.headers.get("Origin")
            if (need_origin or origin is not None) and origin not in origins:
                raise web.HTTPForbidden(text="websocket from another site refused")

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            statics = Path(self.statics_path).resolve()

            @web.middleware
            async def guard(request: web.Request,
                            handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
                # Every route, /static/ and /download/ included, answers only this server's own pages.
                self._check(request, need_origin=request.path == "/ws")
                if request.path.startswith("/static"):
                    target = (statics / request.path[len("/static"):].lstrip("/")).resolve()
                    if target.is_dir() or not target.is_relative_to(statics):
                        raise web.HTTPNotFound()      # no folder listings
                return await handler(request)

            app.middlewares.append(guard)
            return app

    return GuardedServer(app_command(specs), host=bind, port=port, title="mlptui",
                         public_url=public_url or f"http://{host}:{port}")


def run(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise MlptuiError(f"--port {args.port}: not a port number")
    bind = args.host.strip("[]")
    if not is_loopback(bind):
        print(f"warning: listening on {bind}: anyone who can reach it can run the explorer as you "
              "(there is no login); prefer 127.0.0.1 and ssh -L", file=sys.stderr)
    server = make_server(args.specs, bind, args.port, args.public_url)
    print(f"From another machine: ssh -L {args.port}:127.0.0.1:{args.port} {socket.gethostname()}, "
          f"then open {server.public_url}", flush=True)
    try:
        server.serve()
    except OSError as exc:
        raise MlptuiError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return 0
