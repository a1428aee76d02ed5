"""`mlptui mcp [--root DIR]`: a Model Context Protocol server over stdio, for coding agents
(docs/agents.md). Needs the `mcp` extra; without it, one line says how to install it."""

from __future__ import annotations

import argparse

from mlptui.base.errors import MlptuiError

NEEDS_EXTRA = "`mlptui mcp` needs the mcp extra: pip install 'mlptui[mcp]' (in a checkout: pip install '.[mcp]')"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", metavar="DIR",
                        help="read only trace files under DIR (others, and host:path or hf://, are refused)")
    parser.add_argument("--max-chars", type=int, default=20_000, metavar="N",
                        help="the most characters of one tool result (default 20000; a longer one is cut and says so)")
    parser.add_argument("--keep", type=int, default=4, metavar="N",
                        help="loaded traces kept in memory, least recently used dropped first (default 4)")


def run(args: argparse.Namespace) -> int:
    if args.max_chars < 2_000:
        raise MlptuiError(f"--max-chars {args.max_chars} is too small to hold a page: give 2000 or more")
    if args.root is not None:
        from pathlib import Path

        if not Path(args.root).is_dir():
            raise MlptuiError(f"--root {args.root}: not a folder")
    try:
        import mcp  # noqa: F401  (only whether the extra is installed)
    except ImportError:
        raise MlptuiError(NEEDS_EXTRA) from None
    from mlptui.api.mcp_server import serve

    serve(args.root, args.keep, args.max_chars)
    return 0
