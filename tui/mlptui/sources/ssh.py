"""Traces on another machine, read through the system `ssh` client.

One ssh connection per request: a single remote `sh` script lists a folder, or checks a file against
our cached copy and streams it when it changed, with the folder's manifest.json in the same answer.
Gzip files cross the wire as they are; plain JSON is gzipped on the remote side when it has gzip.

Safety: ssh runs from an argv list (no local shell); the host and user were validated by
`ssh_spec`. The remote login shell, whatever it is (sh, bash, zsh, tcsh, csh, fish), runs only
`sh -s WORDS` where every word is letters, digits and `-`: the script comes on stdin and the path
as its bytes in octal, decoded by the script, so no character of a path is ever shell text. Answers
are recognised by a per-request nonce and parsed strictly; a file is never written past the size
its header announced. `MLPTUI_SSH` replaces the `ssh` command (split like a shell line, as git does with
GIT_SSH_COMMAND); `MLPTUI_SSH_TIMEOUT` is the seconds of silence after which we give up.
"""

from __future__ import annotations

import os
import re
import secrets
import selectors
import shlex
import subprocess
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from mlptui.base.errors import MlptuiError
from mlptui.base.progress import Progress
from mlptui.base.text import printable
from mlptui.sources import remote_cache
from mlptui.sources.ssh_spec import SshSpec, parse_ssh_spec

if TYPE_CHECKING:
    from mlptui.trace.model import Trace


MARK = b"MLPTUI1 "
MANIFEST_MAX = 4 << 20
LISTING_MAX = 16 << 20         # names of one folder's traces: far more than any real folder
DEFAULT_TIMEOUT = 30.0
HEADER_SEARCH_MAX = 1 << 20      # login banners before our header line; more than this is not a shell

# A POSIX sh script, sent on ssh's stdin to `sh -s` (the login shell, maybe csh or fish, sees only the
# plain words of `remote_words`). $1 = mode, $2 = the path as octal bytes after an `o`, $3 $4 = size
# and mtime of our cached copy, $5 = the tilde the path started with (- none, h ~, u<octal> ~user).
# Every answer starts with a header line "MLPTUI1 <nonce> ...": the nonce is in this script only, so
# nothing a login script prints can pass for it.
_SCRIPT = r"""h() { printf 'MLPTUI1 %s %s\n' "$N" "$*"; }
dec() { printf "$(printf %s "$1" | sed 's/[0-7][0-7][0-7]/\\&/g')X"; }
m=$1; p=$(dec "${2#o}"); p=${p%X}
case $5 in
  -) ;;
  h) p=$HOME$p ;;
  u*) u=$(dec "${5#u}"); u=${u%X}
      case $u in ''|*[!A-Za-z0-9._-]*) h ERR nofile; exit 0 ;; esac
      d=$(eval "printf %s ~$u")
      [ "$d" != "~$u" ] || { h ERR nofile; exit 0; }
      p=$d$p ;;
  *) h ERR args; exit 0 ;;
esac
[ "$p" = "${p%/}" ] || p=${p%/}; [ -n "$p" ] || p=/
case $p in -*) p=./$p ;; esac
[ -e "$p" ] || { h ERR nofile; exit 0; }
if [ -d "$p" ]; then
  [ "$m" = list ] || { h DIR; exit 0; }
  [ -r "$p" ] && [ -x "$p" ] || { h ERR perm; exit 0; }
  h DIR
  find -L "$p"/ -mindepth 1 -maxdepth 1 -type f \( -iname '*.json' -o -iname '*.json.gz' \) \
    -print0 2>/dev/null
  exit 0
fi
[ "$m" = list ] && { h FILE; exit 0; }
[ -r "$p" ] || { h ERR perm; exit 0; }
s=$(stat -L -c '%s %Y' -- "$p" 2>/dev/null || stat -L -f '%z %m' -- "$p" 2>/dev/null)
[ -n "$s" ] || { h ERR stat; exit 0; }
size=${s% *}; mtime=${s#* }
mf=$(dirname -- "$p")/manifest.json; ml=0
[ -f "$mf" ] && [ -r "$mf" ] && ml=$(wc -c < "$mf" | tr -d ' ')
[ "$ml" -le MANIFEST_MAX ] 2>/dev/null || ml=0
if [ "$size" = "$3" ] && [ "$mtime" = "$4" ]; then st=SAME; enc=raw
else st=DATA; enc=raw
  case $p in *.gz) ;; *) command -v gzip >/dev/null 2>&1 && enc=gzip ;; esac
fi
h "$st" "$size" "$mtime" "$ml" "$enc"
[ "$ml" -gt 0 ] && head -c "$ml" -- "$mf"
[ "$st" = SAME ] && exit 0
if [ "$enc" = gzip ]; then head -c "$size" -- "$p" | gzip -1 -c; else head -c "$size" -- "$p"; fi
""".replace("MANIFEST_MAX", str(MANIFEST_MAX))

