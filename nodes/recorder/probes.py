"""What one node cost: device peaks (torch.cuda), comfy-aimdo's figures, process RSS, pinned host memory,
system RAM available and swap in use. Only modules ComfyUI has already imported are used: reading memory
must never initialise CUDA or import torch."""
import os
import sys

from ..comfyui import comfy_runtime


def _cuda():
    """torch.cuda when a CUDA context already exists in this process, else None."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    try:
        return cuda if cuda is not None and cuda.is_initialized() else None
    except Exception:
        return None


def reset_device_peaks():
    cuda = _cuda()
    if cuda is None:
        return
    try:
        cuda.reset_peak_memory_stats()
    except Exception:
        pass


def device_peaks():
    """(peak reserved, peak allocated) since the last reset, or (None, None) without a CUDA context."""
    cuda = _cuda()
    if cuda is None:
        return None, None
    try:
        return int(cuda.max_memory_reserved()), int(cuda.max_memory_allocated())
    except Exception:
        return None, None


def device_reserved():
    cuda = _cuda()
    if cuda is None:
        return None
    try:
        return int(cuda.memory_reserved())
    except Exception:
        return None


def runtime():
    """The start event's runtime: {loader, device, vram_total_bytes}."""
    cuda = _cuda()
    if cuda is None:
        return {"loader": "cpu", "device": "cpu", "vram_total_bytes": None}
    out = {"loader": comfy_runtime.detect().get("runtime") or "legacy", "device": "cuda", "vram_total_bytes": None}
    try:
        index = cuda.current_device()
        out["device"] = str(cuda.get_device_name(index))
        out["vram_total_bytes"] = int(cuda.get_device_properties(index).total_memory)
    except Exception:
        pass
    return out


def aimdo():
    """What comfy-aimdo reports when dynamic VRAM runs, else None. Its figures are read from whatever the
    module exposes (resident and streamed bytes); an API this version does not know gives None."""
    mod = sys.modules.get("comfy_aimdo")
    if mod is None:
        return None
    out = {}
    for name in ("resident_bytes", "streamed_bytes", "vram_usage", "get_stats"):
        value = getattr(mod, name, None)
        try:
            value = value() if callable(value) else value
        except Exception:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = int(value)
        elif isinstance(value, dict):
            out.update({str(k): int(v) for k, v in value.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    return out or None


def _proc_status_rss():
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _windows_memory():
    """(process working set, available physical, page file in use) through the Win32 API."""
    import ctypes
    from ctypes import wintypes

    class Status(ctypes.Structure):
        _fields_ = [("dwLength", wintypes.DWORD), ("dwMemoryLoad", wintypes.DWORD),
                    ("ullTotalPhys", ctypes.c_ulonglong), ("ullAvailPhys", ctypes.c_ulonglong),
                    ("ullTotalPageFile", ctypes.c_ulonglong), ("ullAvailPageFile", ctypes.c_ulonglong),
                    ("ullTotalVirtual", ctypes.c_ulonglong), ("ullAvailVirtual", ctypes.c_ulonglong),
                    ("ullAvailExtendedVirtual", ctypes.c_ulonglong)]

    s = Status()
    s.dwLength = ctypes.sizeof(Status)
    if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(s)):
        return None, None, None
    # The commit charge beyond physical memory is what the page file holds.
    committed = s.ullTotalPageFile - s.ullAvailPageFile
    return None, int(s.ullAvailPhys), int(max(0, committed - (s.ullTotalPhys - s.ullAvailPhys)))


def _meminfo():
    """(MemAvailable, swap in use) from /proc/meminfo, read in one call: read line by line, the kernel
    builds the file again for each read, which costs about 100 times more."""
    try:
        with open("/proc/meminfo", "rb", buffering=0) as f:
            text = f.read(16384)
    except OSError:
        return None, None
    fields = {}
    for line in text.split(b"\n"):
        key, _, rest = line.partition(b":")
        if key in (b"MemAvailable", b"SwapTotal", b"SwapFree"):
            parts = rest.split()
            if parts and parts[0].isdigit():
                fields[key] = int(parts[0]) * 1024
    swap = None
    if b"SwapTotal" in fields and b"SwapFree" in fields:
        swap = fields[b"SwapTotal"] - fields[b"SwapFree"]
    return fields.get(b"MemAvailable"), swap


def pinned_bytes():
    """Host memory ComfyUI has pinned for weight transfers, where its model_management counts it."""
    mm = sys.modules.get("comfy.model_management")
    for name in ("TOTAL_PINNED_MEMORY", "total_pinned_memory"):
        value = getattr(mm, name, None) if mm is not None else None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def host():
    """{rss_bytes, pinned_bytes, ram_available_bytes, swap_used_bytes}; None where this OS cannot tell."""
    if sys.platform == "win32":
        try:
            rss, available, swap = _windows_memory()
        except Exception:
            rss, available, swap = None, None, None
    else:
        rss = _proc_status_rss()
        available, swap = _meminfo()
        if available is None:  # no /proc (macOS)
            available = comfy_runtime._ram()[1]
    psutil = sys.modules.get("psutil")  # ComfyUI imports it; where /proc has no answer it has one
    if rss is None and psutil is not None:
        try:
            rss = int(psutil.Process().memory_info().rss)
        except Exception:
            pass
    return {"rss_bytes": rss, "pinned_bytes": pinned_bytes(), "ram_available_bytes": available,
            "swap_used_bytes": swap}


def reset_host_peak():
    """Starts the process's peak RSS (Linux VmHWM) over again at its current RSS: writing "5" to
    /proc/self/clear_refs does that and nothing else (proc(5), Linux 4.0+). On the CPU the node's tensors
    live in that memory, so the peak over a node is what the node needed there. False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def host_peak():
    """The process's peak RSS since the last reset_host_peak (VmHWM), or None where /proc cannot tell."""
    try:
        with open("/proc/self/status", "rb", buffering=0) as f:
            text = f.read(8192)
    except OSError:
        return None
    start = text.find(b"VmHWM:")
    if start < 0:
        return None
    parts = text[start + 6:text.find(b"\n", start)].split()
    return int(parts[0]) * 1024 if parts and parts[0].isdigit() else None


def ram_total():
    return comfy_runtime._ram()[0]
