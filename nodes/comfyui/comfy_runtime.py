"""Which memory runtime the live ComfyUI runs, and the knobs that change its budget.

Since ComfyUI 0.15 (Feb 2026) dynamic VRAM (comfy-aimdo) is the default on NVIDIA: weights are staged on
the CPU, faulted in per layer and evicted for activations, so "do the weights fit" stops being the
question. Before 0.15, with --disable-dynamic-vram / --highvram / --gpu-only / --novram / --cpu, or when
comfy-aimdo failed to initialise, the estimate-based loader of 0.3.x runs instead ("legacy"). ComfyUI's
main.py records the outcome in comfy.memory_management.aimdo_enabled, which is what we read: a flag
alone does not say whether aimdo really started.

Nothing here imports ComfyUI: we look only at modules it has already imported, so the pack's tests and
tools run without it and importing never initialises a GPU.
"""
import sys

GIB = 1024 ** 3


def _module(name):
    return sys.modules.get(name)


def _args():
    cli = _module("comfy.cli_args")
    return getattr(cli, "args", None) if cli is not None else None


def _flag(args, name) -> bool:
    return bool(getattr(args, name, False)) if args is not None else False


def _gb(args, name):
    """A GB-valued CLI option as bytes; None when ComfyUI has no such option or it is unset."""
    value = getattr(args, name, None) if args is not None else None
    if value is None or isinstance(value, bool):
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    if not value >= 0 or value > 65536:  # NaN, negative and absurd values are not a budget
        return None
    return int(value * GIB)


def comfyui_version():
    mod = _module("comfyui_version")
    version = getattr(mod, "__version__", None) if mod is not None else None
    return str(version) if version else None


def _aimdo_enabled():
    """comfy.memory_management.aimdo_enabled: an attribute in main.py's ComfyUI, a function in some
    forks; None when this ComfyUI has no dynamic VRAM at all (before 0.15)."""
    mm = _module("comfy.memory_management")
    if mm is None or not hasattr(mm, "aimdo_enabled"):
        return None
    flag = getattr(mm, "aimdo_enabled")
    try:
        return bool(flag()) if callable(flag) else bool(flag)
    except Exception:
        return None


# The options that keep ComfyUI on the legacy loader even where dynamic VRAM exists (comfy/cli_args.py).
_LEGACY_FLAGS = ("disable_dynamic_vram", "highvram", "gpu_only", "novram", "cpu")


def _ram():
    """(total, available) host RAM in bytes, or (None, None) where this machine cannot tell."""
    psutil = _module("psutil")
    if psutil is None:
        try:
            import psutil  # noqa: F401  (a ComfyUI dependency; optional for the pack)
        except ImportError:
            psutil = None
    if psutil is not None:
        try:
            vm = psutil.virtual_memory()
            return int(vm.total), int(vm.available)
        except Exception:
            pass
    try:
        fields = {}
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    fields[key] = int(parts[0]) * 1024
        return fields.get("MemTotal"), fields.get("MemAvailable")
    except OSError:
        return None, None


def _swap():
    """Swap in bytes (ComfyUI's pinned-memory cap counts it on Linux), or None where unknown."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key == "SwapTotal" and rest.split() and rest.split()[0].isdigit():
                    return int(rest.split()[0]) * 1024
    except OSError:
        pass
    return None


def _offload_streams(args):
    """ComfyUI's offload streams: model_management.NUM_STREAMS once ComfyUI set it, else from the flags
    (comfy/cli_args.py@03294572: --async-offload N, 2 without N, 0 with --disable-async-offload); None
    when neither says (the core's default applies)."""
    mm = _module("comfy.model_management")
    n = getattr(mm, "NUM_STREAMS", None) if mm is not None else None
    if isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 16:
        return n
    if _flag(args, "disable_async_offload"):
        return 0
    value = getattr(args, "async_offload", None) if args is not None else None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 16:
        return value
    return None


def detect() -> dict:
    """The runtime and its knobs, JSON-ready. runtime is "dynamic", "legacy" or None (no ComfyUI
    loaded: the caller decides, the CLI defaults to dynamic); reason says how it was decided."""
    args = _args()
    loaded = _module("comfy.model_management") is not None or args is not None
    total_ram, free_ram = _ram()
    out = {
        "runtime": None,
        "reason": "ComfyUI is not loaded",
        "comfyui_version": comfyui_version(),
        "reserve_vram_bytes": _gb(args, "reserve_vram"),
        "vram_headroom_bytes": _gb(args, "vram_headroom") or 0,
        "pinned_memory": not _flag(args, "disable_pinned_memory"),
        "offload_streams": _offload_streams(args),
        "swap_bytes": _swap(),
        "windows": sys.platform == "win32",
        "ram_bytes": total_ram,
        "free_ram_bytes": free_ram,
    }
    if not loaded:
        return out
    aimdo = _aimdo_enabled()
    forced_off = [f for f in _LEGACY_FLAGS if _flag(args, f)]
    if aimdo:
        out.update(runtime="dynamic", reason="dynamic VRAM is on (comfy-aimdo enabled)")
    elif aimdo is None:
        out.update(runtime="legacy", reason="this ComfyUI has no dynamic VRAM (before 0.15)")
    elif forced_off:
        flags = ", ".join("--" + f.replace("_", "-") for f in forced_off)
        out.update(runtime="legacy", reason=f"dynamic VRAM is off ({flags})")
    else:
        out.update(runtime="legacy", reason="dynamic VRAM is off (comfy-aimdo did not start on this machine)")
    return out


def request_fields(info=None) -> dict:
    """The part of detect() the core's estimate/plan requests take; empty when ComfyUI is not loaded, so
    the core's own default applies."""
    info = detect() if info is None else info
    if info.get("runtime") is None:
        return {}
    fields = {"runtime": info["runtime"], "vram_headroom_bytes": info["vram_headroom_bytes"],
              "windows": bool(info.get("windows"))}
    if info.get("offload_streams") is not None:
        fields["offload_streams"] = info["offload_streams"]
    if info.get("pinned_memory") is False:
        fields["pinned_memory"] = False
    if info.get("swap_bytes") is not None and info.get("ram_bytes"):
        fields["swap_bytes"] = info["swap_bytes"]
    if info.get("reserve_vram_bytes") is not None:
        fields["reserve_bytes"] = info["reserve_vram_bytes"]
    if info.get("ram_bytes"):
        fields["ram_bytes"] = info["ram_bytes"]
    return fields