_TILDE_RE = re.compile(r"^~([A-Za-z0-9._-]*)(?=/|$)")


def _octal(text: str) -> str:
    """`text` as its bytes in three-digit octal: only digits, the same word in every shell."""
    return "".join(f"{b:03o}" for b in text.encode("utf-8", "surrogateescape"))


def remote_script(nonce: str) -> bytes:
    return f"N={nonce}\n{_SCRIPT}".encode()


def remote_words(path: str, mode: str, cached: remote_cache.CachedCopy | None = None) -> list[str]:
    """The arguments of the remote `sh -s`: letters, digits and `-` only, so no login shell (sh, bash,
    zsh, tcsh, csh, fish) can read anything into them. A leading `~` or `~user` is expanded by the
    script, the way the remote shell would."""
    m = _TILDE_RE.match(path)
    if m is None:
        tilde, rest = "-", path
    else:
        tilde, rest = ("h" if not m.group(1) else "u" + _octal(m.group(1))), path[m.end():]
    size, mtime = (str(cached.size), str(cached.mtime)) if cached else ("-", "-")
    return [mode, "o" + _octal(rest), size, mtime, tilde]


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
    """The full argv: ssh [options] -- host 'sh -s MODE PATH SIZE MTIME TILDE' (the script goes on stdin)."""
    argv = ssh_command()
    # Our options come after the user's MLPTUI_SSH ones, and ssh keeps the first value it sees.
    argv += ["-o", f"ConnectTimeout={int(_timeout())}", "-o", "BatchMode=yes", "-T", "-x"]
    if spec.port:
        argv += ["-p", str(spec.port)]
    if spec.user:
        argv += ["-l", spec.user]
    argv += ["--", spec.host.strip("[]"), " ".join(["sh", "-s", *remote_words(spec.path, mode, cached)])]
    return argv


class _Session:
    """One running ssh: reads stdout with a watchdog (no bytes for `timeout` s -> kill, error).

    stderr is read in the same loop, never waited on to its end: with ControlPersist the master
    ssh lives on in the background holding it open.
    """

    def __init__(self, spec: SshSpec, argv: list[str]) -> None:
        self.spec = spec
        self.timeout = _timeout()
        self.nonce = secrets.token_hex(8)
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        except FileNotFoundError:
            raise MlptuiError(f"{spec.display}: ssh client {argv[0]!r} not found") from None
        assert self.proc.stdin is not None and self.proc.stdout is not None and self.proc.stderr is not None
        self._pipes = (self.proc.stdout, self.proc.stderr)
        try:   # a few KB: fits the pipe, so this never waits on the remote
            self.proc.stdin.write(remote_script(self.nonce))
            self.proc.stdin.close()
        except OSError:
            pass   # ssh already gone: its exit status and stderr say why
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
        mark = MARK + self.nonce.encode() + b" "
        skipped = 0
        while True:
            at = self._buf.find(mark)
            if at >= 0:
                end = self._buf.find(b"\n", at)
                if end >= 0:
                    line = self._buf[at + len(mark):end].decode("ascii", "replace")
                    self._buf = self._buf[end + 1:]
                    return line.split(" ")
            elif len(self._buf) > 1 << 16:
                skipped += len(self._buf) - len(mark)
                self._buf = self._buf[-len(mark):]
            if skipped > HEADER_SEARCH_MAX:
                self.close()
                raise MlptuiError(f"{self.spec.display}: the remote shell printed {skipped} bytes and no "
                                  "answer (is its login script printing in a loop?)")
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

    def read_all(self, limit: int) -> bytes:
        """The rest of the answer; more than `limit` bytes is not an answer we asked for."""
        out: list[bytes] = []
        got = 0
        for chunk in self.chunks():
            got += len(chunk)
            if got > limit:
                self.close()
                raise MlptuiError(f"{self.spec.display}: the folder listing is over {limit >> 20} MB; "
                                  "refused")
            out.append(chunk)
        return b"".join(out)

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
    detail = printable(lines[-1][:300]) if lines else fallback     # the remote's words, never its escapes
    return f"ssh failed (exit {code}): {detail}" if code else detail


