"""Traces on another machine, read through the system `ssh` client.

One ssh connection per request: a single remote `sh` script lists a folder, or checks a file against
our cached copy and streams it when it changed, with the folder's manifest.json in the same answer.
Gzip files cross the wire as they are; plain JSON is gzipped on the remote side when it has gzip.

Safety: ssh runs from an argv list (no local shell); the host and user were validated by
`ssh_spec`; the remote path reaches the remote shell only as one `shlex.quote`d word (a leading
`~` or `~user` is left unquoted so the remote shell expands it) and the script reads it as `$2`,
never as code. `MLPTUI_SSH` replaces the `ssh` command (split like a shell line, as git does with
GIT_SSH_COMMAND); `MLPTUI_SSH_TIMEOUT` is the seconds of silence after which we give up.
"""

from __future__ import annotations

import os
import re
import selectors
import shlex
import subprocess
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from mlptui.contract.errors import MlptuiError
from mlptui.sources import remote_cache
from mlptui.sources.ssh_spec import SshSpec, parse_ssh_spec

if TYPE_CHECKING:
    from mlptui.trace.model import Trace

Progress = Callable[[int, int], None]

MARK = b"MLPTUI1 "
MANIFEST_MAX = 4 << 20
DEFAULT_TIMEOUT = 30.0

# One line of POSIX sh (csh rejects newlines inside quotes). $1 = mode, $2 = path, $3 $4 = size and
# mtime of our cached copy. Answers a header line "MLPTUI1 ...", then data.
_SCRIPT = "; ".join([
    'p=$2; m=$1; [ "$p" = "${p%/}" ] || p=${p%/}; [ -n "$p" ] || p=/',
    'case $p in -*) p=./$p;; esac',
    'h() { printf "MLPTUI1 %s\\n" "$*"; }',
    '[ -e "$p" ] || { h ERR nofile; exit 0; }',
    'if [ -d "$p" ]; then'
    '  [ "$m" = list ] || { h DIR; exit 0; };'
    '  [ -r "$p" ] && [ -x "$p" ] || { h ERR perm; exit 0; };'
    '  h DIR;'
    "  find -L \"$p\"/ -mindepth 1 -maxdepth 1 -type f \\( -iname '*.json' -o -iname '*.json.gz' \\)"
    " -print0 2>/dev/null;"
    '  exit 0;'
    ' fi',
    '[ "$m" = list ] && { h FILE; exit 0; }',
    '[ -r "$p" ] || { h ERR perm; exit 0; }',
    "s=$(stat -L -c '%s %Y' -- \"$p\" 2>/dev/null || stat -L -f '%z %m' -- \"$p\" 2>/dev/null)",
    '[ -n "$s" ] || { h ERR stat; exit 0; }',
    'size=${s% *}; mtime=${s#* }',
    'mf=$(dirname -- "$p")/manifest.json; ml=0',
    '[ -f "$mf" ] && [ -r "$mf" ] && ml=$(wc -c < "$mf" | tr -d " ")',
    f'[ "$ml" -le {MANIFEST_MAX} ] 2>/dev/null || ml=0',
    'if [ "$size" = "$3" ] && [ "$mtime" = "$4" ]; then st=SAME; enc=raw;'
    ' else st=DATA; enc=raw;'
    '  case $p in *.gz) ;; *) command -v gzip >/dev/null 2>&1 && enc=gzip;; esac;'
    ' fi',
    'h "$st" "$size" "$mtime" "$ml" "$enc"',
    '[ "$ml" -gt 0 ] && head -c "$ml" -- "$mf"',
    '[ "$st" = SAME ] && exit 0',
    'if [ "$enc" = gzip ]; then head -c "$size" -- "$p" | gzip -1 -c; else head -c "$size" -- "$p"; fi',
])

_TILDE_RE = re.compile(r"^~[A-Za-z0-9._-]*(?=/|$)")


def remote_word(path: str) -> str:
    """`path` as one word for the remote shell: quoted, except a leading `~`/`~user` it must expand."""
    m = _TILDE_RE.match(path)
    if not m:
        return shlex.quote(path)
    rest = path[m.end() + 1:]
    # The slash after `~user` must stay unquoted too, or the shell does not expand the tilde.
    return m.group(0) + ("/" + shlex.quote(rest) if m.end() < len(path) else "")


def ssh_command() -> list[str]:
    """The ssh client argv prefix: `$MLPTUI_SSH` split like a shell line, else `ssh`."""
    raw = os.environ.get("MLPTUI_SSH", "").strip()
    if not raw:
        return ["ssh"]
    try:
        argv = shlex.split(raw)
    except ValueError as exc:
        raise MlptuiError(f"MLPTUI_SSH: cannot split {raw!r}: {exc}") from None
    return argv or ["ssh"]


def _timeout() -> float:
    try:
        return max(1.0, float(os.environ.get("MLPTUI_SSH_TIMEOUT", DEFAULT_TIMEOUT)))
    except ValueError:
        return DEFAULT_TIMEOUT


