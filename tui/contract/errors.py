"""The one error type users see: its message is a single line, printed without a traceback."""


class MlptuiError(Exception):
    """A problem the user can act on (bad file, bad flag, unreachable host); exit code 2."""

    exit_code = 2


class TraceError(MlptuiError):
    """A file that cannot be read as a trace; the message says what is wrong and where."""
