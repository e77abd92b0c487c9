"""`headroom plan` on a workflow of several samplers (issue 19): the table lists each sampler by id, type and
the title the workflow gives it, marks the one that binds, and the stages and the job line are that
sampler's, read from the core's JSON (the table computes nothing). A prompt whose VAE Decode links to a
node the prompt lacks is bad input (exit 2) naming the node and the link."""
import json
import subprocess

import pytest

from conftest import BUILD_DIR, REPO

CLI = BUILD_DIR / "headroom"
pytestmark = pytest.mark.skipif(not CLI.is_file(), reason=f"{CLI} is not built")


def flux_and_wan():
    """A Flux image (#8, "Flux pass") and a Wan 2.1 video (#9, titled only with its type), each decoded on its own."""
    return json.loads((REPO / "tests" / "data" / "workflows" / "two_samplers_flux_wan.json").read_text())


def plan(tmp_path, wf, *flags):
    path = tmp_path / "wf.json"
    path.write_text(json.dumps(wf))
    return subprocess.run([str(CLI), "plan", str(path), "--vram", "24", *flags], capture_output=True, text=True, timeout=60)


def test_the_table_names_each_sampler_and_shows_the_binding_ones_figures(tmp_path):
    answer = json.loads(plan(tmp_path, flux_and_wan(), "--json").stdout)
    binding = [s for s in answer["samplers"] if s["binding"]]
    assert len(binding) == 1
    b = binding[0]
    assert [s["title"] for s in answer["samplers"]] == ["Flux pass", None]  # "KSampler" only repeats the type
    table = plan(tmp_path, flux_and_wan()).stdout
    for s in answer["samplers"]:
        name = f"KSampler #{s['node_id']}" + (f" \"{s['title']}\"" if s["title"] else "")
        row = next(line for line in table.splitlines() if line.strip().startswith(name + " "))
        assert s["model"] in row
        assert row.endswith("(binds)") == s["binding"], row
    shape = f"{b['width']}x{b['height']}" + (f"x{b['frames']} frames" if b["frames"] > 1 else "")
    assert f"Job       {b['model']} " in table and shape in table.splitlines()[1]
    sample = next(s for s in answer["stages"] if s["name"] == "sample")
    assert sample["peak_bytes"] == b["peak_bytes"]


def test_a_decode_linked_to_a_missing_node_is_bad_input(tmp_path):
    wf = flux_and_wan()
    wf["12"]["inputs"]["samples"] = ["99", 0]
    done = plan(tmp_path, wf)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "VAEDecode #12" in done.stderr and "'samples'" in done.stderr and "'99'" in done.stderr
    assert "verdict" not in done.stdout