_ERRORS = {"nofile": "no such file or folder", "perm": "permission denied", "stat": "cannot stat the file"}


def _error(spec: SshSpec, fields: list[str]) -> MlptuiError:
    what = fields[1] if len(fields) > 1 else "?"
    return MlptuiError(f"{spec.display}: {_ERRORS.get(what, 'remote error ' + printable(what[:40]))}")


_NUMBER = re.compile(r"^[0-9]{1,18}$")
_ENCODINGS = ("raw", "gzip")


class _FileAnswer:
    """The header of an `open` answer, checked field by field: `SAME|DATA size mtime manifest_len enc`."""

    def __init__(self, spec: SshSpec, fields: list[str]) -> None:
        if (len(fields) != 5 or fields[0] not in ("SAME", "DATA")
                or not all(_NUMBER.match(f) for f in fields[1:4])
                or fields[4] not in _ENCODINGS or int(fields[3]) > MANIFEST_MAX):
            raise _malformed(spec, fields)
        self.status, self.enc = fields[0], fields[4]
        self.size, self.mtime, self.manifest_len = int(fields[1]), int(fields[2]), int(fields[3])


def _malformed(spec: SshSpec, fields: list[str]) -> MlptuiError:
    shown = printable(" ".join(fields)[:80])
    return MlptuiError(f"{spec.display}: malformed answer from the remote ({shown!r}); "
                       "is `sh` there a POSIX shell?")


def _first(spec: SshSpec, fields: list[str], allowed: tuple[str, ...]) -> str:
    """The answer's kind, one of `allowed` (an ERR answer raises its message)."""
    if fields and fields[0] == "ERR" and len(fields) == 2:
        raise _error(spec, fields)
    if not fields or fields[0] not in allowed or (fields[0] in ("DIR", "FILE") and len(fields) != 1):
        raise _malformed(spec, fields)
    return fields[0]


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
        kind = _first(s, session.header(), ("DIR", "FILE"))
        result: list[str] | None = None
        if kind == "DIR":
            listing = session.read_all(LISTING_MAX)
            names = [n.decode("utf-8", "surrogateescape") for n in listing.split(b"\0") if n]
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


class TooLarge(MlptuiError):
    """The remote file is larger than the caller would fetch now; its manifest came with the answer."""

    def __init__(self, spec: str, size: int, manifest: bytes) -> None:
        super().__init__(f"{spec}: {size} bytes")
        self.size = size
        self.manifest = manifest


def fetch(spec: str, progress: Progress | None = None) -> Path:
    """A local copy of the remote trace file `spec` (from the cache when size and mtime still match)."""
    return _fetch(spec, progress)[0]


