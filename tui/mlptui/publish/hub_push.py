"""Publish a folder of traces to the Hugging Face Hub (a bucket or a dataset repo) and link each file to
ui.perfetto.dev. Planning (which files, which URLs) is pure and needs no network, so the dry run is exact.

Only trace files and manifest.json files are sent. Nothing remote is ever deleted; a bucket file that
already exists with different content is replaced only with `overwrite=True` (buckets keep no history,
dataset repos do). The folder's manifest.json gains a top-level "published" map (file -> URLs), written
atomically after the upload succeeded; the copy sent to the Hub merges the remote manifest's runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from mlptui.base.errors import MlptuiError
from mlptui.base.text import printable
from mlptui.base.units import size as size_text
from mlptui.contract.manifest import Manifest, update_manifest
from mlptui.contract.manifest import read_manifest as read_folder_manifest
from mlptui.sources.hub import MANIFEST, hub_errors, require_buckets
from mlptui.sources.hub_spec import HubSpec, hub_endpoint, perfetto_url, resolve_url
from mlptui.trace.parse.discover import is_trace_name, looks_like_trace

PRIVATE_NOTE = (
    "note: {target} is private: Perfetto cannot fetch these URLs without a token. Open them with "
    "`mlptui view {target}/`, or make it public on the Hub."
)


@dataclass(frozen=True)
class PlannedFile:
    local: Path
    path_in_repo: str  # where it goes (prefix + path relative to the folder)
    rel: str  # path relative to the pushed folder, the key of the manifest's "published" map
    size: int
    url: str  # public resolve URL
    perfetto: str


@dataclass(frozen=True)
class PushPlan:
    folder: Path
    target: HubSpec  # kind "bucket" or "dataset"/"model"/"space"; path = prefix inside it
    traces: list[PlannedFile]
    manifests: list[PlannedFile]  # manifest.json files; the folder's own (if any) is rewritten on push
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path in the folder, why it is not sent)


# --- what to send -----------------------------------------------------------------------------------

def collect(folder: Path) -> tuple[list[Path], list[Path], list[tuple[Path, str]]]:
    """(trace files, manifest.json files, skipped files with the reason) under `folder`, recursively,
    sorted; dot-folders skipped. A symlink that leads out of the folder is never followed (it could
    publish any file of the machine), and a file is sent as a trace only when its bytes are one."""
    traces: list[Path] = []
    manifests: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    root = folder.resolve()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if name != MANIFEST and not is_trace_name(name):
                continue
            if p.is_symlink() and not p.resolve().is_relative_to(root):
                skipped.append((p, "a symlink to a file outside the folder"))
            elif not p.is_file():
                skipped.append((p, "not a regular file"))
            elif name == MANIFEST:
                manifests.append(p)
            elif looks_like_trace(p, trust_name=False):
                traces.append(p)
            elif name.lower().endswith((".pt.trace.json", ".pt.trace.json.gz")):
                skipped.append((p, "named like a trace, but its content is not a profiler trace"))
    return traces, manifests, skipped


def plan_push(folder: str | os.PathLike[str], target: HubSpec, endpoint: str | None = None) -> PushPlan:
    """Which files go where, with their public and Perfetto URLs. No network."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise MlptuiError(f"{folder}: not a folder")
    traces, manifests, skipped = collect(root)
    if not traces:
        raise MlptuiError(f"{folder}: no trace files (*.pt.trace.json[.gz], *.json[.gz]) to push")

    def planned(p: Path) -> PlannedFile:
        rel = p.relative_to(root).as_posix()
        dest = f"{target.path}/{rel}" if target.path else rel
        url = resolve_url(target.with_path(dest), endpoint)
        return PlannedFile(p, dest, rel, p.stat().st_size, url, perfetto_url(url))

    return PushPlan(root, target, [planned(p) for p in traces], [planned(p) for p in manifests],
                    [(p.relative_to(root).as_posix(), why) for p, why in skipped])


# --- manifest ---------------------------------------------------------------------------------------

def read_manifest(path: Path) -> dict[str, Any]:
    """The folder's manifest as a dict (a new empty one when there is none); one that is unusable is an
    error, so it is never clobbered."""
    m = read_folder_manifest(path.parent)
    out: dict[str, Any] = {**m.extra, "mlptui_manifest": m.mlptui_manifest, "runs": m.runs}
    if m.published is not None:
        out["published"] = m.published
    return out


def with_published(manifest: dict[str, Any], plan: PushPlan, private: bool | None, when: str) -> dict[str, Any]:
    """A copy of `manifest` whose "published" map holds this push's URLs (other keys and entries kept)."""
    out = dict(manifest)
    published = dict(out.get("published") or {})
    for f in plan.traces:
        published[f.rel] = {
            "url": f.url,
            "perfetto": f.perfetto,
            "hf": plan.target.with_path(f.path_in_repo).uri(),
            "private": private,
            "published_at": when,
        }
    out["published"] = published
    return out