def build_argv(spec: SshSpec, mode: str, cached: remote_cache.CachedCopy | None = None) -> list[str]:
    """The full argv: ssh [options] -- host 'sh -c SCRIPT mlptui MODE PATH SIZE MTIME'."""
    argv = ssh_command()
    # Our options come after the user's MLPTUI_SSH ones, and ssh keeps the first value it sees.
    argv += ["-o", f"ConnectTimeout={int(_timeout())}", "-o", "BatchMode=yes", "-T", "-x"]
    if spec.port:
        argv += ["-p", str(spec.port)]
    if spec.user:
        argv += ["-l", spec.user]
    size, mtime = (str(cached.size), str(cached.mtime)) if cached else ("-", "-")
    remote = " ".join(["sh", "-c", shlex.quote(_SCRIPT), "mlptui", mode, remote_word(spec.path), size, mtime])
    argv += ["--", spec.host.strip("[]"), remote]
    return argv


class _Session:
    """One running ssh: reads stdout with a watchdog (no bytes for `timeout` s -> kill, error).

    stderr is read in the same loop, never waited on to its end: with ControlPersist the master
    ssh lives on in the background holding it open.
    """

    def __init__(self, spec: SshSpec, argv: list[str]) -> None:
        self.spec = spec
        self.timeout = _timeout()
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        except FileNotFoundError:
            raise MlptuiError(f"{spec.display}: ssh client {argv[0]!r} not found") from None
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._pipes = (self.proc.stdout, self.proc.stderr)
        self.stderr = bytearray()
        self._out = self.proc.stdout.fileno()
        self._err = self.proc.stderr.fileno()
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._out, selectors.EVENT_READ)
        self._sel.register(self._err, selectors.EVENT_READ)
        self._buf = b""
        self._eof = False
        self._closed = False

    def _read_err(self) -> None:
        data = os.read(self._err, 65536)
        if not data:
            self._sel.unregister(self._err)
        elif len(self.stderr) < 65536:
            self.stderr += data

    def _fill(self) -> bool:
        """Read more bytes into the buffer; False at EOF."""
        if self._eof:
            return False
        while True:
            ready = self._sel.select(self.timeout)
            if not ready:
                self.close()
                raise MlptuiError(f"{self.spec.display}: no answer from {self.spec.endpoint} "
                                  f"for {self.timeout:g} s (MLPTUI_SSH_TIMEOUT); gave up")
            got_out = False
            for key, _ in ready:
                if key.fd == self._err:
                    self._read_err()
                else:
                    got_out = True
            if got_out:
                break
        data = os.read(self._out, 1 << 20)
        if not data:
            self._eof = True
            return False
        self._buf += data
        return True

    def header(self) -> list[str]:
        """Skip anything a login script printed, return the fields of our header line."""
        while True:
            at = self._buf.find(MARK)
            if at >= 0:
                end = self._buf.find(b"\n", at)
                if end >= 0:
                    line = self._buf[at + len(MARK):end].decode("ascii", "replace")
                    self._buf = self._buf[end + 1:]
                    return line.split()
            elif len(self._buf) > 1 << 16:
                self._buf = self._buf[-len(MARK):]
            if not self._fill():
                raise self.failure()

    def read_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            if not self._fill():
                raise self.failure("connection closed early")
        data, self._buf = self._buf[:n], self._buf[n:]
        return data

    def chunks(self) -> Iterator[bytes]:
        if self._buf:
            data, self._buf = self._buf, b""
            yield data
        while self._fill():
            data, self._buf = self._buf, b""
            yield data

    def read_all(self) -> bytes:
        return b"".join(self.chunks())

    def failure(self, fallback: str = "no answer") -> MlptuiError:
        """The one-line error for an ssh that ended without a proper answer."""
        code = self.close()
        return MlptuiError(f"{self.spec.display}: {explain_ssh_error(code, self.stderr.decode('utf-8', 'replace'), fallback)}")

    def close(self) -> int:
        if self._closed:
            return self.proc.returncode
        self._closed = True
        if self.proc.poll() is None and self._eof:
            try:   # output ended: ssh is exiting (and may still be writing why to stderr)
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        code = self.proc.wait()
        # Whatever ssh wrote to stderr before it exited is in the pipe now; take it without blocking.
        os.set_blocking(self._err, False)
        try:
            while len(self.stderr) < 65536 and (data := os.read(self._err, 65536)):
                self.stderr += data
        except BlockingIOError:
            pass
        self._sel.close()
        for pipe in self._pipes:
            pipe.close()
        return code


_SSH_ERRORS = [
    ("Could not resolve hostname", "cannot resolve the host name"),
    ("Connection refused", "connection refused (is sshd running there, on that port?)"),
    ("Connection timed out", "host unreachable (connection timed out)"),
    ("timed out", "host unreachable (timed out)"),
    ("No route to host", "host unreachable (no route to host)"),
    ("Network is unreachable", "host unreachable (network is unreachable)"),
    ("Permission denied", "authentication failed (mlptui runs ssh without prompting: "
                          "load your key into ssh-agent or set MLPTUI_SSH)"),
    ("Host key verification failed", "host key verification failed (ssh to it once by hand to accept its key)"),
    ("Connection closed", "connection closed by the remote host"),
]


