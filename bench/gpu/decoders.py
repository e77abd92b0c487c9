"""Step 2a: the native decoders (_headroom_torch.decode) on random weights of the real architectures, bf16
and fp32: `full`, `exact` at budgets of 1/2 and 1/4 of full's measured peak, `blend`, and the plain PyTorch
eager references of tests/python (reference_kl_vae.py, reference_wan_vae.py). Per run: time (CUDA events;
`full` runs twice, the first is the warm-up), peak reserved / allocated against the plan and the budget,
error against `full` and against the reference.

Cases (GPU): KL (Flux/SD) 1024^2, 2048^2, 4096^2; the FLUX.2 VAE (ComfyUI's packed 128-channel latent through
Headroom's front end: inverse BatchNorm + 2x2 unpatchify, then the KL decoder with 32 latent channels and
post_quant_conv; reference: reference_flux2_vae.py) at 2048^2; Wan 2.1 at 1280x720
x 81 frames; Wan 2.2 at 1280x704 x 121 frames. Each case has a time share; the Wan clips are shortened (fewer
latent frames) to the longest that the share allows, predicted from a probe decode of 2 latent frames, and
a KL size whose predicted time does not fit is skipped. Wan's whole-clip eager reference runs on a prefix of
the latent (the decoder is causal in time: the first 4k-3 frames depend only on the first k latent frames)
and is compared with the same frames of `full`. The KL reference uses query-chunked attention above 1024^2
(the same softmax; the whole 262144^2 score matrix of 4096^2 would not fit).

Dry run: the same cases at tiny widths and sizes on the CPU; peaks are peak RSS above the start plus the
weights (see common.py); `exact` at a fixed tile is added so the exact-vs-full comparison always runs even
when the plan refuses a tiny budget.
"""
import math
import types

import torch

import common
import stages as S

COLUMNS = ["case", "family", "dtype", "width", "height", "frames", "latent_frames", "mode", "budget_bytes",
           "tile_px", "tile_latent", "tiles", "park_on_cpu", "planned_peak_bytes", "full_planned_bytes",
           "weights_bytes", "peak_reserved_bytes", "peak_allocated_bytes", "under_plan", "under_budget", "seconds",
           "warm", "maxerr_vs_full", "psnr_vs_full", "maxerr_vs_reference", "psnr_vs_reference",
           "reference_frames", "meter", "status", "note"]


def chunked_attention_forward(self, x, chunk=4096):
    """reference_kl_vae.AttnBlock.forward with the queries in chunks: same math, O(chunk * L) memory."""
    b, c, h, w = x.shape
    n = self.norm(x)
    q = self.q(n).reshape(b, c, h * w).permute(0, 2, 1)
    k = self.k(n).reshape(b, c, h * w)
    v = self.v(n).reshape(b, c, h * w)
    out = torch.empty(b, c, h * w, device=x.device, dtype=x.dtype)
    for s in range(0, h * w, chunk):
        att = torch.softmax(torch.bmm(q[:, s:s + chunk], k) / math.sqrt(c), dim=-1)
        out[:, :, s:s + chunk] = torch.bmm(v, att.permute(0, 2, 1))
        del att
    return x + self.proj_out(out.reshape(b, c, h, w))


def kl_cases(dry):
    if dry:
        w = dict(widths=(32, 64, 64), blocks=2)
        return [dict(case=f"kl-{s}", family="kl", size=s, z=16, post_quant=False, share=6, **w) for s in (64,)] + \
               [dict(case="flux2-vae-64", family="kl", size=64, z=32, post_quant=True, share=4, **w)]
    w = dict(widths=(128, 256, 512, 512), blocks=3)
    return [dict(case=f"kl-{s}", family="kl", size=s, z=16, post_quant=False, share=sh, **w)
            for s, sh in ((1024, 6), (2048, 10), (4096, 25))] + \
           [dict(case="flux2-vae-2048", family="kl", size=2048, z=32, post_quant=True, share=8, **w)]


def wan_cases(dry):
    if dry:
        return [dict(case="wan2.1-32x40", family="wan2.1", width=40, height=32, frames=[5], dim=8, share=6),
                dict(case="wan2.2-64x64", family="wan2.2", width=64, height=64, frames=[5], dim=8, share=6)]
    return [dict(case="wan2.1-1280x720", family="wan2.1", width=1280, height=720, frames=[81, 61, 41, 21, 9, 5],
                 dim=None, share=18),
            dict(case="wan2.2-1280x704", family="wan2.2", width=1280, height=704, frames=[121, 81, 61, 41, 21, 9, 5],
                 dim=None, share=18)]


