"""Puts Headroom's native modules in place for the Python (and torch) that runs ComfyUI.

ComfyUI-Manager runs this file with ComfyUI's interpreter after cloning the pack; users can run it by
hand the same way: `<python of ComfyUI> install.py`. First it looks for a prebuilt decoder wheel that
matches the running torch X.Y, CUDA major, Python and platform exactly (nodes/decoder_wheels.json;
never a near match) and proves it in a child process. Then, where a source build is wanted (see
source_build_wanted: by default on Linux and macOS with CMake, never by default on Windows), it
configures CMake with that interpreter, so the estimator (the C library headroom_core, no torch, any
Python) lands in <pack>/build/capi and the decoders (_headroom_torch, against the running torch) in
<pack>/build/python, where the nodes look for them. Exit status 0 on success; on failure it says what is
missing and the nodes keep working."""
import hashlib
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


MODULE_PREFIXES = ("_headroom_torch", "libheadroom_core", "headroom_core")
MODULE_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")
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


def module_records(folder: Path) -> dict:
    """{file name: {size, sha256}} of the built libraries: the loader checks one against this
    before loading it into ComfyUI, so a file cut short or changed after the build is caught."""
    records = {}
    if not Path(folder).is_dir():
        return records
    for path in sorted(Path(folder).iterdir()):
        if path.is_file() and path.name.startswith(MODULE_PREFIXES) and path.name.endswith(MODULE_SUFFIXES):
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            records[path.name] = {"size": path.stat().st_size, "sha256": digest.hexdigest()}
    return records


def decoder_wheels():
    """nodes/decoder_wheels.py, loaded by path: importing the nodes package would pull in the whole pack."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("headroom_decoder_wheels", PACK / "nodes" / "decoder_wheels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def main():
    facts = torch_facts()
    dw = decoder_wheels()
    reason = install_decoder_wheel(facts, dw)
    if reason is None:
        print("Headroom: decoder wheel installed and checked.")
    if not source_build_wanted():
        if reason is not None:
            print(dw.advice(reason))
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
    (BUILD / "python").mkdir(parents=True, exist_ok=True)
    info = {"python": sys.executable, "python_version": platform.python_version(), **facts,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "modules": {**module_records(BUILD / "python"), **module_records(BUILD / "capi")}}
    tmp = info_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(info, indent=1) + "\n")
    os.replace(tmp, info_file)  # all or nothing, like the modules it describes
    print(f"Headroom: built into {BUILD / 'capi'} and {BUILD / 'python'}; restart ComfyUI.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
