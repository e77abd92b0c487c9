"""Step 5: summary.json and summary.md from the files of steps 1-4 and the step records of run.sh
(WORK/steps.tsv: step, exit code, seconds, budget). Reads CSVs only (no torch import), so it runs even when
every other step failed. `checks` lists each file and comparison the run promises; a dry run passes when
every check passes."""
import json
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

FILES = ["versions.json", "decoders.csv", "kernels.csv", "peaks.csv", "promise.csv"]


def read_rows(path):
    import csv
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def read_steps(work):
    """The step records of run.sh (WORK/steps.tsv), each with the status file its step wrote."""
    steps = []
    tsv = work / "steps.tsv"
    if tsv.exists():
        for line in tsv.read_text().splitlines():
            name, rc, sec, budget = line.split("\t")
            rec = {"step": name, "rc": int(rc), "seconds": float(sec), "budget_s": float(budget),
                   "timed_out": int(rc) in (124, 137)}
            st = work / f"{name}.json"
            if st.exists():
                rec["status"] = json.loads(st.read_text())
            steps.append(rec)
    return steps


class Checks(list):
    """The run's promises, each with whether it held: {check, ok, detail}."""

    def __call__(self, name, ok, detail=""):
        self.append({"check": name, "ok": bool(ok), "detail": detail})


def decoders_summary(out, check):
    dec = read_rows(out / "decoders.csv")
    ran = [r for r in dec if r["status"] == "ok"]
    fulls = [r for r in ran if r["mode"] == "full"]
    exacts = [r for r in ran if r["mode"].startswith("exact")]
    blends = [r for r in ran if r["mode"] == "blend"]
    refs = [r for r in dec if r["mode"] == "full-vs-reference"]
    exact_err = {dt: max([num(r["maxerr_vs_full"]) for r in exacts if r["dtype"] == dt] or [float("nan")])
                 for dt in ("fp32", "bf16")}
    ref_err = {dt: max([num(r["maxerr_vs_reference"]) for r in refs if r["dtype"] == dt] or [float("nan")])
               for dt in ("fp32", "bf16")}
    budgeted = [r for r in exacts if num(r["budget_bytes"])]
    dec_s = {"runs": len(ran), "cases": sorted({(r["case"], r["dtype"], r["frames"]) for r in fulls}),
             "skipped_or_failed": [f"{r['case']} {r['dtype']} {r['mode']}: {r['status']}" for r in dec
                                   if r["status"] not in ("ok", "refused")],
             "refused_budgets": [f"{r['case']} {r['dtype']} {r['mode']}" for r in dec if r["status"] == "refused"],
             "exact_maxerr_vs_full": exact_err, "full_maxerr_vs_reference": ref_err,
             "exact_under_budget": f"{sum(r['under_budget'] == 'true' for r in budgeted)}/{len(budgeted)}",
             "under_plan": f"{sum(r['under_plan'] == 'true' for r in ran if r['under_plan'])}/"
                           f"{sum(1 for r in ran if r['under_plan'])}",
             "speed": {f"{r['case']} {r['dtype']} {r['frames']}f": {
                 m: num(x["seconds"]) for x in ran if x["case"] == r["case"] and x["dtype"] == r["dtype"]
                 for m in [x["mode"]]} for r in fulls}}
    check("decoders: full ran", fulls, f"{len(fulls)} full decodes")
    check("decoders: exact compared with full", exacts and all(num(r["maxerr_vs_full"]) is not None for r in exacts))
    check("decoders: blend compared with full", blends and all(num(r["maxerr_vs_full"]) is not None for r in blends))
    check("decoders: full compared with the eager reference", refs and all(num(r["maxerr_vs_reference"]) is not None for r in refs))
    check("decoders: fp32 exact equals full (max error <= 1e-4)", exact_err["fp32"] <= 1e-4, f"{exact_err['fp32']:.3g}")
    check("decoders: fp32 full equals the reference (max error <= 1e-4)", ref_err["fp32"] <= 1e-4, f"{ref_err['fp32']:.3g}")
    check("decoders: peaks compared with the plan", any(r["under_plan"] for r in ran))
    return dec_s