def explain_ssh_error(code: int, stderr: str, fallback: str) -> str:
    for needle, message in _SSH_ERRORS:
        if needle in stderr:
            return message
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith("Warning: Permanently")]
    detail = lines[-1] if lines else fallback
    return f"ssh failed (exit {code}): {detail}" if code else detail


_ERRORS = {"nofile": "no such file or folder", "perm": "permission denied", "stat": "cannot stat the file"}


def _error(spec: SshSpec, fields: list[str]) -> MlptuiError:
    what = fields[1] if len(fields) > 1 else "?"
    return MlptuiError(f"{spec.display}: {_ERRORS.get(what, 'remote error ' + what)}")


# is_folder + list_traces on the same spec cost one connection: the listing is kept briefly.
_LISTINGS: dict[str, tuple[float, list[str] | None]] = {}
_LISTING_TTL = 10.0


def _listing(spec: str) -> list[str] | None:
    """Trace specs in the folder `spec`, or None when `spec` is a file."""
    hit = _LISTINGS.get(spec)
    if hit and time.monotonic() - hit[0] < _LISTING_TTL:
        return hit[1]
    s = parse_ssh_spec(spec)
    session = _Session(s, build_argv(s, "list"))
    try:
        fields = session.header()
        if fields[0] == "ERR":
            raise _error(s, fields)
        result: list[str] | None = None
        if fields[0] == "DIR":
            names = [n.decode("utf-8", "surrogateescape") for n in session.read_all().split(b"\0") if n]
            result = sorted(s.spec_for(_tidy(n)) for n in names if _is_trace_name(n.rsplit("/", 1)[-1]))
    finally:
        session.close()
    _LISTINGS[spec] = (time.monotonic(), result)
    return result


def _tidy(path: str) -> str:
    while "//" in path:
        path = path.replace("//", "/")
    return path


def _is_trace_name(name: str) -> bool:
    from mlptui.trace.parse.discover import is_trace_name

    return is_trace_name(name)


def is_folder(spec: str) -> bool:
    if spec.endswith("/"):
        return True
    return _listing(spec) is not None


def list_traces(spec: str) -> list[str]:
    found = _listing(spec)
    if found is None:
        raise MlptuiError(f"{parse_ssh_spec(spec).display}: not a folder")
    return found


def fetch(spec: str, progress: Progress | None = None) -> Path:
    """A local copy of the remote trace file `spec` (from the cache when size and mtime still match)."""
    return _fetch(spec, progress)[0]


def _fetch(spec: str, progress: Progress | None) -> tuple[Path, str | None]:
    """(local copy, a note for the user when it is a cached copy that could not be checked)."""
    s = parse_ssh_spec(spec)
    cached = remote_cache.lookup(s.endpoint, s.path)
    session = _Session(s, build_argv(s, "open", cached))
    try:
        try:
            fields = session.header()
        except MlptuiError as exc:
            if cached is not None and session.proc.returncode == 255:
                # ssh itself failed (host unreachable, ...): the copy we have is better than nothing.
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(cached.mtime))
                return cached.path, f"showing the cached copy (remote file of {when}): {exc}"
            raise
        if fields[0] == "ERR":
            raise _error(s, fields)
        if fields[0] == "DIR":
            raise MlptuiError(f"{s.display}: is a folder, not a trace file")
        status, size, mtime, manifest_len, enc = fields[0], int(fields[1]), int(fields[2]), int(fields[3]), fields[4]
        manifest = session.read_exact(manifest_len) if manifest_len else b""
        if status == "SAME" and cached is not None:
            if manifest:
                remote_cache.CacheWriter.refresh_manifest(cached.path, manifest)
            return cached.path, None
        return _receive(session, s, size, mtime, manifest, enc, progress), None
    finally:
        session.close()


def _receive(session: _Session, s: SshSpec, size: int, mtime: int, manifest: bytes, enc: str,
             progress: Progress | None) -> Path:
    writer = remote_cache.CacheWriter(s.endpoint, s.path, size, mtime)
    inflate = zlib.decompressobj(wbits=31) if enc == "gzip" else None
    try:
        if progress:
            progress(0, size)
        for chunk in session.chunks():
            writer.write(inflate.decompress(chunk) if inflate else chunk)
            if progress:
                progress(min(writer.written, size), size)
        if inflate:
            writer.write(inflate.flush())
        if writer.written != size:
            raise MlptuiError(f"{s.display}: received {writer.written} of {size} bytes "
                              f"(the file changed or the connection dropped); try again")
        if manifest:
            writer.write_manifest(manifest)
        return writer.commit()
    except zlib.error:
        writer.abort()
        raise MlptuiError(f"{s.display}: corrupt data on the wire; try again") from None
    except BaseException:
        writer.abort()
        raise


def open_trace(spec: str, progress: Progress | None = None) -> Trace:
    from mlptui.sources.local import attach_manifest
    from mlptui.trace.parse.load import load_trace

    path, note = _fetch(spec, progress)
    trace = attach_manifest(load_trace(path, source=spec, progress=progress), path)
    if note:
        trace.warnings.append(note)
    return trace
