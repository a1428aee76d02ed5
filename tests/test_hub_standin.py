"""A stand-in for the Hugging Face Hub on 127.0.0.1: the part of the Hub HTTP API that huggingface_hub
calls for `mlptui push` and for `hf://` reads. It is a test double, not the Hub: it keeps repos and
buckets in memory and plays a permissive Xet CAS (it accepts xorbs and shards without storing them or
checking them; the bytes an uploaded file holds are
registered by the test under their Xet hash, as the CAS would have stored them).
Repo preuploads answer "lfs" for *.gz (the Hub's default .gitattributes stores them in LFS) and "regular"
otherwise, so trace files take huggingface_hub's large-file path (Xet upload, then an "lfsFile" commit
entry whose sha256 names bytes the test registered with `cas_holds`).

The tests in this file check that huggingface_hub itself talks to the stand-in the way it talks to the
Hub, so the tests that use it (test_hub_read.py, test_push_hub.py) exercise the real client code.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

WRITE_TOKEN = "hf_standin_write_token"
USER = "me"
ROOT = Path(__file__).resolve().parents[1]
CLOSED_PORT_ENDPOINT = "http://127.0.0.1:9"  # discard port: nothing listens, connections are refused


def hub_env(home: Path, endpoint: str, *, token: str | None = WRITE_TOKEN, offline: bool = False) -> dict[str, str]:
    """The environment of a child process that talks to `endpoint` with its Hub cache under `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(HF_HOME=str(home), HF_ENDPOINT=endpoint, HF_HUB_DISABLE_TELEMETRY="1",
               HF_HUB_DISABLE_PROGRESS_BARS="1", PYTHONPATH=str(ROOT))
    if token is not None:
        env["HF_TOKEN"] = token
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return env


def run_mlptui(args: list[str], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mlptui.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def run_python(code: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def sample_traces() -> list[Path]:
    found = sorted((ROOT / "sample_traces").glob("*.pt.trace.json.gz"))
    assert found, "sample_traces/ has no traces"
    return found


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Repo:
    private: bool = False
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[str] = field(default_factory=lambda: ["0" * 40])

    @property
    def sha(self) -> str:
        return self.commits[-1]


@dataclass
class Bucket:
    private: bool = False
    files: dict[str, tuple[str, bytes | None]] = field(default_factory=dict)  # path -> (xet hash, bytes)


class HubStandIn:
    """Start with `with HubStandIn() as hub:`; `hub.endpoint` is what HF_ENDPOINT points at."""

    def __init__(self) -> None:
        self.repos: dict[tuple[str, str], Repo] = {}
        self.buckets: dict[str, Bucket] = {}
        self.cas: dict[str, bytes] = {}  # xet hash or sha256 -> bytes (what the CAS would hold)
        self.requests: list[tuple[str, str]] = []
        self.commits: list[list[dict[str, Any]]] = []
        self.batches: list[list[dict[str, Any]]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> HubStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # seeding, as if someone had pushed before
    def add_repo_files(self, kind: str, repo_id: str, files: dict[str, bytes], private: bool = False) -> Repo:
        repo = self.repos.setdefault((kind, repo_id), Repo(private=private))
        repo.files.update(files)
        repo.commits.append(hashlib.sha1(repr(sorted(repo.files)).encode() + str(len(repo.commits)).encode())
                            .hexdigest())
        return repo

    def add_bucket_files(self, bucket_id: str, files: dict[str, bytes], private: bool = False) -> Bucket:
        bucket = self.buckets.setdefault(bucket_id, Bucket(private=private))
        for path, data in files.items():
            xet = hashlib.sha256(data).hexdigest()
            self.cas[xet] = data
            bucket.files[path] = (xet, data)
        return bucket

    def cas_holds(self, files: list[Path]) -> None:
        """Register files' bytes under their Xet hashes, as the CAS would hold them once uploaded."""
        import hf_xet

        for f, info in zip(files, hf_xet.hash_files([str(f) for f in files]), strict=True):
            data = f.read_bytes()
            self.cas[info.hash] = data
            self.cas[hashlib.sha256(data).hexdigest()] = data

    def writes(self) -> list[tuple[str, str]]:
        return [r for r in self.requests if r[0] in ("POST", "PUT", "DELETE") and "/cas/" not in r[1]
                and "telemetry" not in r[1]]


_REPO_API = re.compile(r"^/api/(models|datasets|spaces)/([^/]+/[^/]+)(?:/(.*))?$")
_BUCKET_API = re.compile(r"^/api/buckets/([^/]+/[^/]+)(?:/(.*))?$")
_REPO_RESOLVE = re.compile(r"^/(?:(datasets|spaces)/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
_BUCKET_RESOLVE = re.compile(r"^/buckets/([^/]+/[^/]+)/resolve/(.+)$")


def _make_handler(hub: HubStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        # --- plumbing ---
        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                data = b""
                while True:
                    size = int(self.rfile.readline().strip(), 16)
                    if size == 0:
                        self.rfile.readline()
                        return data
                    data += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _send(self, code: int, payload: Any = None, *, raw: bytes | None = None,
                  headers: dict[str, str] | None = None, head: bool = False) -> None:
            body = raw if raw is not None else json.dumps(payload if payload is not None else {}).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/octet-stream" if raw is not None else "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _error(self, code: int, error_code: str | None, message: str, head: bool = False) -> None:
            headers = {"X-Error-Message": message}
            if error_code:
                headers["X-Error-Code"] = error_code
            self._send(code, {"error": message}, headers=headers, head=head)

        def _token(self) -> str | None:
            auth = self.headers.get("Authorization", "")
            return auth[len("Bearer "):] if auth.startswith("Bearer ") else None

        def _authorized(self, head: bool = False) -> bool | None:
            """True: valid write token; False: no token; None: a bad token (401 already sent)."""
            token = self._token()
            if token is None:
                return False
            if token != WRITE_TOKEN:
                self._error(401, None, "Invalid credentials in Authorization header", head)
                return None
            return True

        def do_GET(self) -> None:
            self._route("GET")

        def do_HEAD(self) -> None:
            self._route("HEAD")

        def do_POST(self) -> None:
            self._route("POST")

        def do_PUT(self) -> None:
            self._route("PUT")

        def _route(self, method: str) -> None:
            url = urlsplit(self.path)
            path, query = unquote(url.path), parse_qs(url.query)
            body = self._body() if method in ("POST", "PUT") else b""
            hub.requests.append((method, url.path))
            head = method == "HEAD"
            if path.startswith("/cas/"):
                return self._cas(method, path)
            if path == "/v1/telemetry":
                return self._send(200, {})
            auth = self._authorized(head)
            if auth is None:
                return None
            if path == "/api/whoami-v2":
                return self._send(200, {"type": "user", "name": USER}) if auth else \
                    self._error(401, None, "Invalid credentials in Authorization header")
            if path == "/api/repos/create" and method == "POST":
                return self._create_repo(json.loads(body), auth)
            if m := _BUCKET_API.match(path):
                return self._bucket_api(method, m.group(1), m.group(2) or "", body, query, auth)
            if m := _REPO_API.match(path):
                return self._repo_api(method, m.group(1)[:-1], m.group(2), m.group(3) or "", body, query, auth)
            if m := _BUCKET_RESOLVE.match(path):
                return self._bucket_resolve(m.group(1), m.group(2), auth, head)
            if m := _REPO_RESOLVE.match(path):
                kind = (m.group(1) or "models")[:-1]
                return self._repo_resolve(kind, m.group(2), m.group(3), m.group(4), auth, head)
            return self._error(404, None, f"no route {path}", head)

        # --- repos ---
        def _visible_repo(self, kind: str, repo_id: str, auth: bool, head: bool = False) -> Repo | None:
            repo = hub.repos.get((kind, repo_id))
            if repo is None or (repo.private and not auth):
                self._error(404, "RepoNotFound", "Repository not found", head)
                return None
            return repo

        def _create_repo(self, payload: dict[str, Any], auth: bool) -> None:
            if not auth:
                return self._error(401, None, "Invalid credentials in Authorization header")
            ns, name = payload.get("organization") or USER, payload["name"]
            if ns != USER:
                return self._error(403, None, f"You don't have the rights to create a repo under {ns}")
            kind = payload.get("type") or "model"
            if (kind, f"{ns}/{name}") in hub.repos:
                return self._error(409, None, "You already created this repo")
            hub.repos[(kind, f"{ns}/{name}")] = Repo(private=payload.get("visibility") == "private")
            prefix = "" if kind == "model" else f"{kind}s/"
            return self._send(200, {"url": f"{hub.endpoint}/{prefix}{ns}/{name}", "name": f"{ns}/{name}"})

        def _repo_api(self, method: str, kind: str, repo_id: str, rest: str, body: bytes,
                      query: dict[str, list[str]], auth: bool) -> None:
            repo = self._visible_repo(kind, repo_id, auth)
            if repo is None:
                return None
            if rest == "" or rest.startswith("revision/"):
                return self._send(200, {"id": repo_id, "private": repo.private, "sha": repo.sha,
                                        "siblings": [{"rfilename": p} for p in sorted(repo.files)]})
            if rest.startswith("preupload/") and method == "POST":
                if not auth:
                    return self._error(401, None, "Invalid credentials in Authorization header")
                files = json.loads(body)["files"]
                return self._send(200, {"files": [_preupload_answer(f["path"], repo.files.get(f["path"]))
                                                  for f in files]})
            if rest.startswith("xet-write-token"):
                return self._send(200, {"casUrl": f"{hub.endpoint}/cas", "exp": int(time.time()) + 3600,
                                        "accessToken": "cas-token"})
            if rest.startswith("commit/") and method == "POST":
                if not auth:
                    return self._error(401, None, "Invalid credentials in Authorization header")
                lines = [json.loads(line) for line in body.splitlines() if line.strip()]
                hub.commits.append(lines)
                for item in lines:
                    if item["key"] == "file":
                        repo.files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
                    elif item["key"] == "lfsFile":
                        data = hub.cas.get(item["value"]["oid"])
                        if data is None or len(data) != item["value"]["size"]:
                            return self._error(422, None, f"LFS object {item['value']['oid']} was never uploaded")
                        repo.files[item["value"]["path"]] = data
                    elif item["key"] != "header":
                        return self._error(400, None, f"the stand-in does not take {item['key']}")
                repo.commits.append(hashlib.sha1(f"{time.time_ns()}{len(repo.commits)}".encode()).hexdigest())
                return self._send(200, {"commitUrl": f"{hub.endpoint}/{kind}s/{repo_id}/commit/{repo.sha}",
                                        "commitOid": repo.sha})
            if rest.startswith("tree/"):
                parts = rest.split("/", 2)
                prefix = parts[2].strip("/") if len(parts) > 2 else ""
                recursive = query.get("recursive", ["false"])[0].lower() == "true"
                return self._send(200, _tree(repo.files, prefix, recursive))
            return self._error(404, None, f"no route {rest}")

        def _repo_resolve(self, kind: str, repo_id: str, rev: str, path: str, auth: bool, head: bool) -> None:
            repo = self._visible_repo(kind, repo_id, auth, head)
            if repo is None:
                return None
            if rev not in ("main", repo.sha):
                return self._error(404, "RevisionNotFound", "Revision not found", head)
            data = repo.files.get(path)
            if data is None:
                return self._error(404, "EntryNotFound", "Entry not found", head)
            return self._send(200, raw=data, head=head, headers={
                "X-Repo-Commit": repo.sha, "ETag": f'"{git_blob_sha1(data)}"'})

        # --- buckets ---
        def _bucket_api(self, method: str, bucket_id: str, rest: str, body: bytes,
                        query: dict[str, list[str]], auth: bool) -> None:
            bucket = hub.buckets.get(bucket_id)
            if rest == "" and method == "POST":
                if not auth:
                    return self._error(401, None, "Invalid credentials in Authorization header")
                if not bucket_id.startswith(f"{USER}/"):
                    return self._error(403, None, "You cannot create a bucket there")
                if bucket is not None:
                    return self._error(409, None, "Bucket already exists")
                payload = json.loads(body or b"{}")
                hub.buckets[bucket_id] = Bucket(private=payload.get("visibility") == "private")
                return self._send(200, {"url": f"{hub.endpoint}/buckets/{bucket_id}"})
            if bucket is None or (bucket.private and not auth):
                return self._error(404, "RepoNotFound", "Bucket not found")
            if rest == "":
                return self._send(200, {"id": bucket_id, "private": bucket.private,
                                        "createdAt": "2026-11-22T00:00:00.000Z", "totalFiles": len(bucket.files),
                                        "size": sum(len(d or b"") for _, d in bucket.files.values())})
            if rest == "xet-write-token":
                return self._send(200, {"casUrl": f"{hub.endpoint}/cas", "exp": int(time.time()) + 3600,
                                        "accessToken": "cas-token"})
            if rest == "paths-info" and method == "POST":
                wanted = json.loads(body)["paths"]
                return self._send(200, [_bucket_entry(p, *bucket.files[p]) for p in wanted if p in bucket.files])
            if rest == "batch" and method == "POST":
                if not auth:
                    return self._error(401, None, "Invalid credentials in Authorization header")
                ops = [json.loads(line) for line in body.splitlines() if line.strip()]
                hub.batches.append(ops)
                for op in ops:
                    if op["type"] != "addFile":
                        return self._error(400, None, f"the stand-in does not take {op['type']}")
                    bucket.files[op["path"]] = (op["xetHash"], hub.cas.get(op["xetHash"]))
                return self._send(200, {"failed": []})
            if rest == "tree" or rest.startswith("tree/"):
                prefix = rest[len("tree/"):] if rest.startswith("tree/") else ""
                recursive = query.get("recursive", ["false"])[0].lower() == "true"
                sizes = {p: d for p, (_, d) in bucket.files.items()}
                entries = _tree({p: d or b"" for p, d in sizes.items()}, prefix, recursive)
                for e in entries:
                    if e["type"] == "file":
                        e["xetHash"] = bucket.files[e["path"]][0]
                return self._send(200, entries)
            return self._error(404, None, f"no route {rest}")

        def _bucket_resolve(self, bucket_id: str, path: str, auth: bool, head: bool) -> None:
            bucket = hub.buckets.get(bucket_id)
            if bucket is None or (bucket.private and not auth):
                return self._error(404, "RepoNotFound", "Bucket not found", head)
            entry = bucket.files.get(path)
            if entry is None or entry[1] is None:
                return self._error(404, "EntryNotFound", "Entry not found", head)
            return self._send(200, raw=entry[1], head=head, headers={"X-Xet-Hash": entry[0]})

        # --- a permissive Xet CAS: dedup misses, grants and shard uploads all succeed ---
        def _cas(self, method: str, path: str) -> None:
            if method == "GET" or path.startswith("/cas/v2/"):
                return self._send(404, {})  # no dedup hit; no v2 streaming shard route (the client falls back)
            if "/shards" in path:
                return self._send(200, {"result": 1})
            return self._send(200, {"was_inserted": True})

    return Handler


def _tree(files: dict[str, bytes], prefix: str, recursive: bool) -> list[dict[str, Any]]:
    """Tree entries under `prefix` as the Hub lists them (files with size and oid, and folders)."""
    base = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
    out: dict[str, dict[str, Any]] = {}
    for path, data in sorted(files.items()):
        if not path.startswith(base):
            continue
        rest = path[len(base):]
        if "/" in rest and not recursive:
            folder = base + rest.split("/", 1)[0]
            out.setdefault(folder, {"type": "directory", "path": folder, "oid": "0" * 40})
            continue
        if recursive:
            parts = rest.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                folder = base + "/".join(parts[:i])
                out.setdefault(folder, {"type": "directory", "path": folder, "oid": "0" * 40})
        out[path] = {"type": "file", "path": path, "size": len(data), "oid": git_blob_sha1(data)}
    return list(out.values())


def _preupload_answer(path: str, current: bytes | None) -> dict[str, Any]:
    lfs = path.endswith(".gz")
    oid = None if current is None else hashlib.sha256(current).hexdigest() if lfs else git_blob_sha1(current)
    return {"path": path, "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False, "oid": oid}


def _bucket_entry(path: str, xet_hash: str, data: bytes | None) -> dict[str, Any]:
    return {"type": "file", "path": path, "size": len(data or b""), "xetHash": xet_hash,
            "mtime": "2026-11-22T00:00:00.000Z"}


# --- the stand-in answers huggingface_hub like the Hub does -------------------------------------------

def test_standin_round_trips_a_dataset_commit_through_huggingface_hub() -> None:
    from huggingface_hub import CommitOperationAdd, HfApi

    with HubStandIn() as hub:
        api = HfApi(endpoint=hub.endpoint, token=WRITE_TOKEN)
        api.create_repo("me/traces", repo_type="dataset")
        api.create_commit("me/traces", repo_type="dataset", commit_message="t",
                          operations=[CommitOperationAdd("a/b.json", b'{"traceEvents": []}')])
        assert hub.repos[("dataset", "me/traces")].files == {"a/b.json": b'{"traceEvents": []}'}
        tree = {e.path for e in api.list_repo_tree("me/traces", repo_type="dataset", recursive=True)}
        assert tree == {"a", "a/b.json"}
        assert api.repo_info("me/traces", repo_type="dataset").private is False


def test_standin_takes_a_bucket_upload_through_hf_xet(tmp_path: Any) -> None:
    """The real huggingface_hub bucket path (Xet upload, then /batch) completes against the stand-in, and
    the Xet hash it sends is the one hf_xet computes for the file."""
    import hf_xet
    from huggingface_hub import HfApi
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()
    f = tmp_path / "t.pt.trace.json"
    f.write_bytes(b'{"traceEvents": []}' * 100)
    with HubStandIn() as hub:
        api = HfApi(endpoint=hub.endpoint, token=WRITE_TOKEN)
        api.create_bucket("me/b")
        api.batch_bucket_files("me/b", add=[(str(f), "x/t.pt.trace.json")])
        (op,) = hub.batches[0]
        assert op["path"] == "x/t.pt.trace.json"
        assert op["xetHash"] == hf_xet.hash_files([str(f)])[0].hash
