"""Step 1 (after build.sh): versions.json: Python, torch, CUDA, cuDNN, the GPU and driver, what build.sh found
and built (WORK/build.env), whether the built modules import and match the running torch, the repo commit."""
import json
import os
import platform
import subprocess
from pathlib import Path

import torch

import common


def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"unavailable ({type(e).__name__})"


def main():
    a = common.parse_args()
    work = Path(os.environ.get("HEADROOM_GPU_WORK", a.out / ".steps"))
    build_env = {}
    p = work / "build.env"
    if p.exists():
        for line in p.read_text().splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                build_env[k] = v
    v = {"python": platform.python_version(), "python_executable": os.sys.executable, "platform": platform.platform(),
         "torch": torch.__version__, "torch_cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available(),
         "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
         "dry_run": a.dry_run, "device": a.device, "build_dir": str(a.build_dir), "build": build_env,
         "commit": sh(["git", "-C", str(common.REPO), "rev-parse", "HEAD"]) or "no git checkout"}
    if torch.cuda.is_available():
        pr = torch.cuda.get_device_properties(0)
        v.update(gpu=pr.name, gpu_memory_bytes=pr.total_memory, capability=f"{pr.major}.{pr.minor}",
                 multiprocessors=pr.multi_processor_count,
                 driver=sh(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]))
    hc, why = common.import_core_module(a.build_dir)
    v["core_module"] = {"ok": hc is not None, "error": why, "version": getattr(hc, "version", None)}
    ht, why = common.import_torch_module()
    built = ht.built_torch_version() if ht is not None else None
    v["torch_module"] = {"ok": ht is not None, "error": why, "built_torch_version": built,
                         "matches_running_torch": built == torch.__version__ if built else None}
    for k in ("einops", "safetensors", "numpy", "pybind11"):
        try:
            v[k] = __import__(k).__version__
        except Exception:  # noqa: BLE001
            v[k] = None
    (a.out / "versions.json").write_text(json.dumps(v, indent=1))
    common.write_step_status(a, "versions", core=v["core_module"]["ok"], torch_module=v["torch_module"]["ok"])
    print(json.dumps({k: v[k] for k in ("python", "torch", "torch_cuda", "device", "core_module", "torch_module")}))


if __name__ == "__main__":
    main()
