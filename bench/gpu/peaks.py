"""Step 3: real peaks for the estimator's constants, stage by stage, the way ComfyUI runs them (inference mode,
SDPA attention, weights resident): random-weight DiT blocks of FLUX.1, FLUX.2 dev, klein 4B / 9B and Wan
(2 blocks of each kind at the real token count; weights measured per block and extrapolated to the whole
model, counted apart from the activations), text encoders at their padded lengths (2 layers), the Flux VAE
decode and encode (eager, SDPA mid-block attention) and the Wan VAE decode (Headroom's native `full`, one
latent frame at a time with the causal cache, as ComfyUI's decode does).

writes peaks.csv: the columns of the calibration table in
../shared/facts/vram-measurements-and-architectures.md §2 (#, model, component, precision, resolution, frames,
batch, offload / settings, peak, GPU, software, source, kind), then the figures to fit constants from
(bytes; activation = peak allocated less weights, inputs and ballast) and Headroom's estimate of the same
stage's activations where the model is in the catalog.

On the CPU dry run the eager stages run at the real sizes on the `meta` device (live-tensor accounting,
kind 'E', not a measurement); the native Wan decode runs at a tiny size (peak RSS).
"""
import torch

import blocks as B
import common
import estimates as E
import stages as S

CAL = ["#", "model", "component", "precision", "resolution", "frames", "batch", "offload / settings", "peak", "GPU",
       "software", "source", "kind"]
EXTRA = ["stage", "tokens", "blocks_run", "weights_bytes_run", "weights_bytes_model", "inputs_bytes",
         "activation_bytes", "peak_allocated_bytes", "peak_reserved_bytes", "estimate_activation_bytes",
         "estimate_weights_bytes", "activation_meas_over_est", "seconds", "meter", "status", "note"]

DIT_CASES = [("flux1-dev", 1024, 1024, 1), ("flux1-dev", 1536, 1536, 1), ("flux1-dev", 2048, 2048, 1),
             ("flux2-dev", 1024, 1024, 1), ("flux2-dev", 2048, 2048, 1),
             ("flux2-klein-4b", 1024, 1024, 1), ("flux2-klein-4b", 2048, 2048, 1),
             ("flux2-klein-9b", 1024, 1024, 1), ("flux2-klein-9b", 2048, 2048, 1),
             ("wan2.1-t2v-1.3b", 832, 480, 81), ("wan2.1-t2v-14b", 832, 480, 81), ("wan2.1-t2v-14b", 1280, 720, 81),
             ("wan2.2-ti2v-5b", 1280, 704, 121), ("wan2.2-ti2v-5b", 1280, 704, 121, "token")]
TEXT_CASES = [("clip-l", "fp16"), ("t5-xxl", "fp16"), ("umt5-xxl", "fp16"), ("mistral-small-3.2", "bf16"),
              ("qwen3-4b", "bf16"), ("qwen3-8b", "bf16")]
VAE_CASES = [("decode", 1024, 1024), ("decode", 1920, 1088), ("decode", 2048, 2048), ("encode", 1024, 1024)]


