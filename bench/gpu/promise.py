"""Step 4: the promise. For every setting (stage, model, precision, resolution, frames, batch) and every budget
(8, 12, 16, 24 GiB cards' worth of free memory) ask Headroom's estimate (core, free_bytes = the budget), then
run the stage inside that budget and record: did every "fits" / "tight" run without an out-of-memory error,
did the "does not fit" ones run out unaided, and the error of every estimate.

How a stage runs inside a budget (GPU): torch.cuda.set_per_process_memory_fraction(budget / card) caps the
caching allocator (everything PyTorch and the native decoder allocate); weights the run does not instantiate
are one untouched allocation (ballast) of the size the estimate says ComfyUI keeps resident for the stage
(every weights:* part plus the streamed layer; the loading policy is the estimator's, what is checked is
that activations, casts, workspaces and fragmentation fit around it); then the real computation:
  sample        2 double + 2 single (FLUX) or 2 (Wan) random-weight blocks at the real token count; fp8 weights
                stay fp8 and are cast per layer, as ComfyUI's manual cast does;
  text_encode   2 layers at the padded length;
  vae_decode    decode_mode 'headroom': Headroom's decoder in `auto` with the budget less ComfyUI's reserve
                (what the node passes); 'full': the eager whole-image decode ComfyUI runs.
estimate error = (estimate's torch-side peak - measured peak reserved) / measured; the torch side leaves out
ComfyUI's reserve and the CUDA context, which PyTorch's counters do not see.

CPU dry run: set_per_process_memory_fraction is CUDA-only, so the run is emulated: eager stages run at the
real sizes on the `meta` device and their live-tensor peak (plus ballast) is compared with the budget; the
native decoder cannot run on `meta`, so its rows use the decoder's own plan at the real size (meter
'plan', not a measurement). ran_ok = emulated peak <= budget.
"""
import torch

import common
import estimates as E
import stages as S

COLUMNS = ["setting", "stage", "model", "precision", "width", "height", "frames", "batch", "decode_mode",
           "budget_gib", "budget_bytes", "verdict", "estimate_stage_bytes", "estimate_torch_bytes", "ballast_bytes",
           "ran", "ran_ok", "oom", "peak_reserved_bytes", "peak_allocated_bytes", "estimate_error",
           "promise_kept", "meter", "seconds", "status", "note"]

SETTINGS = [
    dict(stage="sample", model="flux1-dev", precision="bf16", width=1024, height=1024, frames=1, batch=1),
    dict(stage="sample", model="flux1-dev", precision="bf16", width=2048, height=2048, frames=1, batch=1),
    dict(stage="sample", model="flux1-dev", precision="fp8_e4m3fn", width=1024, height=1024, frames=1, batch=2),
    dict(stage="sample", model="flux1-dev", precision="fp8_e4m3fn", width=1536, height=1536, frames=1, batch=1),
    dict(stage="sample", model="wan2.1-t2v-1.3b", precision="bf16", width=832, height=480, frames=81, batch=1),
    dict(stage="sample", model="wan2.1-t2v-14b", precision="fp8_e4m3fn", width=832, height=480, frames=33, batch=1),
    dict(stage="sample", model="wan2.2-ti2v-5b", precision="bf16", width=1280, height=704, frames=121, batch=1),
    dict(stage="text_encode", model="t5-xxl", precision="fp16", width=1024, height=1024, frames=1, batch=1),
    dict(stage="text_encode", model="umt5-xxl", precision="fp8_e4m3fn", width=832, height=480, frames=81, batch=1),
    dict(stage="vae_decode", model="flux-vae", precision="bf16", width=2048, height=2048, frames=1, batch=1,
         decode_mode="headroom"),
    dict(stage="vae_decode", model="wan2.1-vae", precision="bf16", width=832, height=480, frames=81, batch=1,
         decode_mode="headroom"),
    dict(stage="vae_decode", model="flux-vae", precision="bf16", width=1024, height=1024, frames=1, batch=1,
         decode_mode="full"),
    # settings whose activations alone outgrow the small budgets, so some verdicts are "does not fit"
    dict(stage="sample", model="wan2.1-t2v-14b", precision="bf16", width=1280, height=720, frames=81, batch=1),
    dict(stage="sample", model="flux1-dev", precision="bf16", width=4096, height=4096, frames=1, batch=1),
    dict(stage="vae_decode", model="flux-vae", precision="bf16", width=4096, height=4096, frames=1, batch=1,
         decode_mode="full"),
]
BUDGETS_GIB = (8, 12, 16, 24)


