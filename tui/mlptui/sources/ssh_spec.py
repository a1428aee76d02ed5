"""Parse and validate remote trace specs: scp-like `[user@]host:path` and `ssh://[user@]host[:port]/path`.

Validation is strict because the host and user end up on an ssh command line: a host that looks like
an option (`-oProxyCommand=...`) or holds anything but host-name characters is refused here, before
any process starts.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from mlptui.base.errors import MlptuiError
from mlptui.base.text import printable

_HOST_RE = re.compile(r"^(?:[A-Za-z0-9_](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?|\[[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?\])$")
_USER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")
# scp-like: what precedes the first ':' holds no '/' (else it is a local path, as scp decides).
_SCP_RE = re.compile(r"^(?P<login>[^/:\[\]]*|[^/:\[\]]*@?\[[^\]/]*\]):(?P<path>.*)$", re.S)


@dataclass(frozen=True)
class SshSpec:
    host: str
    path: str                  # as the remote shell should see it; may start with `~`
    user: str | None = None
    port: int | None = None
    url_form: bool = False     # written as ssh://... (listings answer in the same form)

    def spec_for(self, path: str) -> str:
        """A spec naming `path` on the same host, spelled like this one."""
        host = self.host
        login = f"{self.user}@{host}" if self.user else host
        if self.url_form:
            port = f":{self.port}" if self.port else ""
            tail = path if path.startswith("/") else "/" + path
            return f"ssh://{login}{port}{tail}"
        return f"{login}:{path}"

    @property
    def display(self) -> str:
        """The spec for messages: control characters in the path spelled out (one line, no escapes)."""
        return printable(self.spec_for(self.path))

    @property
    def endpoint(self) -> str:
        """user@host:port, for cache keys and messages."""
        login = f"{self.user}@{self.host}" if self.user else self.host
        return f"{login}:{self.port}" if self.port else login


def is_ssh_spec(spec: str) -> bool:
    """True when `spec` reads as a remote spec (it may still be refused by `parse_ssh_spec`)."""
    if spec.startswith("ssh://"):
        return True
    if "://" in spec or not _SCP_RE.match(spec):
        return False
    # A local file whose name holds a ':' wins over the remote reading, as with scp's `./a:b`.
    return not os.path.exists(spec)


def parse_ssh_spec(spec: str) -> SshSpec:
    """Split and validate a remote spec; raises MlptuiError with a one-line reason."""
    if "\0" in spec:
        raise MlptuiError("remote spec contains a NUL byte")
    if spec.startswith("ssh://"):
        rest = spec[len("ssh://"):]
        authority, slash, path = rest.partition("/")
        if not slash or not path:
            raise MlptuiError(f"{spec!r}: expected ssh://[user@]host[:port]/path")
        # ssh://host/~/x is relative to the remote home, like git's ssh URLs.
        path = path if path.startswith("~") else "/" + path
        user, _, hostport = authority.rpartition("@")
        host, port = _split_port(hostport, spec)
        return _checked(SshSpec(host=host, path=path, user=user or None, port=port, url_form=True), spec)
    m = _SCP_RE.match(spec)
    if not m:
        raise MlptuiError(f"{spec!r}: expected host:path or ssh://[user@]host[:port]/path")
    user, _, host = m.group("login").rpartition("@")
    path = m.group("path") or "."
    return _checked(SshSpec(host=host, path=path, user=user or None), spec)


def _split_port(hostport: str, spec: str) -> tuple[str, int | None]:
    if hostport.startswith("["):
        host, _, tail = hostport.partition("]")
        host += "]"
        port = tail[1:] if tail.startswith(":") else tail
    elif hostport.count(":") == 1:
        host, _, port = hostport.partition(":")
    else:
        host, port = hostport, ""
    if port == "":
        return host, None
    if not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:    # ASCII digits only
        raise MlptuiError(f"{spec!r}: bad port {port!r}")
    return host, int(port)


def _checked(s: SshSpec, spec: str) -> SshSpec:
    if not s.host:
        raise MlptuiError(f"{spec!r}: no host name")
    if s.host.startswith("-") or not _HOST_RE.match(s.host):
        raise MlptuiError(f"{spec!r}: refusing host {s.host!r} (not a plain host name; options go in ~/.ssh/config)")
    if s.user is not None and not _USER_RE.match(s.user):
        raise MlptuiError(f"{spec!r}: refusing user name {s.user!r}")
    return s
