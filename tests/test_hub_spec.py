"""hf:// spec parsing and URL building: pure functions, checked against huggingface_hub's own parser and
URL builder (parse_hf_uri, hf_hub_url) so the two never drift. No network."""

from __future__ import annotations

from urllib.parse import unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlptui.base.errors import MlptuiError
from mlptui.sources.hub import is_folder
from mlptui.sources.hub_spec import HubSpec, parse_hf_spec, perfetto_url, resolve_url

SPECS = [
    "hf://datasets/me/profiling-traces/run-1/mlp-eager.pt.trace.json.gz",
    "hf://datasets/me/profiling-traces@v1.0/a/b.json",
    "hf://datasets/me/profiling-traces@refs/pr/3/a.json.gz",
    "hf://datasets/me/profiling-traces@refs%2Fheads%2Fdev/x.json",
    "hf://datasets/me/profiling-traces",
    "hf://buckets/me/my-traces/mlp-compile.pt.trace.json.gz",
    "hf://buckets/me/my-traces/",
    "hf://me/model-repo/t.json",
    "hf://spaces/me/demo/t.json",
]


@pytest.mark.parametrize("spec", SPECS)
def test_parse_agrees_with_huggingface_hub(spec: str) -> None:
    from huggingface_hub.utils import parse_hf_uri

    ours, theirs = parse_hf_spec(spec), parse_hf_uri(spec)
    assert (ours.kind, ours.repo_id, ours.revision, ours.path) == (
        theirs.type, theirs.id, theirs.revision, theirs.path_in_repo)
    assert parse_hf_spec(ours.uri()) == HubSpec(ours.kind, ours.repo_id, ours.revision, ours.path,
                                                ours.trailing_slash or not ours.path)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("hf://buckets/me/b@v1/x.json", "no revisions"),
        ("hf://dataset/me/r/x.json", "plural"),
        ("hf://datasets/me", "missing NS/NAME"),
        ("hf://datasets/me/r@/x.json", "empty revision"),
        ("hf://datasets/me/r/../x.json", "bad path"),
        ("hf://datasets/m e/r/x.json", "not a valid Hub name"),
        ("/local/path.json", "not an hf:// spec"),
    ],
)
def test_bad_specs_are_one_line_errors(spec: str, says: str) -> None:
    with pytest.raises(MlptuiError) as info:
        parse_hf_spec(spec)
    assert says in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("spec", [s for s in SPECS if not s.startswith("hf://buckets/") and parse_hf_spec(s).path])
def test_repo_resolve_urls_are_huggingface_hubs(spec: str) -> None:
    from huggingface_hub import hf_hub_url

    s = parse_hf_spec(spec)
    endpoint = "https://hub.example"
    assert resolve_url(s, endpoint) == hf_hub_url(s.repo_id, s.path, repo_type=s.kind, revision=s.revision,
                                                  endpoint=endpoint)


def test_bucket_resolve_url_and_perfetto_link() -> None:
    s = parse_hf_spec("hf://buckets/me/my-traces/run 1/mlp#2.pt.trace.json.gz")
    url = resolve_url(s, "https://huggingface.co")
    assert url == "https://huggingface.co/buckets/me/my-traces/resolve/run%201/mlp%232.pt.trace.json.gz"
    link = perfetto_url(url)
    prefix = "https://ui.perfetto.dev/#!/?url="
    assert link.startswith(prefix)
    assert "/" not in link[len(prefix):] and "#" not in link[len(prefix):] and "&" not in link[len(prefix):]
    assert unquote(link[len(prefix):]) == url


def test_endpoint_comes_from_hf_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    s = parse_hf_spec("hf://datasets/me/t/a.json")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:8080/")
    assert resolve_url(s) == "http://127.0.0.1:8080/datasets/me/t/resolve/main/a.json"
    monkeypatch.delenv("HF_ENDPOINT")
    assert resolve_url(s) == "https://huggingface.co/datasets/me/t/resolve/main/a.json"


def test_folders_are_told_from_files_by_spelling() -> None:
    assert is_folder("hf://datasets/me/t")
    assert is_folder("hf://datasets/me/t/run-1")
    assert is_folder("hf://datasets/me/t/run-1.json/")
    assert not is_folder("hf://datasets/me/t/run-1/a.pt.trace.json.gz")
    assert is_folder("hf://buckets/me/b/manifest.json") is True  # never opened as a trace


@given(st.lists(st.text(alphabet="abcXYZ09 -_#%?&+.", min_size=1, max_size=8), min_size=1, max_size=3))
def test_any_path_survives_the_perfetto_link(parts: list[str]) -> None:
    path = "/".join(p.strip(".") or "x" for p in parts) + ".json"
    url = resolve_url(HubSpec("bucket", "me/b", None, path), "https://huggingface.co")
    assert unquote(unquote(perfetto_url(url)).split("?url=", 1)[1].split("/resolve/", 1)[1]) == path
