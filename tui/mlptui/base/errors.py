"""The one error type users see: its message is a single line, printed without a traceback."""

from mlptui.base.text import printable


class MlptuiError(Exception):
    """A problem the user can act on (bad file, bad flag, unreachable host); exit code 2.

    Its text is one terminal-safe line whatever it quotes (a file name, a remote's answer): control
    characters, newlines included, are written as escapes."""

    exit_code = 2

    def __str__(self) -> str:
        return printable(super().__str__())


class TraceError(MlptuiError):
    """A file that cannot be read as a trace; the message says what is wrong and where."""
