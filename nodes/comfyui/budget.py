"""The memory budget a run may use: free VRAM as ComfyUI defines it, or what the user typed.

ComfyUI counts as free what the driver reports free plus what PyTorch holds reserved but not active
(comfy/model_management.py get_free_memory), and keeps EXTRA_RESERVED_VRAM of it for itself. We ask
ComfyUI when it is loaded so the number matches what its loader will do; otherwise we compute the same
definition from torch directly.

Under dynamic VRAM that definition is not what ComfyUI itself decides with: weights comfy-aimdo keeps
resident from earlier runs are evicted on demand, so they are free to the next run. ComfyUI's own
evictable-aware figure is ModelPatcher.get_free_memory (comfy/model_patcher.py@08d0e510): get_free_memory
plus comfy_aimdo.model_vbar.vbars_analyze for the device, which is what "auto" sends when aimdo runs.
"""
import math
import os
import re
import sys

# The models.json runtime constant of ComfyUI's default reserve on Linux (EXTRA_RESERVED_VRAM), read from
# the core when ComfyUI is not loaded, i.e. in tools and tests.
RESERVE_CONSTANT = "comfy_reserve_bytes_linux"
GIB = 1024 ** 3
# No card or budget is near this (the largest GPUs have a few hundred GB); numbers above it are typos or
# attacks, and converting them to bytes would overflow.
MAX_BUDGET_GB = 65536
MAX_BUDGET_BYTES = MAX_BUDGET_GB * GIB
MAX_NAME_CHARS = 200

# A number of GB, also in exponent form and the words float() reads (inf, nan), so that those are
# refused as numbers out of range rather than taken for GPU names.
_NUMBER = re.compile(r"^\s*([-+]?(?:(?:[0-9]*\.?[0-9]+|[0-9]+\.)(?:e[-+]?[0-9]+)?|inf(?:inity)?|nan))\s*(gib|gb|g)?\s*$",
                     re.IGNORECASE)


def _comfy_mm():
    """comfy.model_management if ComfyUI has imported it already (never imported here first:
    importing it initialises the GPU)."""
    return sys.modules.get("comfy.model_management")


def _torch_cuda():
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return torch


def device_name():
    """The CUDA card's name, or None when ComfyUI runs on the CPU (or there is no CUDA device)."""
    mm = _comfy_mm()
    if mm is not None:
        try:
            device = mm.get_torch_device()
            if getattr(device, "type", "cuda") == "cpu":
                return None
            return mm.get_torch_device_name(device)
        except Exception:
            pass
    torch = _torch_cuda()
    return torch.cuda.get_device_name() if torch else None


def reserve_bytes() -> int:
    mm = _comfy_mm()
    if mm is not None and hasattr(mm, "extra_reserved_memory"):
        return int(mm.extra_reserved_memory())
    return core_reserve_bytes()


def core_reserve_bytes() -> int:
    """ComfyUI's default reserve as the core's data holds it; 0 when the core is not loaded either or does
    not say (the reserve is then unknown, and free memory is reported as the driver counts it)."""
    from ..native import native_loader
    try:
        runtime = native_loader.catalog().get("runtime", {})
    except native_loader.NativeUnavailable:
        return 0
    value = (runtime.get(RESERVE_CONSTANT) or {}).get("value")
    return 0 if value is None else int(value)  # None: a core too old to carry its runtime constants


def evictable_bytes(device) -> int:
    """VRAM held by weights comfy-aimdo would evict for an allocation (vbars_analyze); 0 on the legacy
    loader, before ComfyUI 0.15, or when aimdo cannot say. Both modules are looked up, never imported:
    aimdo_enabled is set only by ComfyUI's main.py after comfy_aimdo is loaded, and importing
    comfy_aimdo ourselves would initialise its CUDA library."""
    from . import comfy_runtime
    if not comfy_runtime._aimdo_enabled():
        return 0
    vbar = sys.modules.get("comfy_aimdo.model_vbar")
    analyze = getattr(vbar, "vbars_analyze", None)
    if analyze is None:
        return 0
    index = getattr(device, "index", None) if getattr(device, "type", None) == "cuda" else None
    try:
        value = int(analyze(index))
    except Exception:  # a budget must never fail a prompt; without the figure we under-count as before
        return 0
    return max(0, value)