def merge_remote(local: dict[str, Any], remote: dict[str, Any] | None) -> dict[str, Any]:
    """The manifest to upload: the remote one's runs and published entries, updated by ours (none dropped)."""
    if not remote:
        return local
    out = {**remote, **local}
    runs = {r.get("trace"): r for r in remote.get("runs") or [] if isinstance(r, dict)}
    runs.update({r.get("trace"): r for r in local.get("runs") or [] if isinstance(r, dict)})
    out["runs"] = list(runs.values())
    out["published"] = {**(remote.get("published") or {}), **(local.get("published") or {})}
    return out


def save_published(folder: Path, manifest: dict[str, Any]) -> None:
    """Record this push's links in the folder's manifest, under its lock (runs written meanwhile are kept)."""
    def change(m: Manifest) -> None:
        m.published = {**(m.published or {}), **(manifest.get("published") or {})}
    update_manifest(folder, change)


def _dumps(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2) + "\n").encode()


# --- output -----------------------------------------------------------------------------------------

def print_links(plan: PushPlan, out: TextIO) -> None:
    """One line per trace: `<file>  <Perfetto URL>` (the file as it is named inside the pushed folder)."""
    for f in plan.traces:
        print(f"{printable(f.rel)}  {f.perfetto}", file=out)


def print_skipped(plan: PushPlan, err: TextIO) -> None:
    """What the folder holds that is not sent, and why (a symlink out of it, a file that is no trace)."""
    for rel, why in plan.skipped:
        print(f"skipped {printable(rel)}: {why}", file=err)


def describe_dry_run(plan: PushPlan, out: TextIO, err: TextIO) -> None:
    total = sum(f.size for f in plan.traces + plan.manifests)
    print(f"dry run: would upload {len(plan.traces)} trace(s) and {len(plan.manifests) or 1} manifest(s), "
          f"{size_text(total)}, to {plan.target.uri()}/ (nothing is sent, nothing deleted, manifest unchanged)",
          file=err)
    own = plan.folder / MANIFEST
    print_skipped(plan, err)
    for f in plan.traces + plan.manifests:
        print(f"  {printable(f.rel)}  ->  {plan.target.with_path(f.path_in_repo).uri()}  ({size_text(f.size)})", file=err)
    if not own.exists():
        print(f"  {MANIFEST} (new, with the links)  ->  {plan.target.with_path(_manifest_dest(plan)).uri()}",
              file=err)
    print_links(plan, out)


def _manifest_dest(plan: PushPlan) -> str:
    return f"{plan.target.path}/{MANIFEST}" if plan.target.path else MANIFEST


# --- the upload -------------------------------------------------------------------------------------

@dataclass
class PushOptions:
    token: str | None = None
    private: bool | None = None  # only used when the repo or bucket is created
    overwrite: bool = False
    progress: bool = True


def resolve_token(token: str | None) -> str:
    """The token to write with: --token, else HF_TOKEN or the one `hf auth login` stored."""
    if token:
        return token
    from huggingface_hub import get_token

    found = get_token()
    if not found:
        raise MlptuiError("no Hugging Face token: run `hf auth login`, set HF_TOKEN, or pass --token")
    return found


def whoami(token: str) -> str:
    from huggingface_hub import HfApi

    with hub_errors("who am I on the Hub"):
        return str(HfApi(endpoint=hub_endpoint()).whoami(token=token)["name"])


def push(plan: PushPlan, opts: PushOptions, err: TextIO = sys.stderr) -> bool:
    """Upload the plan; return whether the target is private. Raises MlptuiError (one line) on failure,
    leaving the local folder untouched; the local manifest is rewritten only after every upload succeeded."""
    from huggingface_hub import HfApi, constants

    own_path = plan.folder / MANIFEST
    own = read_manifest(own_path)  # a manifest we could not rewrite stops the push before anything is sent
    token = resolve_token(opts.token)
    if constants.HF_HUB_OFFLINE:
        raise MlptuiError("HF_HUB_OFFLINE=1: pushing needs the Hub; unset it, or use --dry-run")
    target = plan.target
    if target.is_bucket:
        require_buckets(target.uri())
    api = HfApi(endpoint=hub_endpoint(), token=token)
    with hub_errors(target.uri()):
        private = _ensure_target(api, target, opts.private, err)
        remote = _remote_manifest(target.with_path(_manifest_dest(plan)))
        when = datetime.now(timezone.utc).isoformat(timespec="seconds")
        local_manifest = with_published(own, plan, private, when)
        upload_manifest = _dumps(merge_remote(local_manifest, remote))
        others = [m for m in plan.manifests if m.local != own_path]
        if target.is_bucket:
            _push_bucket(api, plan, others, upload_manifest, opts, err)
        else:
            _push_repo(api, plan, others, upload_manifest, opts)
    save_published(plan.folder, local_manifest)
    return private


