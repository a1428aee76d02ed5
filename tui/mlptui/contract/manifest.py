"""The run folder's `manifest.json`: one entry per recorded trace, written by the runners (and by `push`,
which adds the links it published), read by the viewer. Its one reader and one writer live here.

    {"mlptui_manifest": 1, "runs": [{"trace": "<file name>", "workload": ..., "mode": ..., ...}],
     "published": {"<file>": {...}}}      # "published" only after `mlptui push`

Writers update it under a lock (a file in the machine's temporary folder named after the manifest's
absolute path, so run folders hold only traces and their manifest) and replace it atomically, so
concurrent runs into one folder keep every entry and a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlptui.base.errors import MlptuiError, TraceError
from mlptui.base.files import write_atomic
from mlptui.base.regular_file import read_regular
from mlptui.base.values import bounded, narrow_ints

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1
LOCK_TIMEOUT_S = 60.0
MANIFEST_MAX_BYTES = 64 << 20     # far above any real manifest (a run adds ~1 kB); a bigger file is not one

_KNOWN_KEYS = frozenset({"mlptui_manifest", "runs", "published"})
Run = dict[str, Any]   # a run entry: "trace" (its file name) plus the runner's fields, see docs/recording.md


class ManifestError(MlptuiError):
    """A manifest that exists but cannot be used (not JSON, not an mlptui manifest, newer version)."""


@dataclass
class Manifest:
    runs: list[Run] = field(default_factory=list)
    published: dict[str, Any] | None = None
    mlptui_manifest: int = MANIFEST_VERSION
    extra: dict[str, Any] = field(default_factory=dict)   # other top-level keys, kept as found

    def run_for(self, trace_name: str) -> Run | None:
        """The entry whose "trace" is `trace_name`, or None."""
        for run in self.runs:
            if run.get("trace") == trace_name:
                return dict(run)
        return None

    def to_json(self) -> bytes:
        data: dict[str, Any] = {**self.extra, "mlptui_manifest": self.mlptui_manifest, "runs": self.runs}
        if self.published is not None:
            data["published"] = self.published
        try:
            return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        except UnicodeEncodeError:      # a lone surrogate read from an escape: only an ASCII escape keeps it
            return (json.dumps(data, indent=2, ensure_ascii=True) + "\n").encode("ascii")


def manifest_path(folder: str | Path) -> Path:
    return Path(folder) / MANIFEST_NAME


def lock_path(manifest: Path) -> Path:
    """The lock of one manifest: every process on this machine that writes it agrees on this name."""
    key = hashlib.sha256(str(manifest.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    folder = Path(tempfile.gettempdir()) / f"mlptui-{os.getuid() if hasattr(os, 'getuid') else 0}" / "locks"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / f"{key}.lock"


def parse_manifest(data: bytes, where: str) -> Manifest:
    """A manifest from its bytes; entries of `runs` that are not objects are dropped (never fatal)."""
    try:
        raw = json.loads(data)      # stdlib: runners on a GPU box need nothing beyond torch for this
    except (ValueError, RecursionError) as exc:
        raise ManifestError(f"{where} is not valid JSON ({exc})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("runs"), list):
        raise ManifestError(f'{where} is not an mlptui manifest (no "runs" list)')
    version = raw.get("mlptui_manifest", MANIFEST_VERSION)
    if version != MANIFEST_VERSION:
        raise ManifestError(f"{where} has manifest version {version!r}; this mlptui reads {MANIFEST_VERSION}")
    published = raw.get("published")
    return Manifest(runs=[r for r in raw["runs"] if isinstance(r, dict)],
                    published=published if isinstance(published, dict) else None,
                    extra={k: v for k, v in raw.items() if k not in _KNOWN_KEYS})


def read_manifest(folder: str | Path) -> Manifest:
    """The folder's manifest; an empty one when there is none. Raises ManifestError when it exists but
    is unusable (writers must not clobber it)."""
    path = manifest_path(folder)
    try:
        data = read_regular(path, str(path), limit=MANIFEST_MAX_BYTES)
    except TraceError as exc:
        if not os.path.lexists(path):
            return Manifest()
        raise ManifestError(f"cannot read the manifest: {exc}") from None
    return parse_manifest(data, str(path))


def manifest_for(trace_path: str | Path) -> Run | None:
    """The viewer's question: the runner's entry for this trace, or None. A manifest only adds
    context, so a missing or broken one is the same as none."""
    path = Path(trace_path)
    try:
        run = read_manifest(path.parent).run_for(path.name)
    except ManifestError:
        return None
    # a run may hold anything: cut what no writer writes back, and integers no reader reads exactly
    return None if run is None else narrow_ints(bounded(run))


def update_manifest(folder: str | Path, change: Callable[[Manifest], None]) -> Manifest:
    """Read, change in place and write the folder's manifest under its lock; returns what was written."""
    from filelock import FileLock, Timeout  # here: every trace open reads manifests, few write them

    path = manifest_path(folder)
    try:
        with FileLock(str(lock_path(path)), timeout=LOCK_TIMEOUT_S):
            manifest = read_manifest(folder)
            change(manifest)
            manifest.mlptui_manifest = MANIFEST_VERSION
            write_atomic(path, manifest.to_json())
    except Timeout:
        raise ManifestError(f"{path}: another process has held its lock for {LOCK_TIMEOUT_S:.0f} s") from None
    except OSError as exc:
        raise ManifestError(f"{path}: cannot write the manifest ({exc.strerror or exc})") from None
    return manifest


def add_run(folder: str | Path, run: Run) -> None:
    """Merge one run into the folder's manifest (an entry for the same trace file is replaced)."""
    def change(m: Manifest) -> None:
        m.runs = [r for r in m.runs if r.get("trace") != run["trace"]] + [run]
    update_manifest(folder, change)
