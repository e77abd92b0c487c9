"""Issue 26's coverage figure: scripts/templates_coverage.py counts the local official templates that run a
diffusion model and are estimated with their own models and shapes. The build is held to the committed
floor (tests/data/templates/coverage.json, written by the script's --write): the count may not fall and no
template estimated there may stop being estimated. The script's own rules are checked on answers made up
for the purpose (a crash, a timeout, a mixed workflow with one unknown model)."""
import importlib.util
import json
import os
import stat
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
_spec = importlib.util.spec_from_file_location("templates_coverage", REPO / "scripts" / "templates_coverage.py")
coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coverage)
tt = coverage.tt

FOLDER = tt.templates_dir()
BINARY = tt.headroom_binary()
STORED = json.loads(coverage.COVERAGE.read_text())
needs_corpus = [
    pytest.mark.skipif(FOLDER is None, reason=f"{tt.DISTRIBUTION} is not installed"),
    pytest.mark.skipif(not BINARY.is_file(), reason=f"{BINARY} is not built"),
]


@pytest.fixture(scope="module")
def result():
    return coverage.survey(jobs=min(2, os.cpu_count() or 1))


@pytest.mark.skipif(FOLDER is None, reason=f"{tt.DISTRIBUTION} is not installed")
@pytest.mark.skipif(not BINARY.is_file(), reason=f"{BINARY} is not built")
def test_coverage_does_not_fall_below_the_committed_floor(result):
    assert result["package_version"] == STORED["package_version"], \
        "coverage.json was written from another package version; run scripts/templates_coverage.py --write"
    assert result["local"] == STORED["local"] and result["runs_diffusion_model"] == STORED["runs_diffusion_model"], \
        f"expected {STORED['local']} local templates, {STORED['runs_diffusion_model']} running a diffusion model; " \
        f"found {result['local']}, {result['runs_diffusion_model']}"
    lost = sorted(set(STORED["estimated_templates"]) - set(result["estimated_templates"]))
    reasons = {r["template"]: r["reason"] for r in result["not_estimated"]}
    assert not lost, "no longer estimated: " + "; ".join(f"{t}: {reasons.get(t)}" for t in lost)
    assert result["estimated"] >= STORED["estimated"]


@pytest.mark.skipif(FOLDER is None, reason=f"{tt.DISTRIBUTION} is not installed")
@pytest.mark.skipif(not BINARY.is_file(), reason=f"{BINARY} is not built")
def test_every_template_is_either_estimated_or_given_a_reason(result):
    assert result["estimated"] + len(result["not_estimated"]) == result["runs_diffusion_model"]
    assert all(r["reason"] and r["group"] for r in result["not_estimated"])
    # Templates that load only an LLM, an upscaler or a depth model are not in the denominator.
    assert "llm_qwen3_text_gen" in result["no_diffusion_model"]
    assert "utility-gan_upscaler" in result["no_diffusion_model"]
    # A checkpoint loader Headroom does not read (Hunyuan3D) still counts as running a diffusion model.
    assert "3d_hunyuan3d-v2.1" not in result["no_diffusion_model"]


def _answer(verdict, loaders, size_known=True, reason=None):
    return {"verdict": verdict, "reason": reason, "workflow": {"loaders": loaders, "size_known": size_known}}


def test_a_mixed_workflow_with_one_unknown_diffusion_model_is_not_estimated():
    loaders = [{"role": "diffusion", "file": "flux1-dev.safetensors", "model": "flux1-dev"},
               {"role": "diffusion", "file": "acme_image_bf16.safetensors", "model": None}]
    ok, reason, group = coverage.judge(0, _answer("fits", loaders), "")
    assert not ok and "acme_image_bf16.safetensors" in reason and "counts only the other" in reason
    assert group == "unknown diffusion model: acme_image"


def test_an_assumed_size_is_not_estimated_and_known_models_with_a_size_are():
    loaders = [{"role": "diffusion", "file": "flux1-dev.safetensors", "model": "flux1-dev"},
               {"role": "text_encoder", "file": "odd.safetensors", "model": None}]
    assert not coverage.judge(0, _answer("fits", loaders, size_known=False), "")[0]
    assert coverage.judge(0, _answer("fits", loaders), "") == (True, None, None)


def _fake_binary(tmp_path, body):
    path = tmp_path / "headroom"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.mark.skipif(os.name == "nt", reason="the fake binary is a shell script")
def test_a_crash_or_a_timeout_is_a_reason_not_an_abort(tmp_path, monkeypatch):
    workflow = tmp_path / "t.json"
    workflow.write_text("{}")
    crash = _fake_binary(tmp_path, "echo 'boom' >&2; exit 4")
    rc, answer, error = coverage.plan(crash, workflow)
    assert (rc, answer, error) == (4, None, "boom")
    assert coverage.judge(rc, answer, error) == (False, "boom", "CLI gave no answer")
    monkeypatch.setattr(coverage, "TIMEOUT_S", 1)
    slow = _fake_binary(tmp_path, "sleep 5")
    rc, answer, error = coverage.plan(slow, workflow)
    assert rc is None and answer is None and "timed out after 1 s" in error


def test_a_muted_loader_or_a_loader_of_another_pack_is_judged_by_what_it_loads():
    known = {"UNETLoader"}
    assert coverage.loads_diffusion_model("UNETLoader", 0, {}, ["x.safetensors"], known)
    assert not coverage.loads_diffusion_model("UNETLoader", 4, {}, ["x.safetensors"], known)
    assert coverage.loads_diffusion_model("ImageOnlyCheckpointLoader", 0, {}, ["h3d.safetensors"], known)
    assert coverage.loads_diffusion_model("SomePackLoader", 0, {"models": [{"directory": "diffusion_models"}]},
                                          [], known)
    assert not coverage.loads_diffusion_model("UpscaleModelLoader", 0, {"models": [{"directory": "upscale_models"}]},
                                              ["4x.pth"], known)


def test_a_withheld_verdict_is_grouped_by_what_withheld_it_in_whole_words():
    loaders = [{"role": "diffusion", "file": "flux1-dev.safetensors", "model": "flux1-dev"}]
    why = "a model patch Headroom does not know: ModelPatchLoader #173 loads 'x.safetensors'"
    answer = _answer("unknown", loaders, reason=why)
    answer["not_covered"] = {"kind": "part", "node_id": "173", "node_type": "ModelPatchLoader", "why": why}
    assert coverage.judge(0, answer, "") == (False, why, "verdict unknown: part at ModelPatchLoader")
    answer["not_covered"] = {"kind": "sampler_size"}
    assert coverage.judge(0, answer, "")[2] == "verdict unknown: sampler_size"
