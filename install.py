"""Puts Headroom's native modules in place for the Python (and torch) that runs ComfyUI.

ComfyUI-Manager runs this file with ComfyUI's interpreter after cloning the pack; users can run it by
hand the same way: `<python of ComfyUI> install.py`. First it looks for a prebuilt decoder wheel that
matches the running torch X.Y, CUDA major, Python and platform exactly (nodes/decoder_wheels.json;
never a near match) and proves it in a child process. Then, where a source build is wanted (see
source_build_wanted: by default on Linux and macOS with CMake, never by default on Windows), it
configures CMake with that interpreter, so the estimator (the C library headroom_core, no torch, any
Python) lands in <pack>/build/capi and the decoders (_headroom_torch, against the running torch) in
<pack>/build/python, where the nodes look for them. Each built library is then loaded once in a child
Python (prove_loads): Headroom starts processes only here, at install time, never inside ComfyUI. Exit status 0
on success; on failure it says what is missing and the nodes keep working."""
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

PACK = Path(__file__).resolve().parent
BUILD = Path(os.environ.get("HEADROOM_BUILD_DIR") or PACK / "build")
if not BUILD.is_absolute():
    BUILD = PACK / BUILD  # the same rule as nodes/native_loader.py


def torch_facts():
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return {"torch_version": None, "cuda_version": None, "error": str(e)}
    return {"torch_version": torch.__version__, "cuda_version": torch.version.cuda}


def configure_args(facts):
    args = ["cmake", "-S", str(PACK), "-B", str(BUILD), "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython3_EXECUTABLE={sys.executable}", "-DHEADROOM_TESTS=OFF"]
    if shutil.which("ninja"):
        args += ["-G", "Ninja"]
    if shutil.which("ccache"):
        args += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    if facts["torch_version"] is None:
        args += ["-DHEADROOM_TORCH=OFF", "-DHEADROOM_CUDA=OFF"]
    elif not facts["cuda_version"]:
        args += ["-DHEADROOM_CUDA=OFF"]  # a CPU/ROCm torch: no kernels to link against
    return args


LIBRARY_PATTERNS = ("capi/libheadroom_core.so", "capi/libheadroom_core.dylib", "capi/headroom_core.dll",
                    "python/_headroom_torch*.so", "python/_headroom_torch*.pyd")
RECORD_SUFFIX = ".record"  # written beside each library by the build (native/cmake/record_library.cmake)
CHILD_TIMEOUT_S = 300  # a torch import on a slow disk with a virus scanner can take minutes
CHILD_RAISED = 17  # the child's exit status for "raised an exception" (anything else is a crash)
GIB = 1024 ** 3
GIB_PER_COMPILE_JOB = 2  # a LibTorch translation unit takes 1.5-2 GiB of RAM in g++


