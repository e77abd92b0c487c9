"""Step 2b: the CUDA kernels of native/cuda/kernels.cu against their ATen twins (the code the decoders run
when the kernels cannot), same inputs: max error and time of each (CUDA events, best of 3 after a warm-up).

Kernels are reached through bench/gpu/kernels_shim.cu (C entry points, loaded with ctypes) that build.sh
compiles with nvcc next to the build. On the CPU (dry run) there is no kernel: the "kernel" column is a
second, differently written implementation (Welford-free moments, explicit loops over tiles) run against
the same ATen twin, so the comparison and the file are exercised; `backend` says which one ran.

writes kernels.csv: kernel, dtype, shape, backend, maxerr (relative to |aten| + 1 for the norm kernels, absolute for
the accumulation), tol, ok, kernel_s, aten_s, speedup (aten_s / kernel_s), status, note
"""
import ctypes
import os
from pathlib import Path
from types import SimpleNamespace

import torch

import common

COLUMNS = ["kernel", "dtype", "shape", "backend", "maxerr", "tol", "ok", "kernel_s", "aten_s", "speedup",
           "status", "note"]
DT = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}


# ------------------------------------------------------------------------------------- ATen twins

def aten_apply(x, scale, shift, silu):
    B, C = x.shape[:2]
    y = x.float() * scale.view(B, C, *[1] * (x.dim() - 2)) + shift.view(B, C, *[1] * (x.dim() - 2))
    if silu:
        y = torch.nn.functional.silu(y)
    return y.to(x.dtype)


def aten_stats(x, G):
    B = x.shape[0]
    v = x.reshape(B, G, -1).float()
    var, mean = torch.var_mean(v, dim=-1, unbiased=False)
    n = torch.full_like(mean, v.shape[-1])
    return torch.stack((n, mean, var * n), -1)


def aten_accumulate(acc, wsum, tile, wy, wx, oy, ox):
    m = wy[:, None] * wx[None, :]
    h, w = m.shape
    acc[:, oy:oy + h, ox:ox + w] += tile * m
    wsum[oy:oy + h, ox:ox + w] += m


def aten_normalize(acc, wsum):
    return acc / wsum


# ------------------------------------------------------------------------------------- kernels

class Shim:
    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))
        u, i64, i = ctypes.c_uint64, ctypes.c_int64, ctypes.c_int
        self.lib.hr_groupnorm_apply.argtypes = [u, u, i, u, u, i64, i64, i64, i, u]
        self.lib.hr_group_stats.argtypes = [u, i, i64, i64, i64, i64, u, u]
        self.lib.hr_weighted_accumulate.argtypes = [u, u, u, u, u, i64, i64, i64, i64, i64, i64, i64, u]
        self.lib.hr_normalize_accumulated.argtypes = [u, u, u, i64, i64, u]
        self.lib.hr_error_string.restype = ctypes.c_char_p

    @staticmethod
    def _stream():
        return torch.cuda.current_stream().cuda_stream

    def _check(self, rc, name):
        if rc:
            raise RuntimeError(f"{name}: {self.lib.hr_error_string(rc).decode()}")

    def apply(self, x, scale, shift, silu):
        y = torch.empty_like(x)
        B, C = x.shape[:2]
        self._check(self.lib.hr_groupnorm_apply(x.data_ptr(), y.data_ptr(), DT[x.dtype], scale.data_ptr(),
                                                shift.data_ptr(), B, C, x.numel() // (B * C), int(silu),
                                                self._stream()), "groupnorm_apply")
        return y

    def stats(self, x, G):
        B, C = x.shape[:2]
        out = torch.empty(B, G, 3, device=x.device, dtype=torch.float32)
        self._check(self.lib.hr_group_stats(x.data_ptr(), DT[x.dtype], B, C, x.numel() // (B * C), G,
                                            out.data_ptr(), self._stream()), "group_stats")
        return out

    def accumulate(self, acc, wsum, tile, wy, wx, oy, ox):
        P, H, W = acc.shape
        h, w = tile.shape[-2:]
        self._check(self.lib.hr_weighted_accumulate(acc.data_ptr(), wsum.data_ptr(), tile.data_ptr(), wy.data_ptr(),
                                                    wx.data_ptr(), P, H, W, h, w, oy, ox, self._stream()),
                    "weighted_accumulate")

    def normalize(self, acc, wsum):
        out = torch.empty_like(acc)
        P = acc.shape[0]
        self._check(self.lib.hr_normalize_accumulated(out.data_ptr(), acc.data_ptr(), wsum.data_ptr(), P,
                                                      acc[0].numel(), self._stream()), "normalize_accumulated")
        return out