def kernels_summary(out, check):
    ker = read_rows(out / "kernels.csv")
    kok = [r for r in ker if r["status"] == "ok"]
    ker_s = {"backend": sorted({r["backend"] for r in ker}), "ok": f"{sum(r['ok'] == 'true' for r in kok)}/{len(ker)}",
             "rows": [{k: r[k] for k in ("kernel", "dtype", "maxerr", "speedup", "ok")} for r in kok]}
    check("kernels: every kernel compared with its ATen twin", ker and all(r["ok"] == "true" for r in ker),
          ker_s["ok"])
    return ker_s


def peaks_summary(out, check):
    pk = read_rows(out / "peaks.csv")
    pok = [r for r in pk if r["status"] == "ok"]
    ratios = [num(r["activation_meas_over_est"]) for r in pok if num(r["activation_meas_over_est"])]
    peaks_s = {"rows": len(pok), "kind": sorted({r["kind"] for r in pok}),
               "activation_measured_over_estimate": {f"{r['#']} {r['model']} {r['resolution']} {r['frames']}".strip():
                                                      round(num(r["activation_meas_over_est"]), 3)
                                                      for r in pok if num(r["activation_meas_over_est"])},
               "failed": [f"{r['model']} {r['resolution']}: {r['status']}" for r in pk if r["status"] != "ok"]}
    stages = {r["stage"] for r in pok}
    check("peaks: DiT, text encoder, VAE decode and encode rows", {"sample", "text_encode", "vae_decode", "vae_encode"} <= stages,
          ", ".join(sorted(stages)))
    check("peaks: measured against Headroom's estimate", ratios, f"{len(ratios)} rows with an estimate")
    return peaks_s


def promise_summary(out, check, dry):
    pr = read_rows(out / "promise.csv")
    runs = [r for r in pr if r["ran"] == "true" or r["status"] == "refused"]
    fits = [r for r in runs if r["verdict"] == "fits"]
    broken = [r for r in fits if r["ran_ok"] != "true"]
    dnf = [r for r in runs if r["verdict"] == "does not fit"]
    dnf_oom = [r for r in dnf if r["ran_ok"] != "true"]
    errs = [num(r["estimate_error"]) for r in runs if num(r["estimate_error"]) is not None]
    settings = {r["setting"] for r in runs}
    prom_s = {"settings": len(settings), "rows": len(runs), "budgets_gib": sorted({int(r["budget_gib"]) for r in runs}),
              "fits": len(fits), "fits_that_ran_out": len(broken),
              "broken": [f"{r['setting']} {r['model']} {r['precision']} {r['width']}x{r['height']}x{r['frames']} "
                         f"b{r['batch']} @ {r['budget_gib']} GiB: {r['status']} (estimate {r['estimate_torch_bytes']}, "
                         f"measured {r['peak_reserved_bytes']})" for r in broken],
              "does_not_fit": len(dnf), "does_not_fit_that_ran_out": len(dnf_oom),
              "estimate_error": {"median": statistics.median(errs) if errs else None,
                                 "min": min(errs) if errs else None, "max": max(errs) if errs else None,
                                 "under_estimates": sum(e < 0 for e in errs)},
              "meters": sorted({r["meter"] for r in runs if r["meter"]}),
              "emulated": dry}
    check("promise: at least 30 settings x budgets ran", len(runs) >= 30, f"{len(runs)} runs of {len(settings)} settings")
    check("promise: 4 budgets", len(prom_s["budgets_gib"]) >= 4, str(prom_s["budgets_gib"]))
    check("promise: every run has an estimate error", all(num(r["estimate_error"]) is not None for r in runs
                                                         if r["ran"] == "true"))
    if not dry:  # on the GPU this is the promise itself; the CPU emulation only reports it
        check("promise: every 'fits' ran without running out", not broken, f"{len(broken)} broken")
    return prom_s