def _ensure_target(api: Any, target: HubSpec, private: bool | None, err: TextIO) -> bool:
    """Create the bucket or repo if it does not exist yet; return whether it is private."""
    from huggingface_hub import errors

    def info() -> Any:
        return api.bucket_info(target.repo_id) if target.is_bucket else \
            api.repo_info(target.repo_id, repo_type=target.kind)

    try:
        found = info()
    except (errors.BucketNotFoundError, errors.RepositoryNotFoundError):
        try:
            if target.is_bucket:
                api.create_bucket(target.repo_id, private=private, exist_ok=True)
            else:
                api.create_repo(target.repo_id, repo_type=target.kind, private=private, exist_ok=True)
        except errors.HfHubHTTPError as exc:
            if exc.response is None or exc.response.status_code not in (401, 403, 404):
                raise
            raise MlptuiError(f"{target.uri()}: no such {target.kind} on {hub_endpoint()}, and this token may "
                              f"not create it there ({exc.response.status_code})") from None
        is_private = bool(getattr(info(), "private", private))  # an organization may default to private
        print(f"created {'private ' if is_private else ''}{target.kind} {target.repo_id}", file=err)
        return is_private
    is_private = bool(getattr(found, "private", False))
    if private is not None and private != is_private:
        print(f"note: {target.repo_id} already exists and is {'private' if is_private else 'public'}; "
              "--private only applies when it is created", file=err)
    return is_private


def _remote_manifest(spec: HubSpec) -> dict[str, Any] | None:
    """The manifest already on the Hub at the destination, to merge into (None if there is none)."""
    from mlptui.sources.hub import fetch_file

    try:
        path = fetch_file(spec)
    except MlptuiError:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _progress(files: list[PlannedFile], enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=sum(f.size for f in files), unit="B", unit_scale=True, unit_divisor=1024,
                desc=f"push {len(files)} file(s)", disable=None if enabled else True, file=sys.stderr,
                leave=False)


@contextlib.contextmanager
def _quiet_hub_bars() -> Iterator[None]:
    """Our bar is the one bar: silence huggingface_hub's own while we upload."""
    # the package re-exports these lazily, invisibly to the type checker
    from huggingface_hub.utils import (  # type: ignore[attr-defined, unused-ignore]
        are_progress_bars_disabled,
        disable_progress_bars,
        enable_progress_bars,
    )

    was = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not was:
            enable_progress_bars()


def _push_bucket(api: Any, plan: PushPlan, others: list[PlannedFile], manifest: bytes,
                 opts: PushOptions, err: TextIO) -> None:
    """One add per file (a bucket add is atomic per file), traces first, the manifest last."""
    bucket = plan.target.repo_id
    files = plan.traces + others
    existing = {i.path: i.size for i in api.get_bucket_paths_info(bucket, [f.path_in_repo for f in files])}
    changed = [f for f in plan.traces if f.path_in_repo in existing and existing[f.path_in_repo] != f.size]
    if changed and not opts.overwrite:
        names = ", ".join(f.rel for f in changed[:3]) + (" …" if len(changed) > 3 else "")
        raise MlptuiError(f"{len(changed)} trace(s) already in {plan.target.uri()} with other content ({names}); "
                          "buckets keep no history: pass --overwrite to replace them, or push under --prefix")
    todo = [f for f in files if existing.get(f.path_in_repo) != f.size]
    skipped = len(files) - len(todo)
    if skipped:
        print(f"{skipped} file(s) already in the bucket with the same size: not sent again", file=err)
    with _quiet_hub_bars(), _progress(todo, opts.progress) as bar:
        for f in todo:
            api.batch_bucket_files(bucket, add=[(str(f.local), f.path_in_repo)])
            bar.update(f.size)
        api.batch_bucket_files(bucket, add=[(manifest, _manifest_dest(plan))])


def _push_repo(api: Any, plan: PushPlan, others: list[PlannedFile], manifest: bytes,
               opts: PushOptions) -> None:
    """Pre-upload file by file (the progress bar), then one commit: all files appear together or none do."""
    from huggingface_hub import CommitOperationAdd

    target = plan.target
    files = plan.traces + others
    ops = [CommitOperationAdd(path_in_repo=f.path_in_repo, path_or_fileobj=str(f.local)) for f in files]
    with _quiet_hub_bars(), _progress(files, opts.progress) as bar:
        for f, op in zip(files, ops, strict=True):
            api.preupload_lfs_files(target.repo_id, additions=[op], repo_type=target.kind, free_memory=False)
            bar.update(f.size)
    ops.append(CommitOperationAdd(path_in_repo=_manifest_dest(plan), path_or_fileobj=manifest))
    api.create_commit(target.repo_id, operations=ops, repo_type=target.kind,
                      commit_message=f"mlptui push: {len(plan.traces)} trace(s)")


def links_message(private: bool, target: HubSpec) -> str | None:
    return PRIVATE_NOTE.format(target=target.uri()) if private else None


def run_push(plan: PushPlan, opts: PushOptions, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> bool:
    """Push, then print the links (stdout) and the private-repo note (stderr)."""
    print_skipped(plan, err)
    private = push(plan, opts, err)
    print(f"pushed {len(plan.traces)} trace(s) to {plan.target.uri()}/; links in {plan.folder / MANIFEST}",
          file=err)
    print_links(plan, out)
    note = links_message(private, plan.target)
    if note:
        print(note, file=err)
    return private
