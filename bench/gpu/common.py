"""Shared plumbing of the GPU run (bench/gpu/run.sh): arguments, where the build is, CSV rows written as they
are made (a step stopped by its watchdog keeps what it measured), timing, and peak-memory meters.

Memory meters (the same interface on both devices):
  CUDA  torch.cuda.reset_peak_memory_stats(), then max_memory_reserved() / max_memory_allocated().
  CPU   (dry run) two stand-ins, named in every row's `meter` column:
        - `live-tensors`: a TorchDispatchMode that adds the bytes of every new storage an aten op returns and
          subtracts them when the last tensor on it is freed: the figure `max_memory_allocated` would give
          without the caching allocator's rounding. It also works on the `meta` device, where nothing is
          allocated, so real-size blocks can be accounted on the CPU without memory or compute.
        - `rss`: peak resident set (VmHWM, reset through /proc/self/clear_refs) above the state before the
          call; used for the native decoders (C++ allocations that no Python hook sees). run.sh sets
          MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ so RSS follows live tensors (as in
          tests/bench/bench_wan_decode.py).
"""
import argparse
import csv
import json
import math
import os
import sys
import time
import weakref
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
GIB = 2 ** 30
MIB = 2 ** 20


def parse_args(argv=None, extra=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", ""), help="output folder ($OUT)")
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny shapes")
    ap.add_argument("--budget-s", type=float, default=60.0, help="this step's time budget (s); cases past it are skipped")
    ap.add_argument("--build-dir", default=os.environ.get("HEADROOM_BUILD_DIR", "build"))
    if extra:
        extra(ap)
    a = ap.parse_args(argv)
    if not a.out:
        ap.error("no output folder: pass --out or set OUT")
    a.out = Path(a.out)
    a.out.mkdir(parents=True, exist_ok=True)
    a.t0 = time.monotonic()
    a.device = "cpu" if a.dry_run or not torch.cuda.is_available() else "cuda"
    bd = Path(a.build_dir)
    a.build_dir = bd if bd.is_absolute() else REPO / bd
    for p in (a.build_dir / "python", REPO / "tests" / "python", HERE):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))
    if a.device == "cpu":
        torch.set_num_threads(1)  # 2 threads on the shared 2-core machine run 10-20x slower than 1
    return a


def left_s(a):
    return a.budget_s - (time.monotonic() - a.t0)


def import_torch_module():
    """_headroom_torch, or (None, reason)."""
    try:
        import _headroom_torch as ht  # noqa: F401
        return ht, ""
    except Exception as e:  # noqa: BLE001 - any import failure is reported, the step goes on without it
        return None, f"{type(e).__name__}: {e}"


def import_core_module(build_dir=None):
    """The core library of the build (build/capi) through the nodes' own ctypes wrapper, or (None, reason).
    nodes/ is mounted as a package without running its __init__ (which would import the whole pack)."""
    try:
        import importlib
        import importlib.util
        build = Path(build_dir or os.environ.get("HEADROOM_BUILD_DIR") or REPO / "build")
        if "headroom_bench_nodes" not in sys.modules:
            spec = importlib.util.spec_from_file_location("headroom_bench_nodes", REPO / "nodes" / "__init__.py",
                                                          submodule_search_locations=[str(REPO / "nodes")])
            sys.modules["headroom_bench_nodes"] = importlib.util.module_from_spec(spec)
        core_capi = importlib.import_module("headroom_bench_nodes.native.core_capi")
        return core_capi.CapiCore(build / "capi" / core_capi.library_name()), ""
    except Exception as e:  # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"


class Rows:
    """A CSV file written row by row (flushed each time); the header is the union of the first row's keys
    and `columns`. Missing fields are empty, extra fields are an error (columns must be declared)."""

    def __init__(self, path, columns):
        self.path = Path(path)
        self.columns = list(columns)
        new = not self.path.exists() or self.path.stat().st_size == 0
        self.f = open(self.path, "a", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=self.columns)
        if new:
            self.w.writeheader()
            self.f.flush()
        self.n = 0

    def add(self, **row):
        unknown = set(row) - set(self.columns)
        if unknown:
            raise KeyError(f"{self.path.name}: undeclared columns {sorted(unknown)}")
        self.w.writerow({k: _fmt(row.get(k, "")) for k in self.columns})
        self.f.flush()
        self.n += 1

    def close(self):
        self.f.close()


def _fmt(v):
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return f"{v:.6g}"
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def read_rows(path):
    p = Path(path)
    if not p.exists():
        return []
    with open(p, newline="") as f:
        return list(csv.DictReader(f))


