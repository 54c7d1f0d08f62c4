"""Where nupp keeps files between runs, and who may write there.

The cache folder (`NUPP_CACHE_DIR`, else `$XDG_CACHE_HOME/nupp`, else
`~/.cache/nupp`) holds shared libraries that nupp loads and runs, so whoever
can write to it can plant code.  As ccache and pip do, nupp creates it (and
any missing folder above it) with mode 0700, and refuses to use one that
another user owns or that its group or others may write to.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import contextmanager
from pathlib import Path

PRIVATE_MODE = 0o700


class NuppEnvironmentError(OSError):
    """What nupp needs from the machine is missing, broken or unsafe: a private,
    writable cache folder, a working C compiler, a writable output.  The
    message names the fix.  (An OSError, so code that can go without the
    cache, like the parser's table cache, goes without it.)"""


def configured_cache_dir() -> Path:
    """`NUPP_CACHE_DIR`, else `$XDG_CACHE_HOME/nupp`, else `~/.cache/nupp`."""
    configured = os.environ.get("NUPP_CACHE_DIR")
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "nupp"


def cache_dir() -> Path:
    """The cache folder, created private if missing; NuppEnvironmentError if it
    cannot be made, is not a folder, or another user could write to it."""
    return private_dir(configured_cache_dir())


def private_dir(folder: Path) -> Path:
    """`folder`, created with mode 0700 (each missing level) and checked private."""
    try:
        _make_dirs(folder)
        info = os.stat(folder)
    except OSError as err:
        raise NuppEnvironmentError(f"cannot create the cache folder '{folder}': {_reason(err)}; "
                                   f"{_ELSEWHERE}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise NuppEnvironmentError(f"the cache folder '{folder}' is a file, not a folder; {_ELSEWHERE}")
    unsafe = _unsafe_because(info)
    if unsafe:
        fix = "" if info.st_uid != os.geteuid() else f"make it private (chmod 700 '{folder}') or "
        raise NuppEnvironmentError(
            f"nupp refuses to load native code from the cache folder '{folder}': {unsafe}, so they could "
            f"plant a library in it; {fix}point NUPP_CACHE_DIR at a folder of your own")
    return folder


def is_private_file(path: Path) -> bool:
    """A regular file (not a link) that only the current user may write to."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and not _unsafe_because(info)


@contextmanager
def writing_to_cache(folder: Path):
    """Turn a failed write under the cache folder into a NuppEnvironmentError naming the fix."""
    try:
        yield
    except NuppEnvironmentError:
        raise
    except OSError as err:
        fix = ("free some space" if err.errno in (errno.ENOSPC, errno.EDQUOT)
               else f"make it writable (chmod u+w '{folder}')")
        raise NuppEnvironmentError(f"cannot write to the cache folder '{folder}': {_reason(err)}; "
                                   f"{fix} or point NUPP_CACHE_DIR at another folder") from None


_ELSEWHERE = "point NUPP_CACHE_DIR at a folder you can write"


def _make_dirs(folder: Path) -> None:
    try:
        folder.mkdir(mode=PRIVATE_MODE)
    except FileNotFoundError:
        _make_dirs(folder.parent)
        folder.mkdir(mode=PRIVATE_MODE, exist_ok=True)
    except FileExistsError:
        pass


def _unsafe_because(info: os.stat_result) -> str | None:
    """Why another user could write to what `info` describes, or None."""
    if info.st_uid != os.geteuid():
        return f"it belongs to {_user(info.st_uid)} while nupp runs as {_user(os.geteuid())}"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = "its group and everyone" if info.st_mode & stat.S_IWOTH and info.st_mode & stat.S_IWGRP else (
            "everyone" if info.st_mode & stat.S_IWOTH else "its group")
        return f"{who} may write to it (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def _user(uid: int) -> str:
    try:
        import pwd
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _reason(err: OSError) -> str:
    return err.strerror or type(err).__name__
