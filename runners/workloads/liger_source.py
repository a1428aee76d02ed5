"""Where Liger's GeGLU MLP comes from. The real path is the Hub through `kernels`; machines without the
Hub fall back, in order, to the Hugging Face cache (offline), a LOCAL_KERNELS checkout, and the
`liger-kernel` wheel (the same Triton kernel, packaged for pip). Each run records which one ran and
why the ones before it did not."""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from mlptui.base.errors import MlptuiError

REPO_ID = "kernels-community/liger-kernels"
REPO_VERSION = 1  # later versions of the repo have no LigerGEGLUMLP constructor


class Unavailable(Exception):
    """A source that does not apply here (not configured, not installed); the message says why."""


@dataclass(frozen=True)
class Found:
    cls: type
    source: str  # e.g. "hub kernels-community/liger-kernels v1 (/path)" or "liger-kernel wheel 0.8.5"
    tried: tuple[str, ...]  # "step: reason" for each source tried before it


def one_line(exc: BaseException, limit: int = 200) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


@contextlib.contextmanager
def _hub_env(*, offline: bool, local_kernels: str | None) -> Iterator[None]:
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


def _get_kernel_class() -> tuple[type, str]:
    try:
        import kernels
    except ImportError as exc:
        raise Unavailable(f"the `kernels` package is not installed ({one_line(exc)})") from exc
    module = kernels.get_kernel(REPO_ID, version=REPO_VERSION)
    cls = getattr(getattr(module, "layers", None), "LigerGEGLUMLP", None)
    if cls is None:
        raise Unavailable(f"{REPO_ID} v{REPO_VERSION} has no layers.LigerGEGLUMLP")
    return cls, os.path.dirname(os.path.abspath(module.__file__ or ""))


def _env_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def from_hub() -> tuple[type, str]:
    if _env_offline():
        raise Unavailable("HF_HUB_OFFLINE is set")
    with _hub_env(offline=False, local_kernels=None):
        cls, where = _get_kernel_class()
    return cls, f"hub {REPO_ID} v{REPO_VERSION} ({where})"


def from_hf_cache() -> tuple[type, str]:
    with _hub_env(offline=True, local_kernels=None):
        cls, where = _get_kernel_class()
    return cls, f"hf-cache {REPO_ID} v{REPO_VERSION} ({where})"


def local_kernels_entry(value: str | None) -> str | None:
    """The LOCAL_KERNELS path given for REPO_ID ("repo=path:repo=path"), or None."""
    for entry in (value or "").split(":"):
        repo, sep, path = entry.partition("=")
        if sep and repo == REPO_ID and path:
            return path
    return None


def from_local_kernels() -> tuple[type, str]:
    value = os.environ.get("LOCAL_KERNELS")
    if not value:
        raise Unavailable("LOCAL_KERNELS is not set")
    path = local_kernels_entry(value)
    if path is None:
        raise Unavailable(f"LOCAL_KERNELS has no entry for {REPO_ID}")
    with _hub_env(offline=True, local_kernels=value):
        cls, where = _get_kernel_class()
    return cls, f"LOCAL_KERNELS {REPO_ID}={path} ({where})"


def from_wheel() -> tuple[type, str]:
    try:
        from liger_kernel.transformers import LigerGEGLUMLP
    except ImportError as exc:
        raise Unavailable(f"the liger-kernel wheel is not installed ({one_line(exc)})") from exc
    return LigerGEGLUMLP, f"liger-kernel wheel {importlib.metadata.version('liger-kernel')}"


CHAIN: tuple[tuple[str, Callable[[], tuple[type, str]]], ...] = (
    ("hub", from_hub),
    ("hf-cache", from_hf_cache),
    ("LOCAL_KERNELS", from_local_kernels),
    ("liger-kernel wheel", from_wheel),
)


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


def load_liger_geglu_mlp() -> Found:
    found, tried = first_source(CHAIN)
    if found is None:
        raise MlptuiError("no LigerGEGLUMLP could be loaded; tried " + "; ".join(tried))
    return Found(found[0], found[1], tried)
