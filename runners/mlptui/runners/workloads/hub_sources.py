"""What the Hub-backed kernel sources share: a source that does not apply (`Unavailable`), the environment
one `kernels.get_kernel` call runs in (`hub_env`), and the walk down a fallback chain (`first_source`).
`liger_source` (Liger's GeGLU MLP) and `attention.flash_source` (FlashAttention) are two such chains."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from typing import TypeVar


class Unavailable(Exception):
    """A source that does not apply here (not configured, not installed); the message says why."""


def one_line(exc: BaseException, limit: int = 200) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


@contextlib.contextmanager
def hub_env(*, offline: bool, local_kernels: str | None) -> Iterator[None]:
    """Set HF_HUB_OFFLINE and LOCAL_KERNELS for one `get_kernel` call, then put them back.
    `kernels` reads huggingface_hub.constants.HF_HUB_OFFLINE (fixed at import), so that is set too."""
    from huggingface_hub import constants

    saved_env = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "LOCAL_KERNELS")}
    saved_const = constants.HF_HUB_OFFLINE
    kernels_log = logging.getLogger("kernels")
    saved_level = kernels_log.level
    try:
        os.environ["HF_HUB_OFFLINE"] = "1" if offline else "0"
        if local_kernels is None:
            os.environ.pop("LOCAL_KERNELS", None)
        else:
            os.environ["LOCAL_KERNELS"] = local_kernels
        constants.HF_HUB_OFFLINE = offline
        kernels_log.setLevel(logging.ERROR)  # "skipping trust check in offline mode" is expected here
        yield
    finally:
        constants.HF_HUB_OFFLINE = saved_const
        kernels_log.setLevel(saved_level)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def env_offline() -> bool:
    """HF_HUB_OFFLINE set as huggingface_hub reads it: the Hub step is then not tried at all."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def local_kernels_entry(value: str | None, repo_id: str) -> str | None:
    """The LOCAL_KERNELS path given for `repo_id` ("repo=path:repo=path"), or None."""
    for entry in (value or "").split(":"):
        repo, sep, path = entry.partition("=")
        if sep and repo == repo_id and path:
            return path
    return None


T = TypeVar("T")


def first_source(chain: tuple[tuple[str, Callable[[], tuple[T, str]]], ...],
                 width: int = 200) -> tuple[tuple[T, str] | None, tuple[str, ...]]:
    """Try each (name, step) of a fallback chain in order: the first step's (value, source) and what was
    tried before it ("name: reason"), or None and every reason where no step loaded."""
    tried: list[str] = []
    for name, step in chain:
        try:
            return step(), tuple(tried)
        except Exception as exc:  # any failure of one source moves on to the next
            tried.append(f"{name}: {one_line(exc, width)}")
    return None, tuple(tried)
