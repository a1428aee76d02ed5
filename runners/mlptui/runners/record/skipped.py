"""A run that cannot happen on this machine or torch build (an SDPA backend it lacks, a kernel source it
cannot reach): one line, and the run is skipped rather than failed."""

from __future__ import annotations

from mlptui.base.errors import MlptuiError


class Skipped(MlptuiError):
    """The workload does not apply here; the message says why in one line. Exit code 0: nothing failed."""

    exit_code = 0
