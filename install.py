"""Puts Headroom's native modules in place for the Python (and torch) that runs ComfyUI.

ComfyUI-Manager runs this file with ComfyUI's interpreter after cloning the pack; users can run it by
hand the same way: `<python of ComfyUI> install.py`. First it looks for a prebuilt decoder wheel that
matches the running torch X.Y, CUDA major, Python and platform exactly (nodes/native/decoder_wheels.json;
never a near match) and proves it in a child process. Then it builds (toolchain_choice): with CMake and
a compiler on the machine (Linux, macOS; Windows only when asked) it configures CMake with that
interpreter, so the estimator (the C library headroom_core, no torch, any Python) lands in
<pack>/build/capi and the decoders (_headroom_torch, against the running torch) in <pack>/build/python,
where the nodes look for them. Without a compiler (Windows portable, desktop Linux) it fetches zig, CMake
and Ninja from PyPI into <pack>/build/tools and builds the core alone (nodes/native/pypi_toolchain.py). Each built library is then loaded once in a child
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
    BUILD = PACK / BUILD  # the same rule as nodes/native/native_loader.py


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


def native_module(name):
    """nodes/native/<name>.py with nodes/ mounted as a package whose __init__ is not run: importing the
    nodes package itself would pull in the whole pack (nodes/native/ imports nothing outside itself)."""
    import importlib
    import importlib.util
    if "headroom_install_nodes" not in sys.modules:
        spec = importlib.util.spec_from_file_location("headroom_install_nodes", PACK / "nodes" / "__init__.py",
                                                      submodule_search_locations=[str(PACK / "nodes")])
        sys.modules["headroom_install_nodes"] = importlib.util.module_from_spec(spec)
    return importlib.import_module("headroom_install_nodes.native." + name)


def decoder_wheels():
    return native_module("decoder_wheels")


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
    """HEADROOM_BUILD_FROM_SOURCE=1 asks for a build, =0 refuses one. Unset: build the decoders too where a
    compiler toolchain is the norm (Linux, macOS), never on Windows, where the portable build has none and
    the decoders come only as exact wheels."""
    choice = os.environ.get("HEADROOM_BUILD_FROM_SOURCE", "").strip()
    if choice in ("0", "1"):
        return choice == "1"
    return platform.system() != "Windows"


def system_compiler():
    """A C++ compiler on the PATH (or $CXX), else None."""
    cxx = os.environ.get("CXX", "").strip()
    if cxx and shutil.which(cxx.split()[0]):
        return cxx
    return next((c for c in ("c++", "g++", "clang++", "cl") if shutil.which(c)), None)


def toolchain_choice():
    """'system' (CMake and a compiler on this machine: the core and, with torch, the decoders), 'pypi' (the
    core alone, with zig, CMake and Ninja from PyPI: nodes/native/pypi_toolchain.py) or None (no build).
    HEADROOM_TOOLCHAIN=system|pypi forces one; HEADROOM_BUILD_FROM_SOURCE=0 builds nothing."""
    if os.environ.get("HEADROOM_BUILD_FROM_SOURCE", "").strip() == "0":
        return None
    forced = os.environ.get("HEADROOM_TOOLCHAIN", "").strip().lower()
    if forced in ("system", "pypi"):
        return forced
    if source_build_wanted() and shutil.which("cmake") and system_compiler():
        return "system"
    return "pypi"


def core_wheel_in_place():
    """True when a headroom_core wheel in this Python gives the nodes their core (then nothing is built)."""
    core_capi = native_module("core_capi")
    return any(path.parent != BUILD / "capi" and path.is_file() for path in core_capi.candidates(BUILD))


def minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds // 60:.0f} min {seconds % 60:.0f} s"


def build_core_with_pypi_toolchain(decoders_in_place=False):
    """Builds the core library alone with PyPI's toolchain into BUILD/pypi-core and puts it where the nodes
    look (BUILD/capi). Prints what it did; returns True when a library that loads is in place."""
    tc_mod = native_module("pypi_toolchain")
    started = time.monotonic()
    print(f"Headroom: no C++ compiler here; fetching zig, CMake and Ninja from PyPI into {BUILD / 'tools'} "
          "(once, about 500 MB) to build the estimator core")
    tc, why = tc_mod.ensure(BUILD)
    if tc is None:
        print(f"Headroom: could not get the toolchain: {why}. The nodes load and say the core is missing; "
              f"run again when that is fixed: \"{sys.executable}\" \"{PACK / 'install.py'}\"")
        return False
    fetched = time.monotonic() - started
    tree = BUILD / "pypi-core"
    log = BUILD / "pypi-core.log"
    for step in tc_mod.build_steps(tc, PACK, tree, build_jobs()):
        try:
            with open(log, "a") as out:
                result = subprocess.run(step, cwd=PACK, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        except OSError as e:
            print(f"Headroom: the core build could not run ({e}); the nodes load and say the core is missing.")
            return False
        if result.returncode != 0:
            print(f"Headroom: the core build failed (exit {result.returncode}); its output is in {log}. The nodes "
                  f"load and say the core is missing. Report it with that file.")
            return False
    built = tree / "capi"
    failures = prove_loads(tree)
    if failures or not (built / (tc_mod.library_name() + RECORD_SUFFIX)).is_file():
        why = failures[0][1] if failures else "left no record"
        print(f"Headroom: the core built with zig {why}; the nodes will not load it. Report this with {log}.")
        return False
    try:
        tc_mod.publish(built, BUILD / "capi", RECORD_SUFFIX)
    except OSError as e:
        print(f"Headroom: the core built but could not be put in {BUILD / 'capi'} ({e.strerror or e}).")
        return False
    decoders = ("the decoder wheel above decodes" if decoders_in_place else "the native decoders are left out (exact "
                "wheels only without a system compiler), so decoding uses ComfyUI's own tiled decode")
    print(f"Headroom: estimator core built with PyPI's zig {tc.zig_version() or '?'} in "
          f"{minutes(time.monotonic() - started)} (toolchain {minutes(fetched)}); {decoders}.")
    return True


def core_report() -> str:
    """One line on the estimator core: where the nodes will take it from (the same places, in the same
    order: nodes/native/core_capi.candidates), or what gets it there. A build counts only with its record, as
    for the nodes; the wheel's package is located, not imported."""
    core_capi = native_module("core_capi")
    for path in core_capi.candidates(BUILD):
        if path.parent == BUILD / "capi":
            if path.is_file() and Path(str(path) + RECORD_SUFFIX).is_file():
                return f"Headroom: estimator core: this pack's build ({path})."
        elif path.is_file():
            return f"Headroom: estimator core: the headroom_core wheel ({path.parent})."
    how = "run install.py again where PyPI can be reached (it fetches its own compiler when the machine has none)"
    return (f"Headroom: estimator core: not installed (no headroom_core wheel in this Python, no build): {how}. "
            f"Until then Preflight, the estimates and the OOM explainer say the core is missing.")