def usable_cpus() -> int:
    """CPUs this process may run on (the affinity mask in containers), else os.cpu_count()."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def ram_bytes():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def build_jobs(cpus=None, ram=None) -> int:
    """One compile per CPU, as long as the RAM holds that many LibTorch compiles; HEADROOM_BUILD_JOBS
    overrides. (It used to be CPUs - 1, which is 1 job on a 2-core machine: twice as slow.)"""
    override = os.environ.get("HEADROOM_BUILD_JOBS", "")
    if override.isdigit() and int(override) > 0:
        return int(override)
    cpus = usable_cpus() if cpus is None else cpus
    ram = ram_bytes() if ram is None else ram
    jobs = max(1, cpus)
    if ram:
        jobs = min(jobs, max(1, int(ram // (GIB_PER_COMPILE_JOB * GIB))))
    return jobs


def crash_text(returncode: int) -> str:
    if returncode < 0:
        import signal
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode:#x}" if returncode > 0xFFFF else f"exit status {returncode}"


def load_in_child(path: Path) -> str:
    """Loads one built library in a separate Python, as the nodes will: the core through ctypes (asking its
    interface version, then the catalog, whose first call reads every data file and, under a broken
    HEADROOM_DATA_DIR, throws and catches through the C boundary as a prompt would), the decoder module
    after torch. None when it loads or raises a Python exception (the nodes then report the loader's own
    words); else what happened to the child."""
    if path.parent.name == "capi":
        load = (f"    import ctypes\n    lib = ctypes.CDLL({str(path)!r})\n    lib.headroom_abi_version()\n"
                "    lib.headroom_call.restype = ctypes.c_void_p\n"
                "    lib.headroom_free.argtypes = [ctypes.c_void_p]\n"
                "    lib.headroom_free(lib.headroom_call(b'catalog', b'{}'))\n")
    else:
        load = ("    import importlib.util, torch\n"
                f"    spec = importlib.util.spec_from_file_location('_headroom_torch', {str(path)!r})\n"
                "    spec.loader.exec_module(importlib.util.module_from_spec(spec))\n")
    code = f"import sys\ntry:\n{load}except BaseException as e:\n    sys.exit({CHILD_RAISED})\n"
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"did not finish loading within {CHILD_TIMEOUT_S} s"
    return None if out.returncode in (0, CHILD_RAISED) else f"crashed the Python that loaded it ({crash_text(out.returncode)})"


def prove_loads(build: Path) -> list:
    """Loads every library the build recorded in a child Python, so one that crashes whoever loads it takes
    down that child now and not ComfyUI later. A library that crashed loses its record, which makes the
    nodes refuse it. Returns [(library, what happened)] for those."""
    failures = []
    for pattern in LIBRARY_PATTERNS:
        for path in sorted(Path(build).glob(pattern)):
            record = Path(str(path) + RECORD_SUFFIX)
            if not record.is_file():
                continue
            why = load_in_child(path)
            if why:
                record.unlink()
                failures.append((path, why))
    return failures


def nodes_module(name):
    """nodes/<name>.py with nodes/ mounted as a package whose __init__ is not run: importing the nodes
    package itself would pull in the whole pack."""
    import importlib
    import importlib.util
    if "headroom_install_nodes" not in sys.modules:
        spec = importlib.util.spec_from_file_location("headroom_install_nodes", PACK / "nodes" / "__init__.py",
                                                      submodule_search_locations=[str(PACK / "nodes")])
        sys.modules["headroom_install_nodes"] = importlib.util.module_from_spec(spec)
    return importlib.import_module("headroom_install_nodes." + name)


def decoder_wheels():
    return nodes_module("decoder_wheels")


def install_decoder_wheel(facts, dw):
    """Installs the decoder wheel that matches this torch exactly, if the manifest has one, and proves it in a
    child process. Returns None when it is in place, else the one-line reason."""
    if facts["torch_version"] is None:
        return "torch is not importable here, so no decoder module can be chosen"
    key = dw.running_key(facts["torch_version"], facts["cuda_version"])
    wheel, why = dw.select(dw.load_manifest(), key)
    if wheel is None:
        return why
    print(f"Headroom: installing the decoder wheel {wheel['file']} for {dw.describe(key)}")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--force-reinstall", wheel["url"]])
    if r.returncode != 0:
        return f"pip could not install {wheel['file']} (exit {r.returncode})"
    return dw.import_check(sys.executable, PACK)


def source_build_wanted():
    """HEADROOM_BUILD_FROM_SOURCE=1 asks for a build, =0 refuses one. Unset: build where a compiler toolchain
    is the norm (Linux, macOS with CMake), never on Windows, where the portable build has none."""
    choice = os.environ.get("HEADROOM_BUILD_FROM_SOURCE", "").strip()
    if choice in ("0", "1"):
        return choice == "1"
    return platform.system() != "Windows" and shutil.which("cmake") is not None


def toolchain_advice():
    if platform.system() == "Linux":
        return ("Install CMake >= 3.18, Ninja and a C++17 compiler (Debian/Ubuntu: apt install cmake ninja-build g++ "
                "nlohmann-json3-dev; for the decoders also pip install pybind11)")
    if platform.system() == "Darwin":
        return "Install CMake >= 3.18, Ninja and Xcode's command-line tools (brew install cmake ninja nlohmann-json)"
    return ("Install Visual Studio Build Tools (C++), CMake >= 3.18 and nlohmann_json (vcpkg install nlohmann-json), "
            "and, for the decoders, pip install pybind11 into ComfyUI's Python")


def core_report() -> str:
    """One line on the estimator core: where the nodes will take it from (the same places, in the same
    order: nodes/core_capi.candidates), or what gets it there. A build counts only with its record, as
    for the nodes; the wheel's package is located, not imported."""
    core_capi = nodes_module("core_capi")
    for path in core_capi.candidates(BUILD):
        if path.parent == BUILD / "capi":
            if path.is_file() and Path(str(path) + RECORD_SUFFIX).is_file():
                return f"Headroom: estimator core: this pack's build ({path})."
        elif path.is_file():
            return f"Headroom: estimator core: the headroom_core wheel ({path.parent})."
    how = ("set HEADROOM_BUILD_FROM_SOURCE=1 and run install.py again with Visual Studio Build Tools, CMake and "
           "nlohmann_json" if platform.system() == "Windows" else
           "run install.py again where CMake and a C++17 compiler are installed")
    return (f"Headroom: estimator core: not installed (no headroom_core wheel in this Python, no build): {how}. "
            f"Until then Preflight, the estimates and the OOM explainer say the core is missing.")


