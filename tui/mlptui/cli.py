"""Command-line entry point. Subcommands are imported only when chosen, so `mlptui summary`
never pays for (or needs) textual or torch."""

from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import version
from typing import Protocol

# name -> one-line help; command_module(name) imports the module that runs it
COMMANDS: dict[str, str] = {
    "view": "open traces (files, folders, host:path, hf://) in the explorer",
    "summary": "headless report of one trace (text, --json, --md)",
    "diff": "headless diff of two traces (text, --json, --md)",
    "check": "guess first, then look: check expectations against a trace (exit 1 on a mismatch)",
    "run": "profile a workload on the GPU and write a trace + manifest",
    "bench": "unprofiled timings of every mode of a workload",
    "push": "upload traces to the Hugging Face Hub and print Perfetto links",
    "perfetto": "serve a trace to ui.perfetto.dev from 127.0.0.1",
    "serve": "run the explorer in a browser (textual-serve, 127.0.0.1)",
    "cache": "show or clear the caches (indexes of opened traces, copies of remote ones)",
    "mcp": "serve the reports to coding agents: a Model Context Protocol server on stdio",
}


# Commands that run PyTorch workloads: the environment their libraries see is left as the user set it.
_TORCH_COMMANDS = frozenset({"run", "bench"})


class Command(Protocol):
    """What each command module defines."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...
    def run(self, args: argparse.Namespace) -> int: ...


def command_module(name: str) -> Command:
    """The module of command `name` (a key of COMMANDS), imported only now."""
    if name == "view":
        from mlptui.commands import view
        return view
    if name == "summary":
        from mlptui.commands import summary
        return summary
    if name == "diff":
        from mlptui.commands import diff
        return diff
    if name == "check":
        from mlptui.commands import check
        return check
    if name == "run":
        from mlptui.runners.cli import run
        return run
    if name == "bench":
        from mlptui.runners.cli import bench
        return bench
    if name == "push":
        from mlptui.commands import push
        return push
    if name == "perfetto":
        from mlptui.commands import perfetto
        return perfetto
    if name == "serve":
        from mlptui.commands import serve
        return serve
    if name == "cache":
        from mlptui.commands import cache
        return cache
    if name == "mcp":
        from mlptui.commands import mcp
        return mcp
    raise KeyError(name)


def _usage() -> str:
    width = max(len(n) for n in COMMANDS)
    lines = [
        f"mlptui {version('mlptui')}: profile PyTorch on the GPU and explore the traces in a terminal",
        "",
        "usage: mlptui [COMMAND] [ARGS...]     (no command: open the bundled sample traces)",
        "",
        "commands:",
    ]
    lines += [f"  {name:<{width}}  {help_}" for name, help_ in COMMANDS.items()]
    lines += ["", "`mlptui COMMAND --help` shows a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if argv and argv[0] == "--version":
        print(f"mlptui {version('mlptui')}")
        return 0
    name = argv.pop(0) if argv and not argv[0].startswith("-") else "view"
    if name not in COMMANDS:
        print(f"mlptui: unknown command {name!r} (try `mlptui --help`)", file=sys.stderr)
        return 2
    from mlptui.base.errors import MlptuiError

    if name not in _TORCH_COMMANDS:
        # numpy's OpenBLAS starts a thread per core at import, CPU time every process pays, and no mlptui
        # analysis multiplies matrices; a value the user set is kept.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        module = command_module(name)
        parser = argparse.ArgumentParser(prog=f"mlptui {name}", description=COMMANDS[name])
        module.add_arguments(parser)
        args = parser.parse_args(argv)
        _warn_about_settings()
        return int(module.run(args) or 0)
    except MlptuiError as exc:
        _error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        print("mlptui: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except RecursionError:
        _error("input nested too deeply to process (set MLPTUI_DEBUG=1 for a traceback)")
        return 2
    except MemoryError:
        _error("out of memory (set MLPTUI_DEBUG=1 for a traceback)")
        return 2
    except Exception as exc:
        # The one boundary: whatever went wrong inside loading, indexing, summarising or rendering is
        # one line and exit code 2, never a traceback (MLPTUI_DEBUG=1 shows it, for a bug report).
        if os.environ.get("MLPTUI_DEBUG"):
            raise
        _error(f"internal error in `mlptui {name}`: {type(exc).__name__}: {exc} (set MLPTUI_DEBUG=1 for a traceback)")
        return 2


def _warn_about_settings() -> None:
    """A setting that is set but refused is said before the command runs (it then runs with the default)."""
    from mlptui.base.settings import setting_problems

    for problem in setting_problems():
        print(f"mlptui: warning: {problem}", file=sys.stderr)


def _error(message: str) -> None:
    """One line on stderr, terminal-safe (a file name or a remote's answer may hold anything)."""
    from mlptui.base.text import printable

    print(f"mlptui: {printable(message)}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
