"""Which prebuilt decoder wheel (headroom_torch) fits the running torch: an exact match or none.

A LibTorch extension is tied to the torch X.Y it was compiled against and to its CUDA major; the
nearest lower torch is the classic cause of "DLL load failed" / "undefined symbol" (nunchaku's users'
most common failure). So install.py takes a wheel only when torch X.Y, CUDA major, CPython tag and
platform all match an entry of decoder_wheels.json, proves it in a child process, and otherwise says in
one line what exists and what to do. Pure Python, no torch or ComfyUI import: install.py loads this file
by path, and the tests drive it with fakes."""
import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

MANIFEST = Path(__file__).resolve().parent / "decoder_wheels.json"
SOURCE_BUILD_VARIABLE = "HEADROOM_BUILD_FROM_SOURCE"
IMPORT_CHECK_TIMEOUT_S = 300  # a first torch import on a slow disk with a virus scanner takes a minute


def torch_minor(version):
    """'2.13.0+cu130' -> '2.13'; None when it is not a torch version."""
    m = re.match(r"^(\d+)\.(\d+)", version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def cuda_major(cuda_version):
    """torch.version.cuda ('12.8', '13.0', None for CPU/ROCm builds) -> '12', '13' or 'cpu'."""
    m = re.match(r"^(\d+)", cuda_version or "")
    return m.group(1) if m else "cpu"


def python_tag(version_info=None):
    v = version_info or sys.version_info
    return f"cp{v[0]}{v[1]}"


def platform_tag(platform=None):
    """Wheel platform family: linux_x86_64, linux_aarch64, win_amd64, macosx_arm64."""
    p = (platform or sysconfig.get_platform()).replace("-", "_").replace(".", "_")
    if p.startswith("macosx"):
        return "macosx_" + p.split("_")[-1]
    return p


def running_key(torch_version, cuda_version, version_info=None, platform=None):
    return {"torch": torch_minor(torch_version), "cuda": cuda_major(cuda_version),
            "python": python_tag(version_info), "platform": platform_tag(platform)}


def describe(key):
    cuda = "CPU" if key["cuda"] == "cpu" else f"CUDA {key['cuda']}"
    return f"torch {key['torch']} + {cuda} on {key['python']} {key['platform']}"


def load_manifest(path=MANIFEST):
    """The manifest's wheel entries; a missing or unreadable manifest is an empty list (said in the reason)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    wheels = data.get("wheels") if isinstance(data, dict) else None
    return [w for w in wheels or [] if isinstance(w, dict)]


def select(wheels, key):
    """(entry, None) on an exact match, else (None, one-line reason naming the nearest builds)."""
    fields = ("torch", "cuda", "python", "platform")
    for w in wheels:
        if all(str(w.get(f)) == key[f] for f in fields):
            return w, None
    near = [w for w in wheels if str(w.get("platform")) == key["platform"] and str(w.get("python")) == key["python"]]
    if near:
        have = ", ".join(sorted({describe({f: str(w.get(f)) for f in fields}) for w in near}))
        why = (f"no decoder wheel for {describe(key)} (there are: {have}; a wheel built for another torch or "
               f"CUDA fails to load, so none of them is used)")
    else:
        why = f"no decoder wheel for {describe(key)}"
    return None, why


def advice(reason):
    """The one line install.py prints when no wheel is taken."""
    return (f"Headroom: {reason}. Exact tiled decoding needs a decoder wheel that matches this torch exactly, or a "
            f"source build: set {SOURCE_BUILD_VARIABLE}=1 and run install.py again (needs CMake and a C++17 "
            f"compiler). Until then VAE Decode (Headroom) decodes through ComfyUI's tiled decode inside the budget.")


CHECK_SNIPPET = r"""
import sys
import torch, _headroom_torch
built, running = _headroom_torch.built_torch_version(), torch.__version__
if built.split("+")[0] != running.split("+")[0]:
    sys.exit(f"built against torch {built}, running under torch {running}")
"""


def import_check(python, module_dir, timeout=IMPORT_CHECK_TIMEOUT_S):
    """Imports _headroom_torch from module_dir in a child Python (a crash there cannot take the installer or
    ComfyUI down). Returns None when it loads and agrees with the running torch, else the reason."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(module_dir)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    try:
        r = subprocess.run([str(python), "-c", CHECK_SNIPPET], capture_output=True, text=True, timeout=timeout,
                           env=env)
    except subprocess.TimeoutExpired:
        return f"importing the decoder module took over {timeout} s"
    except OSError as e:
        return f"could not start {python}: {e}"
    if r.returncode == 0:
        return None
    lines = [ln for ln in (r.stderr or r.stdout or "").strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else f"exit status {r.returncode}"
    if r.returncode < 0:
        last = f"the import crashed the Python process (signal {-r.returncode})"
    return f"the decoder module does not load: {last}"
