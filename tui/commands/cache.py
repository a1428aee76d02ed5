"""`mlptui cache [show|clear]`: where the index cache is, what it holds against its cap, and emptying it."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=("show", "clear"), default="show",
                        help="show (default): folder, entries and size against the cap; clear: delete every entry")


def run(args: argparse.Namespace) -> int:
    from mlptui.base.units import size
    from mlptui.trace.parse import cache_folder, index_cache

    folder = index_cache.cache_dir()
    if args.action == "clear":
        files, freed = cache_folder.clear(folder)
        print(f"removed {files} file(s), {size(freed)}, from {folder}")
        return 0
    groups = cache_folder.usage(folder)
    total = sum(g.bytes for g in groups)
    state = "" if index_cache.enabled() else " (off: MLPTUI_NO_CACHE is set)"
    print(f"index cache: {folder}{state}")
    print(f"{len(groups)} trace(s), {sum(len(g.files) for g in groups)} file(s), {size(total)} of a "
          f"{size(cache_folder.cap_bytes())} cap (MLPTUI_CACHE_MAX_MB; least recently used entries go first)")
    return 0