def free_bytes_raw(device=None):
    """mem_get_info().free + (reserved - active), before ComfyUI's reserve, plus under dynamic VRAM the
    weights aimdo evicts on demand; None without a GPU."""
    mm = _comfy_mm()
    if mm is not None:
        dev = device if device is not None else mm.get_torch_device()
        if getattr(dev, "type", "cuda") == "cpu":
            return None
        return int(mm.get_free_memory(dev)) + evictable_bytes(dev)
    torch = _torch_cuda()
    if torch is None:
        return None
    dev = device if device is not None else torch.device("cuda", torch.cuda.current_device())
    stats = torch.cuda.memory_stats(dev)
    free_cuda, _total = torch.cuda.mem_get_info(dev)
    return int(free_cuda + stats.get("reserved_bytes.all.current", 0) - stats.get("active_bytes.all.current", 0))


def free_bytes(device=None):
    """Free VRAM as ComfyUI's loader sees it, minus its reserve; None without a GPU."""
    raw = free_bytes_raw(device)
    return None if raw is None else max(0, raw - reserve_bytes())


def total_bytes(device=None):
    mm = _comfy_mm()
    if mm is not None:
        dev = device if device is not None else mm.get_torch_device()
        if getattr(dev, "type", "cuda") == "cpu":
            return None
        return int(mm.get_total_memory(dev))
    torch = _torch_cuda()
    if torch is None:
        return None
    return int(torch.cuda.mem_get_info()[1])


def resolve(budget, reserve_applied_by_core=True) -> dict:
    """Turns the node's budget widget into request fields for the core.

    "auto" -> {"free_bytes": free VRAM as ComfyUI's ModelPatcher.get_free_memory counts it, "vram_bytes": the card's
    total}, or {} when there is no GPU (the core then reports the peak without a verdict). Free memory
    already excludes the CUDA context and other processes, so the core must not add them again: that is
    why it goes in free_bytes, with the total only telling the core which card it is. The core models
    ComfyUI's reserve itself, so the reserve is subtracted here only for callers that use the number
    directly (reserve_applied_by_core=False, e.g. a decode budget: {"vram_bytes": free - reserve}); "12" / "12GB" / 12.0 -> {"vram_bytes": 12 GiB} (cards report
    binary sizes, gpus.json too); anything else is a GPU name -> {"gpu": name} (the core validates it).
    An override from the environment (HEADROOM_BUDGET) wins over "auto", so headless servers can pin one.
    """
    if budget is None:
        budget = "auto"
    if isinstance(budget, bool) or not isinstance(budget, (str, int, float)):
        raise ValueError(f"budget: expected 'auto', a number of GB or a GPU name, got {budget!r}")
    if isinstance(budget, (int, float)):
        return {"vram_bytes": _gb_to_bytes(budget, budget)}
    text = check_text(budget)
    if text == "" or text.lower() == "auto":
        override = os.environ.get("HEADROOM_BUDGET")
        if override and override.lower() != "auto":
            return resolve(override, reserve_applied_by_core)
        if not reserve_applied_by_core:
            free = free_bytes()
            return {} if free is None else {"vram_bytes": free}
        free = free_bytes_raw()
        if free is None:
            return {}
        total = total_bytes()
        return {"free_bytes": free} if total is None else {"free_bytes": free, "vram_bytes": total}
    number = parse_gb(text)
    if number is not None:
        return {"vram_bytes": _gb_to_bytes(number, text)}
    check_gpu_name(text)
    return {"gpu": text}


