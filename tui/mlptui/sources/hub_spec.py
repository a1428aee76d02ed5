"""`hf://` specs and the public URLs of files on the Hugging Face Hub. Pure: no network, no imports of
huggingface_hub, so the dry run of `mlptui push` and URL building work anywhere.

    hf://datasets/NS/REPO[@REV][/PATH]     a dataset repo (also hf://NS/REPO = model, hf://spaces/NS/REPO)
    hf://buckets/NS/BUCKET[/PATH]          a bucket (not versioned: no @REV)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from mlptui.base.errors import MlptuiError

HF_PREFIX = "hf://"
DEFAULT_ENDPOINT = "https://huggingface.co"
PERFETTO_UI = "https://ui.perfetto.dev/#!/?url="

# spec prefix -> kind, and kind -> prefix in spec and URL (models have none)
_KINDS: dict[str, str] = {"datasets": "dataset", "buckets": "bucket", "spaces": "space", "models": "model"}
_URL_PREFIX: dict[str, str] = {"dataset": "datasets/", "bucket": "buckets/", "space": "spaces/", "model": ""}
_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*$")
# revisions that contain "/" and are still one revision (the Hub's special refs)
_SPECIAL_REF = re.compile(r"^refs/(?:pr/\d+|convert/[\w.-]+)")

USAGE = "expected hf://datasets/NS/REPO[@REV]/PATH or hf://buckets/NS/BUCKET/PATH"


@dataclass(frozen=True)
class HubSpec:
    """One location on the Hub: a repo or bucket, a revision (repos only) and a path inside it."""

    kind: str  # "dataset" | "model" | "space" | "bucket"
    repo_id: str  # "namespace/name"
    revision: str | None = None
    path: str = ""  # no leading or trailing "/"; "" is the root
    trailing_slash: bool = False  # the user wrote ".../" (a folder)

    @property
    def is_bucket(self) -> bool:
        return self.kind == "bucket"

    @property
    def name(self) -> str:
        """The last component of the path ("" at the root)."""
        return self.path.rsplit("/", 1)[-1]

    def with_path(self, path: str) -> HubSpec:
        return HubSpec(self.kind, self.repo_id, self.revision, path.strip("/"))

    def uri(self) -> str:
        """The canonical spelling: hf://datasets/ns/repo[@rev][/path]."""
        out = f"{HF_PREFIX}{_URL_PREFIX[self.kind] or 'models/'}{self.repo_id}"
        if self.revision is not None:
            rev = self.revision
            if "/" in rev and not _SPECIAL_REF.fullmatch(rev):
                rev = rev.replace("/", "%2F")
            out += f"@{rev}"
        if self.path:
            out += f"/{self.path}"
        return out


def is_hf_spec(spec: str) -> bool:
    return spec.startswith(HF_PREFIX)


def parse_hf_spec(spec: str) -> HubSpec:
    """Parse an `hf://` spec; a malformed one is a one-line MlptuiError that says the expected form."""
    if not is_hf_spec(spec):
        raise MlptuiError(f"{spec}: not an hf:// spec ({USAGE})")
    body = spec[len(HF_PREFIX):]
    trailing = body.endswith("/")
    first, _, rest = body.partition("/")
    kind = _KINDS.get(first)
    if kind is None:
        if first in ("dataset", "bucket", "space", "model"):
            raise MlptuiError(f"{spec}: write {first}s/ (plural) after hf:// ({USAGE})")
        kind, rest = "model", body
    parts = rest.strip("/").split("/", 2)
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise MlptuiError(f"{spec}: missing NS/NAME ({USAGE})")
    namespace, name_rev = parts[0], parts[1]
    tail = parts[2] if len(parts) > 2 else ""
    name, at, rev = name_rev.partition("@")
    revision: str | None = None
    if at:
        if kind == "bucket":
            raise MlptuiError(f"{spec}: buckets have no revisions (drop @{rev})")
        if rev == "refs" and (m := _SPECIAL_REF.match(f"refs/{tail}")):
            revision = m.group()
            tail = tail[len(revision) - len("refs/"):].lstrip("/")
        else:
            revision = unquote(rev)
        if not revision:
            raise MlptuiError(f"{spec}: empty revision after @")
    for part in (namespace, name):
        if not _NAME.match(part):
            raise MlptuiError(f"{spec}: {part!r} is not a valid Hub name ({USAGE})")
    path = tail.strip("/")
    if "//" in path or any(p in (".", "..") for p in path.split("/") if path):
        raise MlptuiError(f"{spec}: bad path inside the repo ({path!r})")
    return HubSpec(kind, f"{namespace}/{name}", revision, path, trailing or not path)


def hub_endpoint() -> str:
    """The Hub's base URL: HF_ENDPOINT when set (a mirror, a private Hub, a local stand-in), else huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "").rstrip("/") or DEFAULT_ENDPOINT


def resolve_url(spec: HubSpec, endpoint: str | None = None) -> str:
    """The public download URL of a file (what a browser, curl or Perfetto fetches)."""
    base = (endpoint or hub_endpoint()).rstrip("/")
    path = quote(spec.path)
    if spec.is_bucket:
        return f"{base}/buckets/{spec.repo_id}/resolve/{path}"
    revision = quote(spec.revision or "main", safe="")
    return f"{base}/{_URL_PREFIX[spec.kind]}{spec.repo_id}/resolve/{revision}/{path}"


def perfetto_url(file_url: str) -> str:
    """A ui.perfetto.dev link that opens the trace at `file_url` (percent-encoded whole, as a query value)."""
    return PERFETTO_UI + quote(file_url, safe="")


