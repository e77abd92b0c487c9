"""The C++ toolchain PyPI carries, for install.py on machines with no compiler (Windows portable, desktop
Linux without build tools): zig as compiler and linker, CMake, Ninja and nlohmann_json's headers, pinned in
pypi_toolchain.txt and installed as wheels into <pack>/build/tools/ (never into ComfyUI's own Python, whose
site-packages may be read-only and must not gain build tools). Only the estimator core is built with it:
no static archive (HEADROOM_CORE_ARCHIVE=OFF), so neither `ar` nor `lib.exe` is needed, and zig links its
libc++ into the library, which then needs only the C library of the OS.

Nothing half-written is ever used: the wheels go into a folder that is renamed into place once pip is
done, and a second install that starts meanwhile is told to wait (a lock file with the owner's pid)."""
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PINS_FILE = Path(__file__).with_name("pypi_toolchain.txt")
PIP_TIMEOUT_S = 1800  # zig's wheel is ~50 MB; a slow line takes minutes
STALE_LOCK_S = 3 * 3600  # a lock older than any install (its owner died without removing it)
EXE = ".exe" if os.name == "nt" else ""


@dataclass(frozen=True)
class Toolchain:
    root: Path
    zig: Path
    cmake: Path
    ninja: Path
    json_include: Path

    def zig_version(self):
        try:
            out = subprocess.run([str(self.zig), "version"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() or None


def pins(path=PINS_FILE):
    lines = (line.split("#", 1)[0].strip() for line in Path(path).read_text().splitlines())
    return [line for line in lines if line]


def tools_dir(build: Path, pin_list=None) -> Path:
    """One folder per pin set, so changing a pin fetches afresh and never mixes two versions."""
    digest = hashlib.sha256("\n".join(pin_list or pins()).encode()).hexdigest()[:12]
    return Path(build) / "tools" / f"pypi-{digest}"


def _first(*candidates):
    return next((p for p in candidates if p.is_file()), None)


def locate(root: Path):
    """The four tools inside an installed folder, or None when any is missing."""
    root = Path(root)
    zig = _first(root / "ziglang" / f"zig{EXE}")
    cmake = _first(root / "cmake" / "data" / "bin" / f"cmake{EXE}")
    # ninja's wheel puts the program among its scripts (bin/ or Scripts/), older ones under data/bin.
    ninja = _first(root / "bin" / f"ninja{EXE}", root / "Scripts" / f"ninja{EXE}",
                   root / "ninja" / "data" / "bin" / f"ninja{EXE}")
    include = root / "nlohmann_json" / "include"
    if not (zig and cmake and ninja and (include / "nlohmann" / "json.hpp").is_file()):
        return None
    return Toolchain(root, zig, cmake, ninja, include)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if os.name == "nt":
        import ctypes
        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        ctypes.windll.kernel32.CloseHandle(handle)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Lock:
    """<folder>/.install.lock holding the owner's pid; a lock whose owner is gone (or is ancient) is taken over."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / ".install.lock"
        self.held = False

    def acquire(self):
        """None when held, else the reason it is not."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    owner = int(self.path.read_text().strip() or "0")
                    age = time.time() - self.path.stat().st_mtime
                except (OSError, ValueError):
                    owner, age = 0, STALE_LOCK_S + 1
                if _pid_alive(owner) and age < STALE_LOCK_S:
                    return f"another Headroom install is running (pid {owner}); let it finish, then run install.py again"
                self.path.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as f:
                f.write(str(os.getpid()))
            self.held = True
            return None
        return f"could not take the lock {self.path}"

    def release(self):
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False


def pip_failure_reason(stderr: str) -> str:
    """pip's own last error line, in a form a user can act on."""
    lines = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")] or lines[-1:]
    text = errors[-1].removeprefix("ERROR:").strip() if errors else "no message"
    low = " ".join(lines).lower()
    if "no space left" in low or "errno 28" in low:
        return f"the disk is full ({text})"
    if "permission denied" in low or "errno 13" in low or "read-only file system" in low:
        return f"the folder cannot be written ({text})"
    if ("could not find a version" in low or "no matching distribution" in low or "connection" in low
            or "temporary failure in name resolution" in low or "network is unreachable" in low):
        return f"PyPI cannot be reached or has no matching wheel ({text})"
    return text


def ensure(build: Path, python=sys.executable, run=subprocess.run):
    """(Toolchain, None) once the pinned tools are in place under build/tools/, else (None, reason)."""
    pin_list = pins()
    root = tools_dir(build, pin_list)
    found = locate(root)
    if found:
        return found, None
    lock = Lock(root.parent)
    try:
        busy = lock.acquire()
    except OSError as e:
        return None, f"cannot write {root.parent} ({e.strerror or e})"
    if busy:
        return None, busy
    partial = root.parent / f"{root.name}.partial-{os.getpid()}"
    try:
        found = locate(root)  # another install may have finished while this one waited for the lock
        if found:
            return found, None
        shutil.rmtree(partial, ignore_errors=True)
        cmd = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet",
               "--no-deps", "--only-binary", ":all:", "--target", str(partial), *pin_list]
        try:
            out = run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return None, f"pip did not finish within {PIP_TIMEOUT_S // 60} minutes"
        except OSError as e:
            return None, f"cannot start pip ({e})"
        if out.returncode != 0:
            return None, pip_failure_reason(out.stderr)
        if not locate(partial):
            return None, f"pip installed {', '.join(pin_list)} but the programs are not where they should be in {partial}"
        shutil.rmtree(root, ignore_errors=True)
        os.replace(partial, root)
        return locate(root), None
    except OSError as e:
        return None, f"cannot write {root.parent} ({e.strerror or e})"
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        lock.release()


def write_cmake_files(tc: Toolchain, folder: Path) -> Path:
    """A toolchain file with zig as the C and C++ compiler (CMake takes the mandatory `cc`/`c++` argument
    as the list's second element) and a package config for nlohmann_json's headers from the wheel.
    Returns the folder for -Dnlohmann_json_DIR; the toolchain file lies in it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    zig = tc.zig.as_posix()
    (folder / "zig-toolchain.cmake").write_text(
        f'set(CMAKE_C_COMPILER "{zig}" cc)\nset(CMAKE_CXX_COMPILER "{zig}" c++)\n')
    include = tc.json_include.as_posix()
    (folder / "nlohmann_jsonConfig.cmake").write_text(
        "add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)\n"
        f'set_target_properties(nlohmann_json::nlohmann_json PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "{include}")\n')
    version = next((p.split("==", 1)[1] for p in pins() if p.startswith("nlohmann-json==")), "3.12.0")
    (folder / "nlohmann_jsonConfigVersion.cmake").write_text(
        f'set(PACKAGE_VERSION "{version}")\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n')
    return folder


def build_steps(tc: Toolchain, pack: Path, build_dir: Path, jobs: int):
    """The configure and build commands for the core library alone."""
    deps = write_cmake_files(tc, Path(build_dir) / "deps")
    configure = [str(tc.cmake), "-S", str(pack), "-B", str(build_dir), "-G", "Ninja",
                 f"-DCMAKE_MAKE_PROGRAM={tc.ninja}", f"-DCMAKE_TOOLCHAIN_FILE={deps / 'zig-toolchain.cmake'}",
                 "-DCMAKE_BUILD_TYPE=Release", "-DHEADROOM_TORCH=OFF", "-DHEADROOM_CUDA=OFF",
                 "-DHEADROOM_PYTHON=OFF", "-DHEADROOM_TESTS=OFF", "-DHEADROOM_CORE_ARCHIVE=OFF",
                 f"-Dnlohmann_json_DIR={deps}"]
    build = [str(tc.cmake), "--build", str(build_dir), "--target", "headroom_capi", "-j", str(jobs)]
    return [configure, build]


def library_name() -> str:
    system = platform.system()
    return {"Windows": "headroom_core.dll", "Darwin": "libheadroom_core.dylib"}.get(system, "libheadroom_core.so")


def publish(built_capi: Path, dest_capi: Path, record_suffix: str) -> Path:
    """Copies the built library and its record to where the nodes look: the library first, its record
    last, each through a temporary name, so a stop in between leaves a library without a record, which
    the nodes refuse, never a record that vouches for a half-copied file."""
    name = library_name()
    dest_capi = Path(dest_capi)
    dest_capi.mkdir(parents=True, exist_ok=True)
    (dest_capi / (name + record_suffix)).unlink(missing_ok=True)
    for file in (name, name + record_suffix):
        tmp = dest_capi / f".{file}.tmp-{os.getpid()}"
        shutil.copyfile(Path(built_capi) / file, tmp)
        os.replace(tmp, dest_capi / file)
    return dest_capi / name
