"""`mlptui view [PATH [PATH]]`: open traces in the explorer; no path opens the bundled samples.

Local paths are checked before the app starts, so a typo or a file that is not a trace ends with one
line and exit code 2 instead of a full-screen error.
"""

from __future__ import annotations

import argparse
import os
import sys

from mlptui.base.errors import MlptuiError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="*", metavar="PATH",
        help="a trace (.json / .json.gz), a folder of traces, host:path or hf://; two traces open the "
             "diff; none opens the bundled sample traces",
    )


def check_spec(spec: str, *, allow_folder: bool) -> None:
    """Refuse a local path that does not exist or is certainly not a trace (remote specs are checked
    when they are opened)."""
    from mlptui.base.regular_file import open_regular
    from mlptui.sources.dispatch import source_kind
    from mlptui.sources.local import local_path
    from mlptui.trace.parse.discover import (
        find_trace_folders,
        find_traces,
        looks_like_trace,
        no_traces_message,
    )

    if source_kind(spec) != "local":
        return
    path = local_path(spec, missing="no such file or folder")
    if path.is_dir():
        if not allow_folder:
            raise MlptuiError(f"{spec} is a folder: give two trace files to diff, or one folder")
        if not find_traces(path) and not find_trace_folders(path):     # run folders below: a picker over them
            raise MlptuiError(no_traces_message(path, spec))
        return
    f, _ = open_regular(path, spec)          # a FIFO or a device: one line, nothing read
    f.close()
    if not looks_like_trace(path):
        raise MlptuiError(f"{spec} is not a PyTorch profiler trace (Chrome trace JSON, optionally gzipped)")


def run(args: argparse.Namespace) -> int:
    specs: list[str] = list(args.paths)
    if len(specs) > 2:
        raise MlptuiError("view takes one or two traces, or one folder")
    for spec in specs:
        check_spec(spec, allow_folder=len(specs) == 1)
    # Without a terminal (`ssh host mlptui view` lacking -t) the app would spray escape codes forever;
    # an explicit TEXTUAL_DRIVER (textual-serve's web driver) talks over pipes by design.
    if not os.environ.get("TEXTUAL_DRIVER") and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise MlptuiError(
            "view needs a terminal: over ssh use `ssh -t HOST mlptui view ...` (or `mlptui summary` for a report)"
        )
    from mlptui.app import make_app

    app = make_app(specs)
    app.run()
    return int(app.return_code or 0)
