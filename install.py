"""Builds Headroom's native modules for the Python (and torch) that runs ComfyUI.

ComfyUI-Manager runs this file with ComfyUI's interpreter after cloning the pack; users can run it by
hand the same way: `<python of ComfyUI> install.py`. It configures CMake with that interpreter, so the
estimator module (_headroom_core, no torch) and the decoders (_headroom_torch, against the running
torch) land in <pack>/build/python, where the nodes look for them. It installs nothing with pip.
Exit status 0 on success; on failure it says what is missing and the nodes keep working without it."""
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


def main():
    facts = torch_facts()
    print(f"Headroom: building for Python {platform.python_version()} ({sys.executable}), "
          f"torch {facts['torch_version'] or 'absent'}, CUDA {facts['cuda_version'] or 'none'}")
    missing = [tool for tool in ("cmake",) if shutil.which(tool) is None]
    if missing:
        print(f"Headroom: cannot build: {', '.join(missing)} not found. Install CMake >= 3.18, Ninja and a C++17 "
              f"compiler (Debian/Ubuntu: apt install cmake ninja-build g++ nlohmann-json3-dev pybind11-dev), "
              f"then run: \"{sys.executable}\" \"{PACK / 'install.py'}\"")
        return 1
    jobs = str(max(1, (os.cpu_count() or 2) - 1))
    steps = [configure_args(facts), ["cmake", "--build", str(BUILD), "-j", jobs]]
    for step in steps:
        print("Headroom:", " ".join(step))
        result = subprocess.run(step, cwd=PACK)
        if result.returncode != 0:
            print(f"Headroom: build step failed (exit {result.returncode}); the nodes will load and say so. "
                  f"Fix the error above and rerun: \"{sys.executable}\" \"{PACK / 'install.py'}\"")
            return result.returncode
    info = {"python": sys.executable, "python_version": platform.python_version(), **facts,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (BUILD / "python").mkdir(parents=True, exist_ok=True)
    (BUILD / "python" / "headroom_build.json").write_text(json.dumps(info, indent=1) + "\n")
    print(f"Headroom: built into {BUILD / 'python'}; restart ComfyUI.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
