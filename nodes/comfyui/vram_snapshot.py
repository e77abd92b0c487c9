"""One reading of the card: total, free (ComfyUI's definition), PyTorch allocated/reserved, and the
other processes on the card when the NVIDIA driver tells us (NVML through dlopen; nothing is linked,
so AMD, Apple and CPU machines simply get `other_processes: null`)."""
import ctypes
import os
import sys

from . import budget

NVML_SUCCESS = 0
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_VALUE_NOT_AVAILABLE = 2**64 - 1


class _NvmlMemory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class _NvmlProcessInfo(ctypes.Structure):
    # nvmlProcessInfo_t as used by the _v2/_v3 queries (pid, usedGpuMemory, gpuInstanceId, computeInstanceId).
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


class _Nvml:
    """Lazily opened libnvidia-ml; every failure leaves `lib` None."""

    def __init__(self):
        self.lib = None
        self.tried = False

    def open(self):
        if self.tried:
            return self.lib
        self.tried = True
        override = os.environ.get("HEADROOM_NVML_LIBRARY")  # an unusual install path (and tests)
        for name in ([override] if override else []) + ["libnvidia-ml.so.1", "libnvidia-ml.so", "nvml.dll"]:
            try:
                lib = ctypes.CDLL(name)
            except OSError:
                continue
            init = getattr(lib, "nvmlInit_v2", None) or getattr(lib, "nvmlInit", None)
            if init is not None and init() == NVML_SUCCESS:
                self.lib = lib
                break
        return self.lib


_nvml = _Nvml()


def _nvml_index(torch_index: int) -> int:
    """NVML numbers cards as the driver does; CUDA_VISIBLE_DEVICES renumbers them for torch."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    parts = [p.strip() for p in visible.split(",") if p.strip()]
    if parts and all(p.isdigit() for p in parts) and torch_index < len(parts):
        return int(parts[torch_index])
    return torch_index


def nvml_processes(torch_index: int = 0):
    """[{pid, bytes}] of compute processes on the card, or None when NVML is absent or refuses."""
    lib = _nvml.open()
    if lib is None:
        return None
    handle = ctypes.c_void_p()
    get_handle = getattr(lib, "nvmlDeviceGetHandleByIndex_v2", None) or lib.nvmlDeviceGetHandleByIndex
    if get_handle(ctypes.c_uint(_nvml_index(torch_index)), ctypes.byref(handle)) != NVML_SUCCESS:
        return None
    query = None
    for name in ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"):
        query = getattr(lib, name, None)
        if query is not None:
            break
    if query is None:
        return None
    size = 64
    for _attempt in range(3):
        count = ctypes.c_uint(size)
        infos = (_NvmlProcessInfo * size)()
        rc = query(handle, ctypes.byref(count), infos)
        if rc == NVML_ERROR_INSUFFICIENT_SIZE:  # more processes appeared: count holds the need
            size = count.value + 16
            continue
        if rc != NVML_SUCCESS:
            return None
        # usedGpuMemory is NVML_VALUE_NOT_AVAILABLE (all ones) where the driver cannot tell (WDDM).
        return [{"pid": int(infos[i].pid),
                 "bytes": None if infos[i].usedGpuMemory >= NVML_VALUE_NOT_AVAILABLE else int(infos[i].usedGpuMemory)}
                for i in range(count.value)]
    return None


def snapshot(device=None) -> dict:
    """Plain numbers, JSON-ready. Sizes are bytes; null where this machine cannot tell."""
    out = {
        "device": budget.device_name(),
        "total_bytes": budget.total_bytes(device),
        "free_bytes": budget.free_bytes(device),
        "comfy_reserve_bytes": budget.reserve_bytes(),
        "torch_allocated_bytes": None,
        "torch_reserved_bytes": None,
        "reserved_unallocated_bytes": None,
        "other_processes": None,
        "other_processes_bytes": None,
    }
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        index = torch.cuda.current_device() if device is None else getattr(device, "index", None) or 0
        allocated = int(torch.cuda.memory_allocated(index))
        reserved = int(torch.cuda.memory_reserved(index))
        out.update(torch_allocated_bytes=allocated, torch_reserved_bytes=reserved,
                   reserved_unallocated_bytes=reserved - allocated)
        procs = nvml_processes(index)
        if procs is not None:
            me = os.getpid()
            others = [p for p in procs if p["pid"] != me]
            out["other_processes"] = others
            out["other_processes_bytes"] = sum(p["bytes"] or 0 for p in others)
    return out


def format_report(s: dict) -> str:
    def gib(v):
        return "n/a" if v is None else f"{v / 2**30:.2f} GiB"

    lines = [f"Device: {s['device'] or 'no CUDA device'}",
             f"Total: {gib(s['total_bytes'])}   Free (ComfyUI, after its {gib(s['comfy_reserve_bytes'])} reserve): "
             f"{gib(s['free_bytes'])}",
             f"PyTorch allocated: {gib(s['torch_allocated_bytes'])}   reserved: {gib(s['torch_reserved_bytes'])}   "
             f"reserved but unallocated (fragmentation): {gib(s['reserved_unallocated_bytes'])}"]
    if s["other_processes"] is None:
        lines.append("Other processes: not reported (no NVIDIA driver library, or not an NVIDIA card)")
    elif not s["other_processes"]:
        lines.append("Other processes: none")
    else:
        lines.append("Other processes: " + ", ".join(f"pid {p['pid']} {gib(p['bytes'])}" for p in s["other_processes"]))
    return "\n".join(lines)