def markdown(summary, total_s):
    """summary.md's lines (the total in whole seconds of the unrounded sum)."""
    dry, steps, checks = summary["dry_run"], summary["steps"], summary["checks"]
    dec_s, ker_s, peaks_s, prom_s = summary["decoders"], summary["kernels"], summary["peaks"], summary["promise"]
    exact_err, ref_err = dec_s["exact_maxerr_vs_full"], dec_s["full_maxerr_vs_reference"]
    md = [f"# Headroom GPU run{' (dry run, CPU: emulated figures)' if dry else ''}", "",
          f"device {summary['device']} {summary['gpu'] or ''}, torch {summary['torch']} (CUDA {summary['torch_cuda']}); "
          f"total {total_s:.0f} s", "", "| step | rc | seconds | budget |", "|---|---|---|---|"]
    md += [f"| {s['step']} | {s['rc']}{' (timed out)' if s['timed_out'] else ''} | {s['seconds']:.1f} | {s['budget_s']:.0f} |"
           for s in steps]
    md += ["", "## Decoders", f"- runs: {dec_s['runs']}; exact under its budget {dec_s['exact_under_budget']}; "
           f"under plan {dec_s['under_plan']}",
           f"- exact vs full, max error: fp32 {exact_err['fp32']:.3g}, bf16 {exact_err['bf16']:.3g}; "
           f"full vs eager reference: fp32 {ref_err['fp32']:.3g}, bf16 {ref_err['bf16']:.3g}"]
    for k, v in dec_s["speed"].items():
        md.append(f"- {k}: " + ", ".join(f"{m} {t:.3g} s" for m, t in v.items() if t is not None))
    if dec_s["skipped_or_failed"]:
        md.append("- not run: " + "; ".join(dec_s["skipped_or_failed"]))
    md += ["", "## Kernels", f"- backend {', '.join(ker_s['backend'])}; ok {ker_s['ok']}"]
    md += [f"- {r['kernel']} {r['dtype']}: max error {r['maxerr']}, ATen/kernel time {r['speedup']}" for r in ker_s["rows"]]
    md += ["", "## Peaks (measured activations / Headroom's estimate)"]
    md += [f"- {k}: {v}" for k, v in peaks_s["activation_measured_over_estimate"].items()]
    md += ["", "## The promise",
           f"- {prom_s['rows']} runs ({prom_s['settings']} settings x budgets {prom_s['budgets_gib']} GiB)",
           f"- 'fits': {prom_s['fits']}, of which ran out: **{prom_s['fits_that_ran_out']}**",
           f"- 'does not fit': {prom_s['does_not_fit']}, of which ran out unaided: {prom_s['does_not_fit_that_ran_out']}",
           f"- estimate error (estimate - measured) / measured: median {prom_s['estimate_error']['median']}, "
           f"min {prom_s['estimate_error']['min']}, max {prom_s['estimate_error']['max']}, "
           f"under-estimates {prom_s['estimate_error']['under_estimates']}"]
    md += [f"  - broken: {b}" for b in prom_s["broken"]]
    md += ["", "## Checks"] + [f"- [{'x' if c['ok'] else ' '}] {c['check']} {c['detail']}" for c in checks]
    return md


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ["OUT"])
    work = Path(os.environ.get("HEADROOM_GPU_WORK", out / ".steps"))
    dry = os.environ.get("HEADROOM_GPU_DRY_RUN") == "1"
    steps = read_steps(work)
    check = Checks()
    for f in FILES:
        p = out / f
        n = len(read_rows(p)) if f.endswith(".csv") else (1 if p.exists() and p.stat().st_size else 0)
        check(f"{f} exists and has rows", n > 0, f"{n} rows")
    versions = json.loads((out / "versions.json").read_text()) if (out / "versions.json").exists() else {}
    dec_s, ker_s = decoders_summary(out, check), kernels_summary(out, check)
    peaks_s, prom_s = peaks_summary(out, check), promise_summary(out, check, dry)
    steps_over = [s["step"] for s in steps if s["timed_out"]]
    total_s = sum(s["seconds"] for s in steps)
    summary = {"dry_run": dry, "device": versions.get("device"), "gpu": versions.get("gpu"),
               "torch": versions.get("torch"), "torch_cuda": versions.get("torch_cuda"),
               "build": versions.get("build", {}), "core_module": versions.get("core_module"),
               "torch_module": versions.get("torch_module"), "steps": steps, "total_seconds": round(total_s, 1),
               "steps_over_budget": steps_over, "decoders": dec_s, "kernels": ker_s, "peaks": peaks_s,
               "promise": prom_s, "checks": list(check), "all_checks_ok": all(c["ok"] for c in check)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    md = markdown(summary, total_s)
    (out / "summary.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