class Emulation:
    """CPU stand-in for the kernels (dry run): the same contracts, written differently from the twins."""

    def apply(self, x, scale, shift, silu):
        B, C = x.shape[:2]
        y = torch.addcmul(shift.reshape(B, C, 1), x.reshape(B, C, -1).float(), scale.reshape(B, C, 1))
        if silu:
            y = y * torch.sigmoid(y)
        return y.reshape(x.shape).to(x.dtype)

    def stats(self, x, G):
        B = x.shape[0]
        v = x.reshape(B, G, -1).double()
        n = v.shape[-1]
        s1, s2 = v.sum(-1), (v * v).sum(-1)
        mean = s1 / n
        return torch.stack((torch.full_like(mean, n), mean, s2 - s1 * mean), -1).float()

    def accumulate(self, acc, wsum, tile, wy, wx, oy, ox):
        for r in range(tile.shape[-2]):
            m = wy[r] * wx
            acc[:, oy + r, ox:ox + wx.numel()] += tile[:, r] * m
            wsum[oy + r, ox:ox + wx.numel()] += m

    def normalize(self, acc, wsum):
        return acc * wsum.reciprocal()


def best_time(device, fn, reps):
    fn()  # warm-up
    best = float("inf")
    for _ in range(reps):
        _, t = common.timed(device, fn)
        best = min(best, t)
    return best


def kernel_impl(a):
    """(implementation, backend, note): the CUDA kernels through the shim on a GPU, else the emulation."""
    shim_path = Path(os.environ.get("HEADROOM_KERNELS_SHIM", a.build_dir / "kernels_shim.so"))
    impl, backend, note = Emulation(), "cpu-emulation", "no GPU: a second CPU implementation stands in for the kernel"
    if a.device == "cuda":
        if shim_path.exists():
            try:
                impl, backend, note = Shim(shim_path), "cuda", ""
            except OSError as e:
                note = f"kernels shim failed to load ({e}); emulation compared instead"
        else:
            note = f"kernels shim not built ({shim_path}); emulation compared instead"
    return impl, backend, note


def main():
    a = common.parse_args()
    rows = common.Rows(a.out / "kernels.csv", COLUMNS)
    impl, backend, note = kernel_impl(a)
    g = torch.Generator(device=a.device).manual_seed(0)
    bench = SimpleNamespace(a=a, rows=rows, impl=impl, backend=backend, note=note, g=g,
                            reps=3 if a.device == "cuda" else 1)
    if a.dry_run:
        S, C, HW, tile = 16 * 16, 32, 48, 24
    else:
        S, C, HW, tile = 1024 * 1024, 128, 4096, 1024 + 2 * 64  # a 1024^2 level at 128 ch; 4096^2 accumulator
    n_ok = groupnorm_rows(bench, S, C) + blend_rows(bench, HW, tile)
    rows.close()
    common.write_step_status(a, "kernels", rows=rows.n, ok=n_ok, backend=backend, note=note)