class Runner:
    def __init__(self, a, ht, rows):
        self.a, self.ht, self.rows, self.dev = a, ht, rows, a.device
        self.kind = "auto" if self.dev == "cuda" else "rss"

    def decode(self, sd, z, dtype, wbytes, **kw):
        """(image, info, seconds, reserved, allocated) with weights counted (they sit in VRAM on a GPU)."""
        common.free_cuda()
        with common.Meter(self.dev, self.kind) as m:
            (img, info), t = common.timed(self.dev, lambda: self.ht.decode(sd, z, device=self.dev, dtype=dtype, **kw))
        extra = 0 if self.dev == "cuda" else wbytes  # RSS above the start leaves out the resident weights
        return img, info, t, m.reserved + extra, m.allocated + extra, m.meter

    def row(self, base, mode, info=None, img=None, full=None, ref=None, ref_frames=0, t=None, res=None, alloc=None,
            meter="", budget=0, tile_px=0, warm=False, status="ok", note=""):
        r = dict(base, mode=mode, budget_bytes=budget, tile_px=tile_px, seconds=t, warm=warm, meter=meter,
                 status=status, note=note)
        if info:
            r.update(tile_latent=info["tile_latent"], tiles=info["tiles"], park_on_cpu=info["park_on_cpu"],
                     planned_peak_bytes=info["planned_peak_bytes"], full_planned_bytes=info["full_peak_bytes"])
        if res is not None:
            r.update(peak_reserved_bytes=res, peak_allocated_bytes=alloc)
            if info and info["planned_peak_bytes"]:
                r["under_plan"] = alloc <= info["planned_peak_bytes"]
            if budget:
                r["under_budget"] = res <= budget
        if img is not None and full is not None:
            r["maxerr_vs_full"], r["psnr_vs_full"] = common.err_stats(img, full)
        if img is not None and ref is not None:
            r["maxerr_vs_reference"], r["psnr_vs_reference"] = common.err_stats(img[:ref.shape[0]], ref)
            r["reference_frames"] = ref_frames
        self.rows.add(**r)

    def modes(self, base, sd, z, dtype, wbytes, full_img, full_res, tile_px, ref_fn):
        """the eager reference, then exact at 1/2 and 1/4 of full's peak, blend (dry run: also exact at a tile)."""
        ref = None
        try:  # the eager reference first, so that every mode is compared with it too
            common.free_cuda()
            with common.Meter(self.dev, "auto") as m:
                (ref, nref), t = common.timed(self.dev, ref_fn)
            note = "reference: eager PyTorch, whole clip at once" if not base["family"].startswith("kl") else "reference: eager PyTorch"
            self.row(base, "reference", img=ref, full=full_img[:ref.shape[0]], t=t, res=m.reserved, alloc=m.allocated,
                     meter=m.meter, warm=False, note=note)
            r = dict(base, mode="full-vs-reference", reference_frames=nref, status="ok")
            r["maxerr_vs_reference"], r["psnr_vs_reference"] = common.err_stats(full_img[:ref.shape[0]], ref)
            self.rows.add(**r)
        except Exception as e:  # noqa: BLE001
            ref, nref = None, 0
            self.row(base, "reference", status="oom" if common.is_oom(e) else "error", note=str(e)[:300])
        common.free_cuda()
        ran_exact = False
        for frac in (2, 4):
            budget = int(full_res // frac)
            try:
                img, info, t, res, alloc, meter = self.decode(sd, z, dtype, wbytes, mode="exact", budget_bytes=budget)
                self.row(base, f"exact-1/{frac}", info, img, full_img, ref, nref, t=t, res=res, alloc=alloc,
                         meter=meter, budget=budget, warm=True)
                ran_exact = True
                del img
            except ValueError as e:  # the plan refuses the budget before decoding
                self.row(base, f"exact-1/{frac}", budget=budget, status="refused", note=str(e)[:300])
            except Exception as e:  # noqa: BLE001 - an OOM or a crash is a finding, recorded
                self.row(base, f"exact-1/{frac}", budget=budget, status="oom" if common.is_oom(e) else "error",
                         note=str(e)[:300])
        if self.a.dry_run or not ran_exact:
            try:
                img, info, t, res, alloc, meter = self.decode(sd, z, dtype, wbytes, mode="exact", tile_px=tile_px)
                self.row(base, "exact-tile", info, img, full_img, ref, nref, t=t, res=res, alloc=alloc,
                         meter=meter, tile_px=tile_px, warm=True)
                del img
            except Exception as e:  # noqa: BLE001
                self.row(base, "exact-tile", tile_px=tile_px, status="oom" if common.is_oom(e) else "error",
                         note=str(e)[:300])
        try:
            img, info, t, res, alloc, meter = self.decode(sd, z, dtype, wbytes, mode="blend", tile_px=tile_px)
            self.row(base, "blend", info, img, full_img, ref, nref, t=t, res=res, alloc=alloc, meter=meter,
                     tile_px=tile_px, warm=True)
            del img
        except Exception as e:  # noqa: BLE001
            self.row(base, "blend", tile_px=tile_px, status="oom" if common.is_oom(e) else "error", note=str(e)[:300])


def run_kl(a, run, rk, c, dtype_name, probe):
    """probe: dict of seconds per megapixel of full measured so far (per dtype) to predict this case."""
    dtype = common.dtype_of(dtype_name)
    s = c["size"]
    up = 2 ** (len(c["widths"]) - 1)
    base = dict(case=c["case"], family="kl" if c["z"] == 16 else "kl-flux2", dtype=dtype_name, width=s, height=s,
                frames=1, latent_frames=1)
    mp = s * s / 1e6
    if dtype_name in probe:
        predicted = probe[dtype_name] * mp * 7  # full x2, exact x2 (~1.2), blend, reference
        if predicted > min(c["share"], common.left_s(a) - 5):
            run.row(base, "full", status="skipped-time", note=f"predicted {predicted:.0f} s > share {c['share']} s")
            return
    model = rk.KLDecoderOnly(c["z"], c["widths"], c["blocks"], c["post_quant"]).eval()
    cpu_sd = S.vae_state_dict(base["family"], dim=8 if a.dry_run else None)
    model.load_state_dict(cpu_sd)
    shape = (1, c["z"], s // up, s // up)
    if base["family"] == "kl-flux2":
        # The real FLUX.2 input: ComfyUI's packed [1, 128, s/16, s/16] latent and the VAE's latent BatchNorm
        # (random statistics), decoded by Headroom's front end + KL decoder; the reference is
        # reference_flux2_vae's (its own inverse BatchNorm and unpatchify before the same decoder weights).
        import reference_flux2_vae as rf
        f2 = rf.random_flux2_vae(c["z"], c["widths"], c["blocks"], seed=0)
        f2.decoder.load_state_dict(model.decoder.state_dict())
        f2.post_quant_conv.load_state_dict(model.post_quant_conv.state_dict())
        cpu_sd, model = rf.comfy_state_dict(f2), f2.eval()
        shape = (1, c["z"] * 4, s // (2 * up), s // (2 * up))
    sd = {k: (v.to(run.dev, dtype) if v.is_floating_point() and not k.startswith("bn.") else v.to(run.dev))
          for k, v in cpu_sd.items()}
    wbytes = sum(v.numel() * v.element_size() for k, v in sd.items() if k.startswith(("decoder.", "post_quant")))
    base["weights_bytes"] = wbytes
    z = torch.randn(*shape, generator=torch.Generator().manual_seed(1)).to(run.dev, dtype)
    try:
        run.decode(sd, z, dtype, wbytes, mode="full")  # warm-up (cuDNN algorithm choice, allocator)
        full, info, t, res, alloc, meter = run.decode(sd, z, dtype, wbytes, mode="full")
    except ValueError as e:
        run.row(base, "full", status="unsupported", note=str(e)[:300])
        return
    except Exception as e:  # noqa: BLE001
        run.row(base, "full", status="oom" if common.is_oom(e) else "error", note=str(e)[:300])
        return
    probe[dtype_name] = max(probe.get(dtype_name, 0.0), t / mp)
    run.row(base, "full", info, t=t, res=res, alloc=alloc, meter=meter, warm=True)
    if s // up > 128:
        for m in model.modules():
            if isinstance(m, rk.AttnBlock):
                m.forward = types.MethodType(chunked_attention_forward, m)

    def ref_fn():  # the eager model is on the device only for its own run, so the native runs' peaks leave it out
        model.to(run.dev, dtype)
        try:
            with torch.no_grad():
                return rk.to_image(model(z)).cpu(), 1
        finally:
            model.to("cpu")

    run.modes(base, sd, z, dtype, wbytes, full, res, s // 2, ref_fn)
    del sd, model, full
    common.free_cuda()


def run_wan(a, run, rw, c, dtype_name):
    dtype = common.dtype_of(dtype_name)
    fam = c["family"]
    scale = 8 if fam == "wan2.1" else 16
    sd = {k: v.to(run.dev, dtype) for k, v in S.vae_state_dict(fam, dim=c["dim"]).items()}
    wbytes = sum(v.numel() * v.element_size() for k, v in sd.items())
    zc = sd["conv2.weight"].shape[0]
    h, w = c["height"] // scale, c["width"] // scale
    gen = torch.Generator().manual_seed(1)
    share = min(c["share"], common.left_s(a) - 5)
    # probe: 2 latent frames (5 frames) with full; also the warm-up
    z2 = torch.randn(1, zc, 2, h, w, generator=gen).to(run.dev, dtype)
    try:
        _, _, t2, _, _, _ = run.decode(sd, z2, dtype, wbytes, mode="full")
    except Exception as e:  # noqa: BLE001
        run.rows.add(case=c["case"], family=fam, dtype=dtype_name, width=c["width"], height=c["height"], frames=5,
                     latent_frames=2, mode="full", status="oom" if common.is_oom(e) else "error", note=str(e)[:300])
        return
    per_lat = t2 / 2
    chosen = None
    for f in c["frames"]:
        lat = (f - 1) // 4 + 1
        if per_lat * lat * 6.5 + t2 <= share:  # full, exact x2 (~1.5 each), blend, reference prefix (~1)
            chosen = f
            break
    note = ""
    if chosen is None:
        chosen, note = c["frames"][-1], f"even {c['frames'][-1]} frames predicted over the share"
    elif chosen != c["frames"][0]:
        note = f"shortened from {c['frames'][0]} frames to fit the {c['share']} s share (probe {t2:.2f} s / 2 latent frames)"
    lat = (chosen - 1) // 4 + 1
    base = dict(case=c["case"], family=fam, dtype=dtype_name, width=c["width"], height=c["height"], frames=chosen,
                latent_frames=lat, weights_bytes=wbytes)
    z = torch.randn(1, zc, lat, h, w, generator=gen).to(run.dev, dtype)
    try:
        full, info, t, res, alloc, meter = run.decode(sd, z, dtype, wbytes, mode="full")
    except Exception as e:  # noqa: BLE001
        run.row(base, "full", status="oom" if common.is_oom(e) else "error", note=str(e)[:300])
        return
    run.row(base, "full", info, t=t, res=res, alloc=alloc, meter=meter, warm=True, note=note)
    # whole-clip reference on a prefix: its activations are ~10 tensors of the clip at full resolution
    top = sd["decoder.head.0.gamma"].shape[0]
    per_frame = 10 * top * c["height"] * c["width"] * (4 if dtype == torch.float32 else 2)
    cap = (40 * common.GIB) if run.dev == "cuda" else (2 * common.GIB)
    k = max(1, min(lat, 1 + int(cap // per_frame) // 4))
    if run.dev == "cuda":
        k = min(k, 3)  # time: the reference runs every layer over the whole prefix

    def ref_fn():
        with torch.no_grad():
            return rw.to_image(rw.decode_video(sd, z[:, :, :k])), 4 * k - 3

    run.modes(base, sd, z, dtype, wbytes, full, res, c["width"] // 2, ref_fn)
    del sd, full
    common.free_cuda()


def main():
    a = common.parse_args()
    rows = common.Rows(a.out / "decoders.csv", COLUMNS)
    ht, why = common.import_torch_module()
    if ht is None:
        rows.add(case="all", status="no-module", note=why)
        rows.close()
        common.write_step_status(a, "decoders", rows=rows.n, error=why)
        return
    import reference_kl_vae as rk
    import reference_wan_vae as rw
    if a.device == "cuda":
        # fp32 means fp32: TF32 convolutions would put both the native decoder and the eager reference (same
        # process, same ATen context) ~1e-3 apart and hide a real parity error; bf16 is not affected
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    run = Runner(a, ht, rows)
    probe = {}
    kl = {c["case"]: c for c in kl_cases(a.dry_run)}
    wan = {c["case"]: c for c in wan_cases(a.dry_run)}
    # priority order: every family in bf16 first (the dtype ComfyUI decodes in), the big KL size last in each
    order = []
    for dt in ("bf16", "fp32"):
        order += [("kl", k, dt) for k in kl if not k.startswith(("kl-4096", "flux2"))]
        order += [("wan", k, dt) for k in wan]
        order += [("kl", k, dt) for k in kl if k.startswith(("kl-4096", "flux2"))]
    for fam, key, dt in order:
        c = kl.get(key) if fam == "kl" else wan.get(key)
        if common.left_s(a) < 10:
            rows.add(case=key, family=c["family"], dtype=dt, mode="full", status="skipped-time")
            continue
        if fam == "kl":
            run_kl(a, run, rk, c, dt, probe)
        else:
            run_wan(a, run, rw, c, dt)
    rows.close()
    common.write_step_status(a, "decoders", rows=rows.n)


if __name__ == "__main__":
    main()
