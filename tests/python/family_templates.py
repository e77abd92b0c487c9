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


def assert_read_with(a, model, precision, encoders, vae, shape):
    """The plan `a` of a template read with its own diffusion model and precision, text encoders, VAE and size."""
    job = a["job"]
    assert (job["diffusion"]["model"], job["diffusion"]["precision"]) == (model, precision)
    assert [t["model"] for t in job["text_encoders"]] == encoders
    assert job["vae"]["model"] == vae
    assert a["workflow"]["size_known"] and (job["width"], job["height"], job["frames"]) == shape


def sample_stage(a):
    return next(s for s in a["stages"] if s["name"] == "sample")


def sequence_tokens(a):
    """Tokens per sequence of the sample stage, as its note says."""
    return int(next(n for n in sample_stage(a)["notes"] if "tokens per sequence" in n).split()[0])


def weights(a, prefix):
    """Bytes of the sample stage's weights of the model whose name starts with `prefix`."""
    return max(v for k, v in sample_stage(a)["breakdown"].items() if k.startswith("weights:" + prefix))


def assert_size_follows(a, model, node_type):
    """The plan `a` of a template whose latent size follows a node Headroom cannot size (a resize of a loaded
    image): the model is still read, the verdict is withheld and the reason names that node."""
    assert a["job"]["diffusion"]["model"] == model
    assert a["verdict"] == "unknown" and not a["workflow"]["size_known"]
    assert a["not_covered"]["node_type"] == node_type, a["not_covered"]