def parse_gb(text: str):
    """ "12", "12GB", "11.5 GiB" -> the number (a float, maybe inf for 400 digits); else None."""
    if len(text) > MAX_NAME_CHARS:
        return None
    match = _NUMBER.match(text)
    return float(match.group(1)) if match else None


def _gb_to_bytes(value, shown) -> int:
    if isinstance(value, float) and not math.isfinite(value) or not 0 < value <= MAX_BUDGET_GB:
        raise ValueError(f"budget: expected a number of GB above 0 and up to {MAX_BUDGET_GB}, got {_short(shown)}")
    return int(value * GIB)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:24]}... ({len(text)} characters)"


def check_text(budget) -> str:
    """The budget text stripped, or ValueError when it cannot be a budget at all (too long, control
    characters). Numbers are range-checked by resolve(); GPU names by the core's catalog."""
    text = str(budget).strip()
    if len(text) > MAX_NAME_CHARS:
        raise ValueError(f"budget: expected 'auto', a number of GB or a GPU name, got {_short(text)}")
    if any(ord(c) < 32 for c in text):
        raise ValueError(f"budget: control characters in {_short(text)}")
    return text


def validate(budget) -> str:
    """What the settings store: the budget as text, after the checks resolve() would make, without
    asking the GPU (so a value stored now cannot make every later prompt fail)."""
    if isinstance(budget, bool) or not isinstance(budget, (str, int, float)):
        raise ValueError(f"budget: expected 'auto', a number of GB or a GPU name, got {_short(budget)}")
    if isinstance(budget, (int, float)):
        _gb_to_bytes(budget, budget)
        return str(budget)
    text = check_text(budget)
    number = parse_gb(text)
    if number is not None:
        _gb_to_bytes(number, text)
    elif text.lower() not in ("", "auto"):
        check_gpu_name(text)
    return text


def _gpu_lookup(text: str):
    """The core's answer for a typed card name (recognise {"gpu"}: the CLI's --gpu lookup), or None where
    no core can say (none loaded, or one without the lookup)."""
    from ..native import native_loader
    try:
        answer = native_loader.call_json("recognise", {"gpu": text})
    except (native_loader.NativeUnavailable, ValueError, RuntimeError):
        return None
    return answer if isinstance(answer, dict) and answer.get("from") == "gpu" else None


def gpu_memory_bytes(text: str):
    """The memory of the card the core finds for a typed name, or None (no such card, or no core)."""
    answer = _gpu_lookup(text)
    return int(answer["memory_bytes"]) if answer and answer.get("gpu") and answer.get("memory_bytes") else None


def check_gpu_name(text: str):
    """ValueError in the words of the budget box when the core's catalog has no card by this name (the
    core's own message is for the CLI, whose flags a ComfyUI user cannot type). Passes where no core can
    say: the name then goes to the core with the request, which names the field."""
    answer = _gpu_lookup(text)
    if answer is None or answer.get("gpu"):
        return
    typed = _short(text)
    how = "Type auto, a size in GB such as 12, or a card name such as RTX 4090 24GB."
    matches = [str(m) for m in answer.get("matches") or []]
    if matches:
        raise ValueError(f"budget: {typed} could be any of {', '.join(matches[:6])}; type more of the card's "
                         f"name, or its size in GB such as 12.")
    closest = [str(m) for m in answer.get("closest") or []]
    near = f" (closest: {', '.join(closest)})" if closest else ""
    raise ValueError(f"budget: {typed} is neither a size in GB nor a card Headroom knows{near}. {how}")


def describe(fields: dict) -> str:
    if "free_bytes" in fields:
        return f"{fields['free_bytes'] / GIB:.2f} GiB free"
    if "vram_bytes" in fields:
        return f"{fields['vram_bytes'] / GIB:.2f} GiB"
    if "gpu" in fields:
        return fields["gpu"]
    return "no GPU budget (no CUDA device; set budget to a GB number or a GPU name)"
