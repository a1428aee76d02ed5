"""`mlptui cache [show|clear]`: where the index cache and the copies of remote traces are, what they hold
against their caps, and emptying them. A folder that may not be trusted (a link, another user's, writable
by others) is named in one line and left alone: nothing in it, or where it leads, is counted or deleted."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=("show", "clear"), default="show",
                        help="show (default): folders, entries and sizes against the caps; clear: delete every "
                             "entry and every remote copy")


def run(args: argparse.Namespace) -> int:
    from mlptui.base.errors import MlptuiError
    from mlptui.base.private_folder import UnsafeFolder, private_folder, user_cache_base
    from mlptui.base.units import size
    from mlptui.sources import remote_cache
    from mlptui.trace.parse import cache_folder, index_cache

    try:
        folder = private_folder(user_cache_base(), ("mlptui", "index"))
        remote = private_folder(user_cache_base(), ("mlptui", "remote"))
    except UnsafeFolder as exc:
        print(f"mlptui: cache folder not used: {exc}; nothing shown or deleted", file=sys.stderr)
        return MlptuiError.exit_code
    except OSError as exc:
        print(f"mlptui: cannot make the cache folder in {user_cache_base()}: {exc.strerror or exc}", file=sys.stderr)
        return MlptuiError.exit_code
    if args.action == "clear":
        files, freed = cache_folder.clear(folder)
        print(f"removed {files} file(s), {size(freed)}, from {folder}")
        files, freed = remote_cache.clear(remote)
        print(f"removed {files} file(s), {size(freed)}, of remote copies from {remote}")
        return 0
    groups = cache_folder.usage(folder)
    total = sum(g.bytes for g in groups)
    state = "" if index_cache.enabled() else " (off: MLPTUI_NO_CACHE is set)"
    print(f"index cache: {folder}{state}")
    print(f"{len(groups)} trace(s), {sum(len(g.files) for g in groups)} file(s), {size(total)} of a "
          f"{size(cache_folder.cap_bytes())} cap (MLPTUI_CACHE_MAX_MB; least recently used entries go first)")
    copies = remote_cache.usage(remote)
    print(f"remote copies: {remote}")
    print(f"{len(copies)} copy(ies), {sum(c.files for c in copies)} file(s), {size(sum(c.bytes for c in copies))} "
          f"of a {size(remote_cache.cap_bytes())} cap (MLPTUI_REMOTE_CACHE_MAX_MB; least recently opened go first)")
    return 0
