"""scripts/run.sh, the main job, installs only what building the CLI needs (issue 24, item 4): deps.sh's
`run` mode asks apt for a compiler, CMake, Ninja and nlohmann_json, never the test tools (Wine, MinGW,
Chromium, clang) and makes no Python venv; the default mode (scripts/test.sh) still asks for them."""
import os
import subprocess
from pathlib import Path

from conftest import REPO


def apt_requests(tmp_path: Path, *args):
    """Runs deps.sh with a dpkg-query that finds nothing installed and an apt-get that only writes down
    what it was asked for. Returns (packages asked for, whether a venv was made)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    log = tmp_path / "apt.log"
    (fake / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
    (fake / "apt-get").write_text(f'#!/bin/sh\n[ "$1" = install ] && echo "$@" >> "{log}"\nexit 0\n')
    (fake / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    # A python3 that fails: the run mode must not need one; the test mode stops at the venv step.
    (fake / "python3").write_text("#!/bin/sh\nexit 3\n")
    for f in fake.iterdir():
        f.chmod(0o755)
    work = tmp_path / "clone"
    (work / "scripts").mkdir(parents=True)
    (work / "scripts" / "deps.sh").write_text((REPO / "scripts" / "deps.sh").read_text())
    (work / "requirements-dev.txt").write_text("")
    env = {"PATH": f"{fake}:/usr/bin:/bin", "HOME": str(tmp_path), "HEADROOM_BASE_PYTHON": str(fake / "python3")}
    out = subprocess.run(["bash", str(work / "scripts" / "deps.sh"), *args], capture_output=True, text=True,
                         env=env, timeout=120)
    asked = set(log.read_text().split()) - {"install", "-y", "-qq", "--no-install-recommends"} if log.exists() else set()
    return asked, out, (work / ".venv").exists()


def test_run_mode_installs_only_the_cli_toolchain(tmp_path):
    asked, out, venv = apt_requests(tmp_path, "run")
    assert out.returncode == 0, out.stderr
    assert asked == {"build-essential", "cmake", "ninja-build", "nlohmann-json3-dev"}
    assert not venv


def test_test_mode_still_installs_the_test_tools(tmp_path):
    asked, _, _ = apt_requests(tmp_path)
    assert {"wine", "mingw-w64", "chromium", "clang"} <= asked