def build_with_system_toolchain(facts):
    """CMake and the machine's compiler: the core and CLI first, then the rest (the decoders against the
    running torch), so a decoder that fails to compile never hides that the core built. Returns the exit
    status: non-zero only when the core itself could not be built or crashes its loader."""
    print(f"Headroom: building for Python {platform.python_version()} ({sys.executable}), "
          f"torch {facts['torch_version'] or 'absent'}, CUDA {facts['cuda_version'] or 'none'}")
    jobs = str(build_jobs())
    info_file = BUILD / "python" / "headroom_build.json"
    if info_file.exists():
        info_file.unlink()  # a build that stops half-way must not leave the record of the previous one
    # --config: Visual Studio's generator (Windows without Ninja) ignores CMAKE_BUILD_TYPE and builds Debug.
    build = ["cmake", "--build", str(BUILD), "--config", "Release", "-j", jobs]
    decoders_failed = None
    for name, step in (("configure", configure_args(facts)), ("core", build + ["--target", "headroom_capi", "headroom"]),
                       ("decoders", build)):
        print("Headroom:", " ".join(step))
        result = subprocess.run(step, cwd=PACK)
        if result.returncode == 0:
            continue
        if name == "decoders":
            decoders_failed = result.returncode
            break
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
    if decoders_failed is not None:
        print(f"Headroom: the native decoders did not build (exit {decoders_failed}, errors above); the estimator "
              f"core did, and decoding falls back to ComfyUI's own tiled decode.")
    elif not failures:
        print(f"Headroom: built into {BUILD / 'capi'} and {BUILD / 'python'}; restart ComfyUI.")
    print(core_report())
    core_failed = any(path.parent.name == "capi" for path, _ in failures)
    return 1 if core_failed else 0


def main():
    facts = torch_facts()
    dw = decoder_wheels()
    reason = install_decoder_wheel(facts, dw)
    if reason is None:
        print("Headroom: decoder wheel installed and checked.")
    choice = toolchain_choice()
    forced = os.environ.get("HEADROOM_TOOLCHAIN", "").strip().lower() == "pypi"
    if choice == "pypi" and core_wheel_in_place() and not forced:
        choice = None  # the wheel already gives the nodes their core
    if choice == "system":
        return build_with_system_toolchain(facts)
    if reason is not None:
        print(dw.advice(reason))
    if choice == "pypi":
        build_core_with_pypi_toolchain(decoders_in_place=reason is None)
    print(core_report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