def _fetch(spec: str, progress: Progress | None, limit: int | None = None) -> tuple[Path, str | None]:
    """(local copy, a note for the user when it is a cached copy that could not be checked). A file over
    `limit` bytes raises TooLarge once its header and manifest are read (the connection is then closed,
    before its bytes are sent)."""
    s = parse_ssh_spec(spec)
    try:
        root, refused = remote_cache.open_root()
    except OSError as exc:
        raise MlptuiError(f"{s.display}: cannot write the local copy in {remote_cache.cache_root()}: "
                          f"{exc.strerror or exc}") from None
    cached = remote_cache.lookup(s.endpoint, s.path, root)
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
        if _first(s, fields, ("DIR", "SAME", "DATA")) == "DIR":
            raise MlptuiError(f"{s.display}: is a folder, not a trace file")
        answer = _FileAnswer(s, fields)
        manifest = session.read_exact(answer.manifest_len) if answer.manifest_len else b""
        if limit is not None and answer.size > limit:
            raise TooLarge(spec, answer.size, manifest)
        if answer.status == "SAME":
            if cached is None or (answer.size, answer.mtime) != (cached.size, cached.mtime):
                raise _malformed(s, fields)     # we offered no copy, or another one
            if manifest:
                remote_cache.CacheWriter.refresh_manifest(cached.path, manifest)
            return cached.path, refused
        remote_cache.check_room(s.display, answer.size, root)       # before a byte of it arrives
        return _receive(session, s, answer.size, answer.mtime, manifest, answer.enc, progress, root), refused
    finally:
        session.close()


def _receive(session: _Session, s: SshSpec, size: int, mtime: int, manifest: bytes, enc: str,
             progress: Progress | None, root: Path | None = None) -> Path:
    """Receive exactly `size` bytes (after inflating) into the cache; a remote that sends more is refused
    before the excess is written anywhere."""
    try:
        writer = remote_cache.CacheWriter(s.endpoint, s.path, size, mtime, root)
    except OSError as exc:
        raise MlptuiError(f"{s.display}: cannot write the local copy in {root or remote_cache.cache_root()}: "
                          f"{exc.strerror or exc}") from None
    inflate = zlib.decompressobj(wbits=31) if enc == "gzip" else None

    def too_much() -> MlptuiError:
        return MlptuiError(f"{s.display}: the remote sent more than the {size} bytes it announced; "
                           "refused (the file is changing, or the remote is not answering as expected)")

    def put(data: bytes) -> None:
        if writer.written + len(data) > size:
            raise too_much()
        writer.write(data)

    try:
        if progress:
            progress(0, size)
        for chunk in session.chunks():
            if inflate is None:
                put(chunk)
            else:
                if inflate.eof:
                    raise too_much()        # bytes after the end of the gzip stream
                # Never inflate more than one byte past what is still expected: a small gzip stream can
                # stand for gigabytes.
                put(inflate.decompress(chunk, size - writer.written + 1))
                while inflate.unconsumed_tail and not inflate.eof:
                    put(inflate.decompress(inflate.unconsumed_tail, size - writer.written + 1))
            if progress:
                progress(min(writer.written, size), size)
        if inflate:
            if not inflate.eof:
                raise MlptuiError(f"{s.display}: the compressed stream ended early; try again")
            if inflate.unused_data:
                raise too_much()
        if writer.written != size:
            raise MlptuiError(f"{s.display}: received {writer.written} of {size} bytes "
                              f"(the file changed or the connection dropped); try again")
        if manifest:
            writer.write_manifest(manifest)
        return writer.commit()
    except zlib.error:
        writer.abort()
        raise MlptuiError(f"{s.display}: corrupt data on the wire; try again") from None
    except OSError as exc:      # the local disk, not the remote (full, read-only cache folder)
        writer.abort()
        raise MlptuiError(f"{s.display}: cannot write the local copy: {exc.strerror or exc}") from None
    except BaseException:
        writer.abort()
        raise


def open_trace(spec: str, progress: Progress | None = None, limit: int | None = None) -> Trace:
    """The remote trace `spec`, loaded from its local copy; over `limit` bytes: TooLarge, nothing fetched."""
    from mlptui.trace.parse.load import load_trace

    path, note = _fetch(spec, progress, limit)
    return load_trace(path, source=spec, progress=progress, notes=[note] if note else [])   # with the manifest beside it