class PeakRows:
    """peaks.csv, one row per stage measured (or skipped, or failed), numbered G1, G2, … in order, with
    Headroom's estimate of the same stage beside the measurement."""

    def __init__(self, a):
        self.a = a
        self.rows = common.Rows(a.out / "peaks.csv", CAL + EXTRA)
        self.hc, self.why_core = common.import_core_module(a.build_dir)
        self.dev = "cuda" if a.device == "cuda" else "meta"
        self.kind = "M" if self.dev == "cuda" else "E"
        self.gpu = common.gpu_name(a.device)
        self.sw = f"Headroom bench/gpu, torch {torch.__version__}, SDPA"
        self.n = 0

    def add(self, model, component, precision, resolution, frames, batch, settings, r, stage, est_st=None,
            weights_model=None, status="ok", note=""):
        self.n += 1
        row = {"#": f"G{self.n}", "model": model, "component": component, "precision": precision,
               "resolution": resolution, "frames": frames, "batch": batch, "offload / settings": settings,
               "GPU": self.gpu, "software": self.sw, "source": "bench/gpu/peaks.py (this run)", "kind": self.kind,
               "stage": stage, "status": status, "note": note}
        if r:
            wm = weights_model if weights_model is not None else r["weights_bytes"]
            other = wm - r["weights_bytes"]
            row.update(tokens=r.get("tokens", ""), blocks_run=r.get("blocks_run", ""),
                       weights_bytes_run=r["weights_bytes"], weights_bytes_model=wm, inputs_bytes=r["inputs_bytes"],
                       activation_bytes=r["activation_bytes"], peak_allocated_bytes=r["peak_allocated_bytes"],
                       peak_reserved_bytes=r["peak_reserved_bytes"], seconds=r["seconds"], meter=r["meter"])
            row["peak"] = (f"alloc {S.gib(r['peak_allocated_bytes'] + other):.3f}, "
                           f"resv {S.gib(r['peak_reserved_bytes'] + other):.3f}")
        if est_st:
            ea = est_st["breakdown"].get("activations", est_st["breakdown"].get("decode_plan"))
            row.update(estimate_activation_bytes=ea, estimate_weights_bytes=E.weights_in(est_st))
            if r and ea:
                row["activation_meas_over_est"] = r["activation_bytes"] / ea
        self.rows.add(**row)

    def cat(self, name):
        return self.hc is not None and name in E.catalog_names(self.hc)

    def failed(self, e):
        return "oom" if common.is_oom(e) else "error"


def main():
    a = common.parse_args()
    run = PeakRows(a)
    dit_rows(run)
    text_rows(run)
    kl_vae_rows(run)
    wan_encode_rows(run)
    wan_decode_rows(run)
    run.rows.close()
    common.write_step_status(a, "peaks", rows=run.rows.n, core=run.why_core or "ok")


def dit_rows(run):
    a, hc, add = run.a, run.hc, run.add
    for name, w, h, f, *mod in DIT_CASES:
        mod = mod[0] if mod else None
        if common.left_s(a) < 8:
            add(name, "DiT forward", "bf16", f"{w}x{h}", f, 1, "", None, "sample", status="skipped-time")
            continue
        c = B.DIT[name]
        comp = (f"DiT single forward, 2 double + 2 single blocks run, weights extrapolated to "
                f"{c['double']}+{c['single']}" if c["kind"] != "wan" else
                f"DiT single forward, 2 blocks run, weights extrapolated to {c['layers']}")
        try:
            _, _, wfull = S.dit_block_bytes(name, "bf16")
            r = S.run_dit(name, w, h, f, 1, "bf16", run.dev, modulation=mod)
            est = stage(E.estimate(hc, model=c["catalog"], width=w, height=h, frames=f, batch=1, cfg=1.0), "sample") \
                if run.cat(c["catalog"]) else None
            if c.get("per_token_mod"):
                comp += f"; modulation per {mod or c['per_token_mod']} (fp32)"
            add(name, comp, "bf16", f"{w}x{h}", f, 1, f"no offload, cfg 1, txt {c['txt_tokens']} tok", r, "sample",
                est, wfull, note="" if est or not hc else "not in Headroom's catalog: no estimate")
        except Exception as e:  # noqa: BLE001
            add(name, comp, "bf16", f"{w}x{h}", f, 1, "", None, "sample", status=run.failed(e), note=str(e)[:300])


def text_rows(run):
    a, hc, add = run.a, run.hc, run.add
    for name, prec in TEXT_CASES:
        if common.left_s(a) < 5:
            add(name, "text encoder", prec, "", "", 1, "", None, "text_encode", status="skipped-time")
            continue
        c = B.TEXT[name]
        try:
            r = S.run_text(name, 1, prec, run.dev)
            est = stage(E.estimate(hc, model=name, precision=prec), "text_encode") if run.cat(name) else None
            add(name, f"text encoder, 2 of {c['layers']} layers run, weights extrapolated (+ embedding)", prec,
                f"{c['tokens']} tokens", "", 1, f"padded to {c['tokens']}", r, "text_encode", est,
                S.text_full_weight_bytes(name, prec))
        except Exception as e:  # noqa: BLE001
            add(name, "text encoder", prec, "", "", 1, "", None, "text_encode", status=run.failed(e), note=str(e)[:300])