def write_step_status(a, step, **fields):
    """Each step leaves <out>/.steps/<step>.json (kept outside the 8 files that come back: summary.py folds
    them into summary.json)."""
    d = Path(os.environ.get("HEADROOM_GPU_WORK", a.out / ".steps"))
    d.mkdir(parents=True, exist_ok=True)
    fields.update(step=step, seconds=round(time.monotonic() - a.t0, 2), budget_s=a.budget_s, device=a.device,
                  dry_run=a.dry_run)
    (d / f"{step}.json").write_text(json.dumps(fields, indent=1, default=str))


# ----------------------------------------------------------------------------------------------- timing

def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def timed(device, fn):
    """(result, seconds): CUDA events on the GPU, perf_counter on the CPU."""
    if device == "cuda":
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        out = fn()
        e.record()
        torch.cuda.synchronize()
        return out, s.elapsed_time(e) / 1000.0
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


# ----------------------------------------------------------------------------------------------- memory

class LiveBytes(TorchDispatchMode):
    """Peak bytes of storages created by aten ops while active (see the module docstring). Storages that
    existed before (weights, inputs) are not counted; in-place results and views of them are not new."""

    def __init__(self):
        super().__init__()
        self.live = 0
        self.peak = 0
        self.refs = {}  # storage key -> [bytes, live tensors on it]

    @staticmethod
    def _key(t):
        try:
            return t.untyped_storage()._cdata
        except Exception:  # noqa: BLE001 - tensors without storage (sparse, nested) are not counted
            return None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        ins = {self._key(t) for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)}
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            k = self._key(t)
            if k is None:
                continue
            if k not in self.refs:
                if k in ins:  # a view of / in-place result on a storage made before the meter started
                    continue
                n = t.untyped_storage().nbytes()
                self.refs[k] = [n, 0]
                self.live += n
                self.peak = max(self.peak, self.live)
            # every tensor on a counted storage (views included) keeps it alive until the last one goes
            self.refs[k][1] += 1
            weakref.finalize(t, self._drop, k)
        return out

    def _drop(self, k):
        r = self.refs.get(k)
        if r is None:
            return
        r[1] -= 1
        if r[1] <= 0:
            self.live -= r[0]
            del self.refs[k]


def _status_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


class Meter:
    """with Meter(device, kind) as m: ...; then m.allocated / m.reserved (peak bytes above the start, or
    absolute on CUDA when absolute=True), m.meter (how it was measured).

    kind: 'auto' (CUDA counters on the GPU, live tensors on the CPU), 'rss' (CPU: resident set; used for
    native code). On CUDA both figures come from the caching allocator whatever the kind."""

    def __init__(self, device, kind="auto", absolute=True):
        self.device, self.kind, self.absolute = device, kind, absolute
        self.allocated = self.reserved = 0
        self.base_allocated = self.base_reserved = 0

    def __enter__(self):
        if self.device == "cuda":
            torch.cuda.synchronize()
            self.base_allocated = torch.cuda.memory_allocated()
            self.base_reserved = torch.cuda.memory_reserved()
            torch.cuda.reset_peak_memory_stats()
            self.meter = "cuda-max_memory"
        elif self.kind == "rss":
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
                self.meter = "rss"
            except OSError:
                self.meter = "rss-unreset"
            self.base_allocated = self.base_reserved = _status_bytes("VmRSS")
        else:
            self.mode = LiveBytes()
            self.mode.__enter__()
            self.meter = "live-tensors"
        return self

    def __exit__(self, *exc):
        if self.device == "cuda":
            torch.cuda.synchronize()
            pa, pr = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
            if self.absolute:
                self.allocated, self.reserved = pa, pr
            else:
                self.allocated, self.reserved = pa - self.base_allocated, pr - self.base_reserved
        elif self.kind == "rss":
            peak = _status_bytes("VmHWM") - self.base_reserved
            self.allocated = self.reserved = max(0, peak)
        else:
            self.mode.__exit__(*exc)
            self.allocated = self.reserved = self.mode.peak
        return False


def free_cuda():
    """Frees what the caching allocator holds between runs (GPU only: a gc pass costs ~0.2 s each on the CPU)."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        import gc
        gc.collect()
        torch.cuda.empty_cache()


def is_oom(e):
    return isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower()


def gpu_name(device):
    if device == "cuda":
        return torch.cuda.get_device_name(0)
    return "CPU (dry run)"


def dtype_of(name):
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def err_stats(a, b):
    """max abs error and PSNR (dB, range 1) between two IMAGE tensors."""
    a, b = a.double(), b.double()
    if a.shape != b.shape:
        return float("nan"), float("nan")
    d = (a - b)
    mse = d.pow(2).mean().item()
    return d.abs().max().item(), (float("inf") if mse == 0 else 10 * math.log10(1.0 / mse))
