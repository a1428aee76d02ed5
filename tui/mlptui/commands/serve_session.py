"""One browser tab of `mlptui serve`: its app process, fed from its websocket, with bounds a browser cannot
lift.

- The terminal is at most MAX_COLUMNS × MAX_ROWS, whatever size the page asks for at start or on a
  resize (an app's memory grows with its terminal's cells); a size that is not a number is 80×24.
- When the tab goes (closed, aborted, silent past the heartbeat, or the server stopping), its app is asked
  to quit, and killed after STOP_GRACE_S: its slot is free again within seconds, never held by an app
  that does not answer.
- A message that is not what the page sends (not JSON, not a list, an unknown kind) is ignored.

textual-serve's AppService runs the process and carries its packets; this module only decides what
reaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web
    from textual_serve.app_service import AppService

MAX_COLUMNS = 1000
MAX_ROWS = 400
DEFAULT_SIZE = (80, 24)
STOP_GRACE_S = 5.0
HEARTBEAT_S = 15.0


def bounded_size(width: Any, height: Any) -> tuple[int, int]:
    """A terminal size a page asked for, as whole cells between 1 and MAX_COLUMNS × MAX_ROWS."""
    def cells(value: Any, default: int, most: int) -> int:
        if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 10:
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            return default
        return max(1, min(most, value))
    return cells(width, DEFAULT_SIZE[0], MAX_COLUMNS), cells(height, DEFAULT_SIZE[1], MAX_ROWS)


async def handle_message(service: AppService, websocket: web.WebSocketResponse, text: str) -> None:
    """One text message from the page: keys, a resize, a ping, focus or blur; anything else is ignored."""
    try:
        envelope = json.loads(text)
    except ValueError:
        return
    if not isinstance(envelope, list) or len(envelope) < 1:
        return
    kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
    if kind == "stdin" and isinstance(data, str):
        await service.send_bytes(data.encode("utf-8", "replace"))
    elif kind == "resize" and isinstance(data, dict):
        await service.set_terminal_size(*bounded_size(data.get("width"), data.get("height")))
    elif kind == "ping":
        await websocket.send_json(["pong", data])
    elif kind == "blur":
        await service.blur()
    elif kind == "focus":
        await service.focus()


async def stop_app(service: AppService) -> None:
    """Ask the tab's app to quit; kill it when it has not ended STOP_GRACE_S later. textual-serve's stop
    returns as soon as the tab's output cannot be sent, whether or not the app ended: the process itself
    is waited for."""
    with contextlib.suppress(asyncio.TimeoutError, OSError, RuntimeError):
        await asyncio.wait_for(service.stop(), STOP_GRACE_S)
    process = getattr(service, "_process", None)      # textual-serve keeps the app's process there
    if process is None:
        return
    try:
        await asyncio.wait_for(process.wait(), STOP_GRACE_S)
    except asyncio.TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(process.wait(), STOP_GRACE_S)


async def run_tab(request: web.Request, command: str, download_manager: Any, debug: bool,
                  sockets: set[web.WebSocketResponse]) -> web.WebSocketResponse:
    """The websocket of one tab: start its app at the size asked (bounded), feed it the page's messages,
    and stop it when the tab goes. `sockets` holds the open ones, for the server to close when it stops."""
    from aiohttp import WSMsgType, web
    from textual_serve.app_service import AppService

    websocket = web.WebSocketResponse(heartbeat=HEARTBEAT_S)
    width, height = bounded_size(request.query.get("width"), request.query.get("height"))
    await websocket.prepare(request)

    async def close() -> None:
        await websocket.close()

    service = AppService(command, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                         close=close, download_manager=download_manager, debug=debug)
    sockets.add(websocket)
    try:
        await service.start(width, height)
        async for message in websocket:
            if message.type == WSMsgType.TEXT:
                await handle_message(service, websocket, message.data)
    except ConnectionError:
        pass
    finally:
        sockets.discard(websocket)
        await stop_app(service)
        await websocket.close()
    return websocket
