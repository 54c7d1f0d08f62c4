"""Who may plant code: nupp loads shared libraries from its cache folder, so only the user may write there.

  * nupp creates the cache folder, every missing folder above it, and its
    own subfolders with mode 0700; libraries 0700, manifests 0600.
  * A cache folder that its group or everyone may write to, or that another
    user owns, is refused -- even holding an intact library whose manifest
    matches -- with a message naming the folder and the fix (exit 2 from the
    command line, NuppEnvironmentError from Python).  Nothing is loaded from it.
  * A library or manifest file inside that is not a private regular file of
    the user (another owner, group- or world-writable, a symbolic link) is not
    trusted: it is rebuilt, never loaded.
  * A folder made by an older nupp (0755, the user's own) is still used.
  * Where nothing native is built (`check`, `--aot off`), an unsafe cache
    only costs time: the parser's table cache is then not used.

Tests run as root under CI: ownership is tested on folders and files chowned
to another uid (root can), permission bits with chmod.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

import nupp
from nupp.emit_c.scalar import emit_module
from nupp.errors import Source
from nupp.paths import NuppEnvironmentError, cache_dir
from nupp.pipeline import compile_module
from nupp.targets.toolchain import build_library, find_toolchain

from .conftest import require_tool
from .test_compile_cache import CompilerRuns, call_bump, unique_module
from .test_environment_faults import assert_environment_fault, nupp_cli

OTHER_UID = 4242


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user takes root (CI runs the tests as root)")


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def build_bump(text: str) -> tuple[Path, str]:
    c = emit_module(compile_module(Source("bump.nupp", text)), "bump.nupp")
    return build_library(c.source, find_toolchain("gcc"), "bump.nupp"), c.cdef


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    text, constant = unique_module()
    (folder / "bump.nupp").write_text(text)
    (folder / "main.nupp").write_text('print(require("bump").bump(1))\n')
    folder.joinpath("expected").write_text(f"{1 + constant}\n")
    return folder


# ---- what nupp creates -----------------------------------------------------------------------

def test_created_folders_and_files_are_private(tmp_path, monkeypatch):
    require_tool("gcc")
    cache = tmp_path / "new" / "deeper" / "cache"
    monkeypatch.setenv("NUPP_CACHE_DIR", str(cache))
    library, _ = build_bump(unique_module()[0])
    assert library.parent == cache
    for folder in (tmp_path / "new", tmp_path / "new" / "deeper", cache):
        assert mode(folder) == 0o700, folder
    assert mode(library) == 0o700 and mode(library.with_suffix(".json")) == 0o600


def test_created_under_a_permissive_umask(tmp_path, monkeypatch):
    require_tool("gcc")
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path / "cache"))
    old = os.umask(0)
    try:
        library, _ = build_bump(unique_module()[0])
    finally:
        os.umask(old)
    assert mode(library.parent) == 0o700 and mode(library) == 0o700


def test_a_folder_made_by_an_older_nupp_is_still_used(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    cache.chmod(0o755)
    monkeypatch.setenv("NUPP_CACHE_DIR", str(cache))
    assert cache_dir() == cache


# ---- refused folders -------------------------------------------------------------------------

def _group_writable(folder: Path) -> None:
    folder.chmod(0o770)


def _world_writable(folder: Path) -> None:
    folder.chmod(0o757)


def _sticky_world_writable(folder: Path) -> None:
    folder.chmod(0o1777)  # like /tmp: still lets anyone add a file


def _another_owner(folder: Path) -> None:
    needs_root()
    os.chown(folder, OTHER_UID, OTHER_UID)


UNSAFE = {f.__name__.lstrip("_"): f for f in (_group_writable, _world_writable, _sticky_world_writable,
                                               _another_owner)}
WHY = {"group_writable": "its group may write to it (mode 0770)",
       "world_writable": "everyone may write to it (mode 0757)",
       "sticky_world_writable": "its group and everyone may write to it (mode 1777)",
       "another_owner": f"it belongs to uid {OTHER_UID} while nupp runs as uid"}


@pytest.mark.parametrize("unsafe", UNSAFE)
def test_an_unsafe_folder_is_refused_even_with_a_matching_library(unsafe, project, tmp_path, monkeypatch):
    """A library built (privately) first, so it is intact and its manifest matches: still not loaded."""
    require_tool("gcc")
    cache = tmp_path / "cache"
    env = {"NUPP_CACHE_DIR": str(cache)}
    first = nupp_cli("run", "--mode", "scalar", project / "main.nupp", env=env)
    assert first.stdout == project.joinpath("expected").read_text(), first.stderr
    UNSAFE[unsafe](cache)

    proc = nupp_cli("run", "--mode", "scalar", project / "main.nupp", env=env)
    assert_environment_fault(proc, f"refuses to load native code from the cache folder '{cache}'", WHY[unsafe],
                             "could plant a library", "NUPP_CACHE_DIR")
    assert (f"chmod 700 '{cache}'" in proc.stderr) == (unsafe != "another_owner")
    assert proc.stdout == ""
    monkeypatch.setenv("NUPP_CACHE_DIR", str(cache))
    with pytest.raises(NuppEnvironmentError, match="refuses to load native code"):
        nupp.load(project / "bump.nupp", mode="scalar")
    # where nothing native is loaded, the unsafe folder costs nothing but time
    assert nupp_cli("check", project / "bump.nupp", env=env).returncode == 0
    assert nupp_cli("run", "--aot", "off", project / "main.nupp", env=env).stdout == first.stdout


def test_the_fix_the_message_names_works(project, tmp_path):
    require_tool("gcc")
    cache = tmp_path / "cache"
    env = {"NUPP_CACHE_DIR": str(cache)}
    cache.mkdir()
    cache.chmod(0o777)
    assert nupp_cli("run", "--mode", "scalar", project / "main.nupp", env=env).returncode == 2
    cache.chmod(0o700)
    proc = nupp_cli("run", "--mode", "scalar", project / "main.nupp", env=env)
    assert proc.stdout == project.joinpath("expected").read_text(), proc.stderr


# ---- untrusted files in a private folder -----------------------------------------------------

def _file_of_another_owner(path: Path) -> None:
    needs_root()
    os.chown(path, OTHER_UID, OTHER_UID)


def _group_writable_file(path: Path) -> None:
    path.chmod(0o770)


def _world_writable_file(path: Path) -> None:
    path.chmod(0o666)


def _symbolic_link(path: Path) -> None:
    target = path.with_name("elsewhere" + path.suffix)
    shutil.copy2(path, target)
    path.unlink()
    path.symlink_to(target)


UNTRUSTED = {f.__name__.lstrip("_"): f for f in (_file_of_another_owner, _group_writable_file,
                                                  _world_writable_file, _symbolic_link)}


@pytest.mark.parametrize("which", ["library", "manifest"])
@pytest.mark.parametrize("untrusted", UNTRUSTED)
def test_an_untrusted_file_is_rebuilt_not_loaded(untrusted, which, tmp_path, monkeypatch):
    """The planted library computes something else and its manifest matches it: it must not run."""
    require_tool("gcc")
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path / "cache"))
    text, constant = unique_module()
    library, cdef = build_bump(text)
    # plant: another module's library under this key, with a manifest naming its hash
    planted_text = text.replace(f"a + {constant}", f"a + {constant + 1}")
    planted, _ = build_bump(planted_text)
    shutil.copy(planted, library)
    manifest = library.with_suffix(".json")
    data = json.loads(manifest.read_text())
    data["sha256"] = json.loads(planted.with_suffix(".json").read_text())["sha256"]
    manifest.write_text(json.dumps(data))
    manifest.chmod(0o600)
    UNTRUSTED[untrusted](library if which == "library" else manifest)

    counter = CompilerRuns(monkeypatch)
    rebuilt, _ = build_bump(text)
    assert counter.count == 1, "an untrusted entry was loaded instead of rebuilt"
    assert rebuilt == library and not rebuilt.is_symlink()
    assert rebuilt.stat().st_uid == os.geteuid() and mode(rebuilt) == 0o700
    assert call_bump(rebuilt, cdef, 1) == 1 + constant


def test_an_intact_private_entry_is_still_a_hit(tmp_path, monkeypatch):
    """The checks cost no rebuild of what nupp itself wrote."""
    require_tool("gcc")
    monkeypatch.setenv("NUPP_CACHE_DIR", str(tmp_path / "cache"))
    text = unique_module()[0] + f"-- {uuid.uuid4()}\n"
    build_bump(text)
    CompilerRuns(monkeypatch, forbid=True)
    build_bump(text)