def kl_vae_rows(run):
    a, hc, add = run.a, run.hc, run.add
    import reference_kl_vae as rk
    for op, w, h in VAE_CASES:
        if common.left_s(a) < 5:
            add("flux-vae", f"VAE {op}", "bf16", f"{w}x{h}", "", 1, "", None, f"vae_{op}", status="skipped-time")
            continue
        try:
            fn = S.run_kl_decode if op == "decode" else S.run_kl_encode
            r = fn(rk, w, h, 1, "bf16", run.dev)
            if op == "decode":
                est = stage(E.estimate(hc, model="flux-vae", width=w, height=h, decode_mode="full"), "vae_decode") \
                    if run.cat("flux-vae") else None
            else:  # the encode stage of a Kontext job with one same-size reference image
                est = stage(E.estimate(hc, model="flux1-kontext-dev", width=w, height=h, reference_images=1),
                            "vae_encode") if run.cat("flux1-kontext-dev") else None
            add("flux-vae", f"VAE {op} only (eager, SDPA attention)", "bf16", f"{w}x{h}", "", 1, "whole image", r,
                f"vae_{op}", est, note="" if est else "no estimate for this stage")
        except Exception as e:  # noqa: BLE001
            add("flux-vae", f"VAE {op}", "bf16", f"{w}x{h}", "", 1, "", None, f"vae_{op}",
                status=run.failed(e), note=str(e)[:300])


def wan_encode_rows(run):
    a, hc, add = run.a, run.hc, run.add
    for w, h in ((832, 480), (1280, 720)):
        if common.left_s(a) < 5:
            add("wan2.1-vae", "VAE encode", "bf16", f"{w}x{h}", 4, 1, "", None, "vae_encode", status="skipped-time")
            continue
        try:
            r = S.run_wan_encode(w, h, 1, "bf16", run.dev)
            est = stage(E.estimate(hc, model="wan2.1-i2v-14b", width=w, height=h, frames=81), "vae_encode") \
                if run.cat("wan2.1-i2v-14b") else None
            add("wan2.1-vae", "VAE encode, one 4-frame chunk (eager; causal padding for the cache)", "bf16",
                f"{w}x{h}", 4, 1, "ComfyUI encodes 1 + 4k frames chunk by chunk", r, "vae_encode", est,
                note="estimate: the vae_encode stage of wan2.1-i2v-14b at 81 frames")
        except Exception as e:  # noqa: BLE001
            add("wan2.1-vae", "VAE encode", "bf16", f"{w}x{h}", 4, 1, "", None, "vae_encode",
                status=run.failed(e), note=str(e)[:300])


def wan_decode_rows(run):
    a, hc, add = run.a, run.hc, run.add
    ht, why = common.import_torch_module()
    if ht is None or common.left_s(a) <= 10:
        add("wan-vae", "VAE decode", "bf16", "", "", 1, "", None, "vae_decode", status="skipped",
            note=why or "time")
        return
    for fam, w, h, lat in (("wan2.1", 832, 480, 3), ("wan2.2", 1280, 704, 3)):
        try:
            if a.dry_run:
                w, h = (40, 32) if fam == "wan2.1" else (64, 64)
            sd = {k: v.to(a.device, torch.bfloat16)
                  for k, v in S.vae_state_dict(fam, dim=8 if a.dry_run else None).items()}
            s = 8 if fam == "wan2.1" else 16
            z = torch.randn(1, sd["conv2.weight"].shape[0], lat, h // s, w // s).to(a.device, torch.bfloat16)
            r = S.run_native_decode(ht, sd, z, a.device, torch.bfloat16, mode="full")
            frames = 4 * lat - 3
            vae = f"{fam}-vae"
            est = stage(E.estimate(hc, model=vae, width=w, height=h, frames=frames, decode_mode="full"),
                        "vae_decode") if run.cat(vae) else None
            add(vae, "VAE decode only (Headroom native full: one latent frame at a time, causal cache)", "bf16",
                f"{w}x{h}", frames, 1, "output frames on the CPU", r, "vae_decode", est,
                note="tiny widths (dry run), peak RSS" if a.dry_run else "")
        except Exception as e:  # noqa: BLE001
            add(f"{fam}-vae", "VAE decode", "bf16", f"{w}x{h}", "", 1, "", None, "vae_decode",
                status=run.failed(e), note=str(e)[:300])


def stage(est, name):
    return E.stage(est, name) if est and "error" not in est else None


if __name__ == "__main__":
    main()
