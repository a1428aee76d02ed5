"""`mlptui serve [SPEC...] [--port 8000] [--host 127.0.0.1]`: the explorer in a browser (textual-serve).

Each browser tab starts its own `mlptui view SPEC...` process. textual-serve has no login, so:
- the server binds 127.0.0.1 unless told otherwise (reach it from a laptop with `ssh -L`);
- every request must carry this run's token: the URL printed at start holds it (`/?token=…`); the page
  opened with it sets a cookie (HttpOnly, SameSite=Strict, for this port only by its name) that its
  websocket and assets then send. Without the token (another local user or process, a guessed URL) any
  route answers 403 and no app process starts;
- at most --max-sessions tabs run at once (each is a process); one more is refused with 503;
- the Origin and Host of each request, to any route (/static/ included, which lists no folders), must be
  this server's own (another web page in the same browser, or a DNS-rebinding name, is refused);
- a tab's terminal is at most MAX_COLUMNS × MAX_ROWS, and a tab that goes frees its slot within seconds
  (mlptui.commands.serve_session); SIGTERM or Ctrl-C closes every tab and ends the server quietly.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import secrets
import shlex
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mlptui.base.errors import MlptuiError
from mlptui.commands.serve_session import run_tab

if TYPE_CHECKING:
    from aiohttp import web
    from textual_serve.server import Server

DEFAULT_PORT = 8000
DEFAULT_MAX_SESSIONS = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("specs", nargs="*", metavar="SPEC",
                        help="what each browser tab opens, as for `mlptui view` (default: the bundled samples)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; anything else lets others run the app as you)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS, metavar="N",
                        help=f"tabs (app processes) running at once (default {DEFAULT_MAX_SESSIONS})")
    parser.add_argument("--public-url", default=None,
                        help="the URL the browser uses, when it differs (e.g. ssh -L 9000:127.0.0.1:8000 -> "
                             "http://127.0.0.1:9000)")


def app_command(specs: list[str]) -> str:
    """The shell line textual-serve runs per tab (it uses a shell, so every word is quoted). `exec`: the
    app replaces the shell, so the process a tab holds, and kills when its app hangs, is the app itself."""
    argv = [sys.executable, "-m", "mlptui.cli"]
    if specs:
        argv += ["view", "--", *specs] if any(s.startswith("-") for s in specs) else ["view", *specs]
    return "exec " + shlex.join(argv)


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


def new_token() -> str:
    return secrets.token_urlsafe(24)


def token_cookie(port: int) -> str:
    """Cookies are per host, not per port: the name keeps two servers on one machine apart."""
    return f"mlptui_token_{port}"


def make_server(specs: list[str], bind: str, port: int, public_url: str | None, token: str,
                max_sessions: int = DEFAULT_MAX_SESSIONS) -> Server:
    """A textual-serve Server for `mlptui view SPECS`, listening on `bind`:`port`, answering only requests
    that carry `token` and running at most `max_sessions` tabs."""
    from aiohttp import web
    from textual_serve.server import Server

    host = f"[{bind}]" if ":" in bind else bind     # as written inside a URL
    origins = allowed_origins(host, port, public_url)
    hosts = {o.split("://", 1)[1] for o in origins}
    cookie = token_cookie(port)
    sessions = [0]

    class GuardedServer(Server):
        """textual-serve with the Host/Origin checks a login-less local server needs, and tabs whose size
        and lifetime are bounded (mlptui.commands.serve_session)."""

        open_sockets: set[web.WebSocketResponse] = set()

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            return await run_tab(request, self.command, self.download_manager, self.debug, self.open_sockets)

        async def on_shutdown(self, app: web.Application) -> None:
            """SIGTERM or Ctrl-C: every tab is closed (its app quits), so the server ends at once."""
            from aiohttp import WSCloseCode

            for websocket in list(self.open_sockets):
                await websocket.close(code=WSCloseCode.GOING_AWAY, message=b"server stopping")

        def _check(self, request: web.Request, need_origin: bool) -> None:
            if request.host not in hosts:
                raise web.HTTPForbidden(text="unexpected Host header")
            origin = request.headers.get("Origin")
            if (need_origin or origin is not None) and origin not in origins:
                raise web.HTTPForbidden(text="websocket from another site refused")
            given = request.query.get("token") or request.cookies.get(cookie) or ""
            if not hmac.compare_digest(given.encode(), token.encode()):
                raise web.HTTPForbidden(text="this server needs the token in the URL `mlptui serve` printed")

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
                if request.path != "/ws":
                    response = await handler(request)
                    if request.query.get("token"):
                        response.set_cookie(cookie, token, httponly=True, samesite="Strict", path="/")
                    return response
                if sessions[0] >= max_sessions:
                    raise web.HTTPServiceUnavailable(
                        text=f"{max_sessions} sessions already running (mlptui serve --max-sessions)")
                sessions[0] += 1
                try:
                    return await handler(request)
                finally:
                    sessions[0] -= 1

            app.middlewares.append(guard)
            return app

    return GuardedServer(app_command(specs), host=bind, port=port, title="mlptui",
                         public_url=public_url or f"http://{host}:{port}")


def run(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise MlptuiError(f"--port {args.port}: not a port number")
    if args.max_sessions < 1:
        raise MlptuiError(f"--max-sessions {args.max_sessions}: at least 1")
    bind = args.host.strip("[]")
    if not is_loopback(bind):
        print(f"warning: listening on {bind}: anyone who can reach it can run the explorer as you "
              "(there is no login); prefer 127.0.0.1 and ssh -L", file=sys.stderr)
    token = new_token()
    server = make_server(args.specs, bind, args.port, args.public_url, token, args.max_sessions)
    url = f"{server.public_url.rstrip('/')}/?token={token}"
    print(f"Open {url}  (the token is this run's login; at most {args.max_sessions} tabs at once)")
    print(f"From another machine: ssh -L {args.port}:127.0.0.1:{args.port} {socket.gethostname()}, "
          f"then open {url}", flush=True)
    try:
        server.serve()
    except OSError as exc:
        raise MlptuiError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return 0
