"""`mlptui perfetto`: a real server process fetched with urllib the way ui.perfetto.dev's page would
(preflight, then GET): exact bytes, the CORS header, nothing else served, and it stops after serving."""

from __future__ import annotations

import http.client
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import unquote

import pytest

from mlptui.commands.perfetto import ORIGIN, perfetto_url, url_names

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_traces"


def _sample(pattern: str) -> Path:
    found = sorted(SAMPLES.glob(pattern))
    if not found:
        pytest.skip(f"no sample trace matching {pattern}")
    return found[0]


def _start(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "mlptui.cli", "perfetto", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    urls: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("https://ui.perfetto.dev/"):
            urls.append(line.strip())
        if line.startswith("Stops after"):
            return proc, urls
    proc.wait(timeout=10)
    raise AssertionError(f"perfetto did not start: {proc.stderr.read() if proc.stderr else ''}")


def _file_url(perfetto: str) -> str:
    m = re.fullmatch(r"https://ui\.perfetto\.dev/#!/\?url=(http://127\.0\.0\.1:\d+/\S+)", perfetto)
    assert m, perfetto
    return m.group(1)


def test_serves_exact_bytes_with_cors_then_stops() -> None:
    trace = _sample("mlp-compile-*.pt.trace.json.gz")
    proc, urls = _start(str(trace), "--port", "0")
    try:
        assert len(urls) == 1
        url = _file_url(urls[0])
        assert url.endswith("/" + trace.name)
        base = url.rsplit("/", 1)[0]
        port = int(base.rsplit(":", 1)[1])
        # Only the named file exists on this server.
        for other in ("/", "/manifest.json", "/../" + trace.name, "/etc/passwd", "/%2e%2e/" + trace.name):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(base + other, timeout=5)
            assert err.value.code == 404
        # A request naming another host (DNS rebinding) is refused.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/" + trace.name, headers={"Host": f"evil.example:{port}"})
        assert conn.getresponse().status == 403
        conn.close()
        # The browser's preflight.
        pre = urllib.request.urlopen(urllib.request.Request(url, method="OPTIONS",
                                     headers={"Origin": ORIGIN, "Access-Control-Request-Private-Network": "true"}),
                                     timeout=5)
        assert pre.status == 204
        assert pre.headers["Access-Control-Allow-Origin"] == ORIGIN
        assert pre.headers["Access-Control-Allow-Private-Network"] == "true"
        got = urllib.request.urlopen(urllib.request.Request(url, headers={"Origin": ORIGIN}), timeout=5)
        assert got.headers["Access-Control-Allow-Origin"] == "https://ui.perfetto.dev"
        assert got.read() == trace.read_bytes()
        out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err
        assert f"served {trace.name}" in out
    finally:
        proc.kill()
        proc.wait()


def test_two_files_and_keep_until_interrupted(tmp_path: Path) -> None:
    a = _sample("linear-eager-*bf16*.pt.trace.json.gz")
    b = tmp_path / "my trace #1.json"
    b.write_text('{"traceEvents": []}')
    proc, urls = _start(str(a), str(b), "--port", "0", "--keep")
    try:
        assert len(urls) == 2
        for url, path in zip(urls, (a, b), strict=True):
            file_url = _file_url(url)
            assert unquote(file_url).endswith("/" + path.name)
            for _ in range(2):   # --keep: served again
                assert urllib.request.urlopen(file_url, timeout=5).read() == path.read_bytes()
        assert proc.poll() is None
        proc.send_signal(2)  # Ctrl-C
        out, _ = proc.communicate(timeout=10)
        assert "stopped" in out
    finally:
        proc.kill()
        proc.wait()


def test_port_in_use_and_missing_file_are_one_line(tmp_path: Path) -> None:
    trace = _sample("linear-eager-*bf16*.pt.trace.json.gz")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "mlptui.cli", "perfetto", str(trace), "--port", str(port)],
                             cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert out.stderr == f"mlptui: port {port} on 127.0.0.1 is in use; pick another with --port\n"
    out = subprocess.run([sys.executable, "-m", "mlptui.cli", "perfetto", str(tmp_path / "nope.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert (out.returncode, out.stderr) == (2, f"mlptui: {tmp_path / 'nope.json'}: no such file\n")
    out = subprocess.run([sys.executable, "-m", "mlptui.cli", "perfetto", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "is a folder" in out.stderr


def test_routes_and_urls() -> None:
    routes = url_names([Path("/a/x.json"), Path("/b/x.json"), Path("/c/y z.json.gz")])
    assert list(routes) == ["/x.json", "/2/x.json", "/y z.json.gz"]
    assert perfetto_url(9001, "/y z.json.gz") == "https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/y%20z.json.gz"