def groupnorm_rows(bench, S, C):
    """The GroupNorm kernels (apply + SiLU, statistics) against ATen in each dtype; how many agreed."""
    a, rows, impl, backend, note, g, reps = bench.a, bench.rows, bench.impl, bench.backend, bench.note, bench.g, bench.reps
    dev = a.device
    n_ok = 0
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        if dev == "cpu" and dtype == torch.float16:
            continue
        name = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        x = torch.randn(1, C, S, device=dev, generator=g).to(dtype)
        scale = torch.rand(1, C, device=dev, generator=g) + 0.5
        shift = torch.randn(1, C, device=dev, generator=g)
        cases = [
            ("groupnorm_apply+silu", f"[1,{C},{S}]", lambda: impl.apply(x, scale, shift, True),
             lambda: aten_apply(x, scale, shift, True),
             lambda k, t: ((k.float() - t.float()).abs() / (t.float().abs() + 1.0)).max().item()),
            ("group_stats", f"[1,{C},{S}] G=32", lambda: impl.stats(x, 32), lambda: aten_stats(x, 32),
             lambda k, t: ((k - t).abs() / (t.abs() + 1.0)).max().item()),
        ]
        for kname, shape, kf, tf, err in cases:
            if common.left_s(a) < 5:
                rows.add(kernel=kname, dtype=name, shape=shape, backend=backend, status="skipped-time")
                continue
            try:
                k, t = kf(), tf()
                e = err(k, t)
                ks, ts = best_time(dev, kf, reps), best_time(dev, tf, reps)
                ok = e <= (tol if kname != "group_stats" else 1e-4)
                n_ok += ok
                rows.add(kernel=kname, dtype=name, shape=shape, backend=backend, maxerr=e,
                         tol=tol if kname != "group_stats" else 1e-4, ok=ok, kernel_s=ks, aten_s=ts, speedup=ts / ks,
                         status="ok", note=note)
            except Exception as ex:  # noqa: BLE001 - recorded, the step goes on
                rows.add(kernel=kname, dtype=name, shape=shape, backend=backend, status="error", note=str(ex)[:300])
        del x
    return n_ok


def blend_rows(bench, HW, tile):
    """Blend accumulation (fp32 only, as in the decoders): two overlapping tiles into one accumulator, then
    the normalisation; how many agreed with ATen."""
    a, rows, impl, backend, note, g, reps = bench.a, bench.rows, bench.impl, bench.backend, bench.note, bench.g, bench.reps
    dev = a.device
    n_ok = 0
    P = 3
    tile_t = torch.rand(P, tile, tile, device=dev, generator=g)
    wy = torch.rand(tile, device=dev, generator=g)
    wx = torch.rand(tile, device=dev, generator=g)

    def run_acc(f):
        acc = torch.zeros(P, HW, HW, device=dev)
        ws = torch.zeros(HW, HW, device=dev)
        f(acc, ws, tile_t, wy, wx, 0, 0)
        f(acc, ws, tile_t, wy, wx, HW - tile, HW - tile)
        return acc, ws

    for kname, kf, tf in (
            ("weighted_accumulate", lambda: run_acc(impl.accumulate), lambda: run_acc(aten_accumulate)),
            ("normalize_accumulated", None, None)):
        try:
            if kname == "weighted_accumulate":
                (ka, kw), (ta, tw) = kf(), tf()
                e = max((ka - ta).abs().max().item(), (kw - tw).abs().max().item())
                ks, ts = best_time(dev, kf, reps), best_time(dev, tf, reps)
            else:
                acc, ws = run_acc(aten_accumulate)
                ws = ws + 1e-3
                e = (impl.normalize(acc, ws) - aten_normalize(acc, ws)).abs().max().item()
                ks, ts = best_time(dev, lambda: impl.normalize(acc, ws), reps), best_time(dev, lambda: aten_normalize(acc, ws), reps)
            ok = e <= 1e-5
            n_ok += ok
            rows.add(kernel=kname, dtype="fp32", shape=f"[{P},{HW},{HW}] tile {tile}", backend=backend, maxerr=e,
                     tol=1e-5, ok=ok, kernel_s=ks, aten_s=ts, speedup=ts / ks, status="ok", note=note)
        except Exception as ex:  # noqa: BLE001
            rows.add(kernel=kname, dtype="fp32", shape=f"[{P},{HW},{HW}]", backend=backend, status="error",
                     note=str(ex)[:300])
    return n_ok


if __name__ == "__main__":
    main()