def main():
    facts = torch_facts()
    dw = decoder_wheels()
    reason = install_decoder_wheel(facts, dw)
    if reason is None:
        print("Headroom: decoder wheel installed and checked.")
    if not source_build_wanted():
        if reason is not None:
            print(dw.advice(reason))
        print(core_report())
        return 0
    print(f"Headroom: building for Python {platform.python_version()} ({sys.executable}), "
          f"torch {facts['torch_version'] or 'absent'}, CUDA {facts['cuda_version'] or 'none'}")
    missing = [tool for tool in ("cmake",) if shutil.which(tool) is None]
    if missing:
        print(f"Headroom: cannot build: {', '.join(missing)} not found. {toolchain_advice()}, "
              f"then run: \"{sys.executable}\" \"{PACK / 'install.py'}\"")
        return 1
    jobs = str(build_jobs())
    info_file = BUILD / "python" / "headroom_build.json"
    if info_file.exists():
        info_file.unlink()  # a build that stops half-way must not leave the record of the previous one
    # --config: Visual Studio's generator (Windows without Ninja) ignores CMAKE_BUILD_TYPE and builds Debug.
    steps = [configure_args(facts), ["cmake", "--build", str(BUILD), "--config", "Release", "-j", jobs]]
    for step in steps:
        print("Headroom:", " ".join(step))
        result = subprocess.run(step, cwd=PACK)
        if result.returncode != 0:
            print(f"Headroom: build step failed (exit {result.returncode}); the nodes will load and say so. "
                  f"Fix the error above and rerun: \"{sys.executable}\" \"{PACK / 'install.py'}\"")
            return result.returncode
    failures = prove_loads(BUILD)
    for path, why in failures:
        print(f"Headroom: the build's {path.name} {why}; the nodes will refuse it. Report this with the "
              f"compiler and CMake versions, then rerun: \"{sys.executable}\" \"{PACK / 'install.py'}\"")
    (BUILD / "python").mkdir(parents=True, exist_ok=True)
    info = {"python": sys.executable, "python_version": platform.python_version(), **facts,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    tmp = info_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(info, indent=1) + "\n")
    os.replace(tmp, info_file)  # all or nothing, like the modules it describes
    if failures:
        return 1
    print(f"Headroom: built into {BUILD / 'capi'} and {BUILD / 'python'}; restart ComfyUI.")
    print(core_report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
