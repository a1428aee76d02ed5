"""The user's cache folders, safe on a machine shared with other users.

    user_cache_base() -> Path                  $XDG_CACHE_HOME, or ~/.cache (a relative XDG_CACHE_HOME is
                                               invalid by the XDG spec and ignored)
    private_folder(base, parts) -> Path         base/parts…, made 0700 where missing, each part checked

A cache holds what the user's traces hold (op and kernel names), and what it holds is trusted on the
next open: so each folder mlptui makes under the base (`mlptui`, `mlptui/index`, …) must be a real folder
(not a symbolic link), owned by this user and writable by no one else, or it is refused with one line
(UnsafeFolder). One of the user's own that others may read (made 0755 by an earlier version) is made
0700. Group write counts as others' unless the group is the user's own private group (named as the user,
no other member listed: the user-private-group convention, where umask 002 is the default). The base itself may be a link (the user's choice of where caches live) but must belong to this
user or root and, unless sticky like /tmp, be writable by no one else: whoever can write it can swap
the folders under it. Modes are set on descriptors, never through the process umask.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from mlptui.base.errors import MlptuiError

_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class UnsafeFolder(MlptuiError):
    """A cache folder that someone else could have written or could redirect."""


def user_cache_base() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base)


def private_folder(base: Path, parts: Sequence[str]) -> Path:
    """`base`/`parts`, every part made (mode 0700) when missing and checked as the module says. Raises
    UnsafeFolder when a part or the base may not be trusted, OSError when it cannot be made."""
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
    except FileExistsError:
        pass            # not a folder: the open says so (ENOTDIR)
    fd = os.open(base, _DIR)
    try:
        _check_base(base, os.fstat(fd))
        path = base
        for part in parts:
            path = path / part
            try:
                os.mkdir(part, 0o700, dir_fd=fd)
            except FileExistsError:
                pass
            try:
                inner = os.open(part, _DIR | _NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if os.path.islink(path):
                    raise UnsafeFolder(f"{path} is a symbolic link") from None
                if not os.path.isdir(path):
                    raise UnsafeFolder(f"{path} is not a folder") from None
                raise exc
            os.close(fd)
            fd = inner
            _make_private(path, fd)
        return path
    finally:
        os.close(fd)


def is_private(path: Path) -> bool:
    """Whether `path` is (still) a real folder of this user's that no one else can write: checked again
    right before anything in it is deleted."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not _others_can_write(st)


def _others_can_write(st: os.stat_result) -> bool:
    return bool(st.st_mode & 0o002 or (st.st_mode & 0o020 and not _private_group(st.st_gid, st.st_uid)))


@functools.cache
def _private_group(gid: int, uid: int) -> bool:
    try:
        import grp
        import pwd

        user = pwd.getpwuid(uid).pw_name
        group = grp.getgrgid(gid)
    except (ImportError, KeyError):
        return False
    return group.gr_name == user and set(group.gr_mem) <= {user}


def _check_base(base: Path, st: os.stat_result) -> None:
    if st.st_uid not in (os.geteuid(), 0):
        raise UnsafeFolder(f"{base} belongs to {_owner(st.st_uid)}, not to you")
    if _others_can_write(st) and not st.st_mode & stat.S_ISVTX:
        raise UnsafeFolder(f"{base} can be written by other users (mode {stat.S_IMODE(st.st_mode):o})")


def _make_private(path: Path, fd: int) -> None:
    st = os.fstat(fd)
    if st.st_uid != os.geteuid():
        raise UnsafeFolder(f"{path} belongs to {_owner(st.st_uid)}, not to you")
    if _others_can_write(st):
        raise UnsafeFolder(f"{path} can be written by other users (mode {stat.S_IMODE(st.st_mode):o}); "
                           f"`chmod 700 {path}` if only you did")
    if stat.S_IMODE(st.st_mode) != 0o700:
        try:
            os.fchmod(fd, 0o700)
        except OSError:
            pass        # a read-only file system: its entries are still served, none is written


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"user {pwd.getpwuid(uid).pw_name} ({uid})"
    except (ImportError, KeyError):
        return f"user {uid}"
