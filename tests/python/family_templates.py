"""Shared by the family tests of issue 26: the pinned template package's folder, the headroom binary,
the skip marks when either is missing, and `plan(template)`, the CLI's --json answer for one template."""
import importlib.util
import json
import subprocess

import pytest

from conftest import REPO

_spec = importlib.util.spec_from_file_location("templates_table", REPO / "scripts" / "templates_table.py")
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)
FOLDER = table.templates_dir()
BINARY = table.headroom_binary()
SKIP = [pytest.mark.skipif(FOLDER is None, reason=f"{table.DISTRIBUTION} is not installed"),
        pytest.mark.skipif(not BINARY.is_file(), reason=f"{BINARY} is not built")]


def plan(name, vram=24):
    p = subprocess.run([str(BINARY), "plan", str(FOLDER / f"{name}.json"), "--vram", str(vram), "--json"],
                       capture_output=True, text=True, timeout=120)
    return json.loads(p.stdout)


def sample_stage(answer):
    return next(s for s in answer["stages"] if s["name"] == "sample")


def sequence_tokens(answer):
    """The sample stage's tokens per sequence, as its note states them."""
    return int(next(n for n in sample_stage(answer)["notes"] if "tokens per sequence" in n).split()[0])


def largest_weights(answer, prefix):
    return max(v for k, v in sample_stage(answer)["breakdown"].items() if k.startswith("weights:" + prefix))


def check_read(template, model, precision, encoders, vae, shape):
    """The template plans with a verdict, its own diffusion model at `precision`, the text encoders (any order),
    the VAE (None: no VAE of its own) and the (width, height, frames) it records."""
    a = plan(template)
    job = a["job"]
    assert a["verdict"] != "unknown", a.get("reason")
    assert (job["diffusion"]["model"], job["diffusion"]["precision"]) == (model, precision)
    assert sorted(t["model"] for t in job["text_encoders"]) == sorted(encoders)
    assert (job.get("vae") or {}).get("model") == vae
    assert a["workflow"]["size_known"] and (job["width"], job["height"], job["frames"]) == shape
    return a