def request(s, budget):
    r = dict(model=s["model"], width=s["width"], height=s["height"], frames=s["frames"], batch=s["batch"], cfg=1.0,
             free_bytes=budget)
    if s["stage"] == "vae_decode":
        r["decode_mode"] = s.get("decode_mode", "full")
        r["vae_precision"] = s["precision"]
    else:
        r["precision"] = s["precision"]
    return r


class Caps:
    """The allocator cap on the GPU (a no-op on the CPU)."""

    def __init__(self, device):
        self.device = device
        self.total = torch.cuda.get_device_properties(0).total_memory if device == "cuda" else 0

    def set(self, budget):
        if self.device != "cuda":
            return
        common.free_cuda()
        torch.cuda.set_per_process_memory_fraction(min(1.0, budget / self.total))

    def clear(self):
        if self.device == "cuda":
            common.free_cuda()
            torch.cuda.set_per_process_memory_fraction(1.0)


def run_stage(a, ht, s, st, budget, dev):
    """Returns the stages.py result dict; raises on OOM (GPU)."""
    ballast_total = E.weights_in(st)
    if s["stage"] == "sample":
        import blocks as B
        c = B.DIT[s["model"]]
        m = B.make_dit(s["model"], c, 2, "meta", S.compute_dtype(s["precision"]), S.STORE.get(s["precision"]))
        inst = B.param_bytes(m)
        return S.run_dit(s["model"], s["width"], s["height"], s["frames"], s["batch"], s["precision"], dev,
                         ballast_bytes=max(0, ballast_total - inst))
    if s["stage"] == "text_encode":
        import blocks as B
        m = B.TextStack(B.TEXT[s["model"]], 2, "meta", S.compute_dtype(s["precision"]), S.STORE.get(s["precision"]))
        return S.run_text(s["model"], s["batch"], s["precision"], dev,
                          ballast_bytes=max(0, ballast_total - B.param_bytes(m)))
    # vae_decode
    import reference_kl_vae as rk
    if s.get("decode_mode") == "full":
        if st.get("mode") == "tiled_fallback":
            # ComfyUI's full decode runs out and it retries in 512 px tiles (8 latent px overlap, tiles one at a
            # time, output on the CPU): one tile's decode is that retry's peak. The failed first attempt is not
            # replayed (it would only run out of the capped allocator).
            r = S.run_kl_decode(rk, 576, 576, s["batch"], s["precision"], dev)
            r["note"] = "estimate: ComfyUI's tiled retry; ran one 512 px tile (+ overlap) of the eager decoder"
            return r
        return S.run_kl_decode(rk, s["width"], s["height"], s["batch"], s["precision"], dev)
    reserve = st["breakdown"].get("comfyui_reserve", 0)
    fam = "kl" if s["model"] == "flux-vae" else s["model"].replace("-vae", "")
    scale = 8 if fam in ("kl", "wan2.1") else 16
    if fam == "kl":
        shape = [s["batch"], 16, s["height"] // 8, s["width"] // 8]
    else:
        shape = [s["batch"], 16 if fam == "wan2.1" else 48, (s["frames"] - 1) // 4 + 1, s["height"] // scale,
                 s["width"] // scale]
    if dev == "meta":  # the decoder's own plan at the real size: not a measurement
        plan = ht.plan(fam, shape, mode="auto", budget_bytes=budget - reserve, dtype_bytes=2)
        return dict(peak_allocated_bytes=plan["peak_bytes"], peak_reserved_bytes=plan["peak_bytes"], seconds=0.0,
                    meter="plan (not a measurement)", ballast_bytes=0,
                    note=f"plan: {plan['mode']}, {plan['tiles']} tiles of {plan['tile_latent']}")
    sd = {k: v.to(dev, torch.bfloat16) for k, v in S.vae_state_dict(fam).items()}
    z = torch.randn(*shape).to(dev, torch.bfloat16)
    r = S.run_native_decode(ht, sd, z, dev, torch.bfloat16, mode="auto", budget_bytes=budget - reserve)
    info = r.pop("info")
    r.pop("image")
    r["note"] = f"ran {info['mode']}, {info['tiles']} tiles of {info['tile_latent']}, planned {info['planned_peak_bytes']}"
    return r


def main():
    a = common.parse_args()
    rows = common.Rows(a.out / "promise.csv", COLUMNS)
    hc, why = common.import_core_module(a.build_dir)
    ht, why_t = common.import_torch_module()
    dev = "cuda" if a.device == "cuda" else "meta"
    caps = Caps(a.device)
    for i, s in enumerate(SETTINGS):
        for g in BUDGETS_GIB:
            budget = g * common.GIB
            base = dict(setting=f"P{i + 1}", stage=s["stage"], model=s["model"], precision=s["precision"],
                        width=s["width"], height=s["height"], frames=s["frames"], batch=s["batch"],
                        decode_mode=s.get("decode_mode", ""), budget_gib=g, budget_bytes=budget)
            if common.left_s(a) < 4:
                rows.add(**base, ran=False, status="skipped-time")
                continue
            est = E.estimate(hc, **request(s, budget))
            st = E.stage(est, s["stage"]) if "error" not in est else None
            if st is None:
                rows.add(**base, ran=False, status="no-estimate", note=est.get("error", "no such stage")[:300])
                continue
            # the stage's own verdict: its peak against the budget
            verdict = "fits" if st["peak_bytes"] <= budget else "does not fit"
            tside = E.torch_side(st)
            row = dict(base, verdict=verdict, estimate_stage_bytes=st["peak_bytes"], estimate_torch_bytes=tside)
            if s["stage"] == "vae_decode" and s.get("decode_mode") == "headroom" and ht is None:
                rows.add(**row, ran=False, status="no-module", note=why_t[:300])
                continue
            caps.set(budget)
            try:
                r = run_stage(a, ht, s, st, budget, dev)
                peak = r["peak_reserved_bytes"]
                ok = peak <= budget if dev == "meta" else True
                row.update(ran=True, ran_ok=ok, oom=not ok, peak_reserved_bytes=peak,
                           peak_allocated_bytes=r["peak_allocated_bytes"], ballast_bytes=r.get("ballast_bytes", 0),
                           estimate_error=(tside - peak) / peak if peak else float("nan"), meter=r["meter"],
                           seconds=r["seconds"], status="ok" if ok else "oom-emulated", note=r.get("note", ""))
            except ValueError as e:  # the decoder's plan refuses the budget: the node would say so, no OOM
                row.update(ran=False, ran_ok=False, oom=False, status="refused", note=str(e)[:300])
            except Exception as e:  # noqa: BLE001
                if not common.is_oom(e):
                    row.update(ran=True, ran_ok=False, oom=False, status="error", note=str(e)[:300])
                else:
                    row.update(ran=True, ran_ok=False, oom=True, status="oom", note=str(e).splitlines()[0][:300])
            finally:
                caps.clear()
            row["promise_kept"] = (row.get("ran_ok") is True) if verdict == "fits" else ""
            rows.add(**row)
    rows.close()
    common.write_step_status(a, "promise", rows=rows.n, core=why or "ok", torch_module=why_t or "ok")


if __name__ == "__main__":
    main()
