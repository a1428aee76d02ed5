"""Traces on the Hugging Face Hub (`hf://` specs): open, list, tell folders from files.

Repos (datasets, models, spaces) are read with `hf_hub_download`, so files land in the Hub cache and
`HF_HUB_OFFLINE=1` (or a Hub that cannot be reached) reads them back from there. Buckets are not
versioned and have no Hub cache of their own: a bucket file is fetched from its public resolve URL and
kept under HF_HOME/mlptui/buckets, content-addressed by its xet hash, with the same offline fallback.
huggingface_hub is imported inside functions only.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlptui.base.errors import MlptuiError
from mlptui.base.progress import Progress
from mlptui.sources.hub_spec import HubSpec, hub_endpoint, parse_hf_spec, resolve_url
from mlptui.trace.parse.discover import is_trace_name

if TYPE_CHECKING:
    from huggingface_hub import BucketFile, BucketFolder, RepoFile, RepoFolder

    from mlptui.trace.model import Trace

MANIFEST = "manifest.json"


# --- errors -----------------------------------------------------------------------------------------

def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


@contextlib.contextmanager
def hub_errors(what: str) -> Iterator[None]:
    """Turn huggingface_hub / network exceptions into one-line MlptuiErrors that say what to do."""
    from huggingface_hub import errors as e

    try:
        yield
    except MlptuiError:
        raise
    except e.GatedRepoError:
        raise MlptuiError(f"{what}: gated repo; accept its terms on the Hub and log in (`hf auth login`)") from None
    except (e.RepositoryNotFoundError, e.BucketNotFoundError):
        raise MlptuiError(
            f"{what}: no such repo or bucket on {hub_endpoint()} (or it is private and your token cannot see it)"
        ) from None
    except e.RevisionNotFoundError:
        raise MlptuiError(f"{what}: no such revision") from None
    except e.LocalEntryNotFoundError:
        raise MlptuiError(
            f"{what}: not in the local Hub cache, and the Hub is "
            + ("off (HF_HUB_OFFLINE=1)" if _offline() else f"unreachable at {hub_endpoint()}")
        ) from None
    except e.EntryNotFoundError:
        raise MlptuiError(f"{what}: no such file on the Hub") from None
    except e.OfflineModeIsEnabled:
        raise MlptuiError(f"{what}: HF_HUB_OFFLINE=1 and this is not in the local cache") from None
    except e.HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else None
        if status == 401:
            raise MlptuiError(f"{what}: the Hub rejected the token (401); run `hf auth login` or pass --token") from None
        if status == 403:
            raise MlptuiError(f"{what}: this token may not write there (403 forbidden)") from None
        raise MlptuiError(f"{what}: the Hub answered {status or 'an error'}: {_first_line(exc)}") from None
    except e.HfUriError as exc:
        raise MlptuiError(f"{what}: {_first_line(exc)}") from None
    except Exception as exc:
        if _is_network_error(exc):
            raise MlptuiError(f"{what}: cannot reach the Hub at {hub_endpoint()} (network down?)") from None
        if isinstance(exc, (OSError, ValueError, RuntimeError)):  # the client's own failures, said in one line
            raise MlptuiError(f"{what}: {_first_line(exc)}") from None
        raise


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _is_network_error(exc: BaseException) -> bool:
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    for module in ("httpx2", "httpx", "requests"):
        try:
            mod = __import__(module)
        except ImportError:
            continue
        base = getattr(mod, "TransportError", None) or getattr(mod, "ConnectionError", None)
        if base is not None and isinstance(exc, base):
            return True
    return False


# --- the three source functions (see mlptui.sources.dispatch) ---------------------------------------------

def is_folder(spec: str) -> bool:
    """By the spelling alone (no network): the root, a trailing "/", or a last part that is not a trace name."""
    s = parse_hf_spec(spec)
    return s.trailing_slash or not is_trace_name(s.name)


def open_trace(spec: str, progress: Progress | None = None) -> Trace:
    from mlptui.trace.parse.load import load_trace

    s = parse_hf_spec(spec)
    if is_folder(spec):
        raise MlptuiError(f"{spec}: is a folder, not a trace file")
    local = fetch_file(s, progress)
    try:
        fetch_file(s.with_path(_sibling(s.path, MANIFEST)))
    except MlptuiError:
        pass  # a trace without a manifest beside it is still a trace
    return load_trace(local, source=spec, progress=progress)    # reads the manifest fetched beside it


def list_traces(spec: str) -> list[str]:
    """Specs of the trace files under the folder `spec` (recursively), from the Hub or, offline, the cache."""
    s = parse_hf_spec(spec)
    paths = _list_paths(s)
    return sorted(s.with_path(p).uri() for p in paths if is_trace_name(p.rsplit("/", 1)[-1]))


def _sibling(path: str, name: str) -> str:
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    return f"{folder}/{name}" if folder else name


# --- fetching one file ------------------------------------------------------------------------------

def fetch_file(s: HubSpec, progress: Progress | None = None) -> Path:
    """A local path holding the file `s`, downloaded into (or found in) the cache. With `progress`, the
    download reports (done, total) bytes to it and draws no bar of its own (the app shows its own)."""
    bar = _forwarding_bar(progress) if progress is not None else None
    with hub_errors(s.uri()):
        return _fetch_bucket_file(s, bar) if s.is_bucket else _fetch_repo_file(s, bar)


def _forwarding_bar(progress: Progress) -> type:
    """A tqdm class that draws nothing and hands the bytes downloaded so far to `progress`."""
    from tqdm import tqdm

    class ForwardingBar(tqdm):  # type: ignore[misc, unused-ignore]  # tqdm ships no type information
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)
            self.done = int(kwargs.get("initial") or 0)
            self.size = int(kwargs.get("total") or 0)

        def update(self, n: float | None = 1) -> bool | None:
            self.done += int(n or 0)
            progress(self.done, max(self.size, self.done))
            return None

    return ForwardingBar


def _fetch_repo_file(s: HubSpec, bar: type | None = None) -> Path:
    from huggingface_hub import hf_hub_download

    return Path(hf_hub_download(s.repo_id, s.path, repo_type=s.kind, revision=s.revision,
                                endpoint=hub_endpoint(), tqdm_class=bar))


def require_buckets(spec: str) -> None:
    """Buckets came late to huggingface_hub: say so plainly when the installed one has no bucket API."""
    import huggingface_hub
    from huggingface_hub import HfApi

    if not all(hasattr(HfApi, m) for m in ("bucket_info", "get_bucket_paths_info", "batch_bucket_files")):
        raise MlptuiError(f"{spec}: huggingface_hub {huggingface_hub.__version__} has no bucket support; "
                          "upgrade it (pip install -U huggingface_hub) or use a dataset repo")


def bucket_cache_dir(bucket_id: str) -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "mlptui" / "buckets" / bucket_id.replace("/", "--")


def _fetch_bucket_file(s: HubSpec, bar: type | None = None) -> Path:
    from huggingface_hub import HfApi

    root = bucket_cache_dir(s.repo_id)
    link = root / "paths" / s.path
    require_buckets(s.uri())
    if _offline():
        if link.exists():
            return link
        raise MlptuiError(f"{s.uri()}: HF_HUB_OFFLINE=1 and this bucket file is not in the local cache")
    api = HfApi(endpoint=hub_endpoint())
    try:
        _probe(api, s)
    except Exception as exc:
        if _is_network_error(exc) and link.exists():
            return link  # the Hub is unreachable: the cached copy is the best we have
        raise
    infos = list(api.get_bucket_paths_info(s.repo_id, [s.path]))
    if not infos:
        raise MlptuiError(f"{s.uri()}: no such file in the bucket")
    info = infos[0]
    blob = root / "blobs" / info.xet_hash
    if not (blob.exists() and blob.stat().st_size == info.size):
        _download(resolve_url(s), blob, info.size, bar)
    _point(link, blob)
    return link


def _download(url: str, dest: Path, size: int, bar: type | None = None) -> None:
    """GET `url` into `dest` atomically (temp file in the same folder, then os.replace)."""
    # huggingface_hub.utils re-exports build_hf_headers lazily, invisibly to the type checker
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined, unused-ignore]

    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".incomplete-")
    try:
        with os.fdopen(fd, "wb") as f:
            http_get(url, f, headers=build_hf_headers(), expected_size=size, displayed_filename=dest.name,
                     _tqdm_bar=bar(total=size) if bar is not None else None)
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _point(link: Path, blob: Path) -> None:
    """Make `link` a relative symlink to `blob`, replacing an older one atomically."""
    link.parent.mkdir(parents=True, exist_ok=True)
    target = os.path.relpath(blob, link.parent)
    if link.is_symlink() and os.readlink(link) == target:
        return
    tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, link)


# --- listing a folder -------------------------------------------------------------------------------

def _list_paths(s: HubSpec) -> list[str]:
    """Paths of files under `s.path`, from the Hub; from the cache when offline or unreachable."""
    with hub_errors(s.uri()):
        if not _offline():
            try:
                return _list_remote(s)
            except Exception as exc:
                if not _is_network_error(exc):
                    raise
        cached = _list_cached(s)
        if cached is None:
            raise MlptuiError(
                f"{s.uri()}: not in the local Hub cache, and the Hub is "
                + ("off (HF_HUB_OFFLINE=1)" if _offline() else f"unreachable at {hub_endpoint()}")
            )
        return cached


def _probe(api: Any, s: HubSpec) -> None:
    """One request without retries: fails at once when the Hub is unreachable (the listing and paths-info
    calls retry with backoff for a long while) and says "no such repo or bucket" before anything else."""
    if s.is_bucket:
        api.bucket_info(s.repo_id)
    else:
        api.repo_info(s.repo_id, repo_type=s.kind, revision=s.revision)


def _list_remote(s: HubSpec) -> list[str]:
    from huggingface_hub import HfApi

    if s.is_bucket:
        require_buckets(s.uri())
    api = HfApi(endpoint=hub_endpoint())
    _probe(api, s)
    entries: Iterable[BucketFile | BucketFolder | RepoFile | RepoFolder]
    if s.is_bucket:
        entries = api.list_bucket_tree(s.repo_id, prefix=s.path or None, recursive=True)
    else:
        entries = api.list_repo_tree(s.repo_id, path_in_repo=s.path or None, recursive=True,
                                     repo_type=s.kind, revision=s.revision)
    prefix = f"{s.path}/" if s.path else ""
    return [e.path for e in entries
            if getattr(e, "type", "file") == "file" and hasattr(e, "size") and e.path.startswith(prefix)]


def _list_cached(s: HubSpec) -> list[str] | None:
    """Files under `s.path` in the local cache (None when nothing of that repo or bucket is cached)."""
    root: Path | None
    if s.is_bucket:
        root = bucket_cache_dir(s.repo_id) / "paths"
    else:
        root = _cached_snapshot(s)
    if root is None or not root.is_dir():
        return None
    folder = root / s.path if s.path else root
    if not folder.is_dir():
        return None
    return sorted(p.relative_to(root).as_posix() for p in folder.rglob("*")
                  if p.is_file() and not p.name.startswith("."))


def _cached_snapshot(s: HubSpec) -> Path | None:
    """The snapshot folder of `s`'s revision in the Hub cache, laid out as huggingface_hub writes it."""
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    repo = Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=s.repo_id, repo_type=s.kind)
    revision = s.revision or "main"
    ref = repo / "refs" / revision
    commit = ref.read_text().strip() if ref.is_file() else revision
    snapshot = repo / "snapshots" / commit
    return snapshot if snapshot.is_dir() else None
