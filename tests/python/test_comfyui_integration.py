"""Against a real ComfyUI (only when COMFYUI_PATH points at a ComfyUI source tree whose dependencies
the test's Python can import): the pack loads without IMPORT FAILED, /object_info lists its nodes, the
web folder is served, and a CPU prompt with the Preflight node executes.

Optional: COMFYUI_PYTHONPATH (extra import paths for ComfyUI's dependencies), COMFYUI_FRONTEND_ROOT
(a built frontend for --front-end-root), COMFYUI_PYTHON (interpreter; default this one)."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from api_prompts import FLUX_API_PROMPT
from conftest import BUILD_DIR, REPO

COMFY = os.environ.get("COMFYUI_PATH")
pytestmark = pytest.mark.skipif(not COMFY or not (Path(COMFY) / "main.py").is_file(),
                                reason="COMFYUI_PATH not set to a ComfyUI source tree")
OUR_NODES = ["HeadroomPreflight", "HeadroomVAEDecode", "HeadroomLoadDiffusionModel", "HeadroomExplainOOM",
             "HeadroomVRAMSnapshot"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def post(url, body, timeout=10):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


@pytest.fixture(scope="module")
def comfy(tmp_path_factory):
    base = tmp_path_factory.mktemp("comfy")
    custom = base / "packs"
    custom.mkdir()
    (base / "custom_nodes").mkdir()  # main.py lists it before reading the extra paths
    (custom / "headroom").symlink_to(REPO, target_is_directory=True)
    yaml = base / "extra_model_paths.yaml"
    yaml.write_text(f"headroom_test:\n  custom_nodes: {custom}\n")
    port = free_port()
    cmd = [os.environ.get("COMFYUI_PYTHON", sys.executable), "main.py", "--cpu", "--listen", "127.0.0.1",
           "--port", str(port), "--disable-auto-launch", "--disable-api-nodes", "--base-directory", str(base),
           "--extra-model-paths-config", str(yaml)]
    if os.environ.get("COMFYUI_FRONTEND_ROOT"):
        cmd += ["--front-end-root", os.environ["COMFYUI_FRONTEND_ROOT"]]
    env = dict(os.environ, HEADROOM_BUILD_DIR=str(BUILD_DIR))
    if os.environ.get("COMFYUI_PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["COMFYUI_PYTHONPATH"]
    log_path = base / "comfyui.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, cwd=COMFY, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"ComfyUI exited with {proc.returncode}:\n{log_path.read_text()[-4000:]}")
        try:
            get(url + "/system_stats", timeout=2)
            break
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(1)
    else:
        proc.kill()
        pytest.fail("ComfyUI did not start within 180 s:\n" + log_path.read_text()[-4000:])
    yield url, log_path
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def test_pack_loads_without_import_failed(comfy):
    _, log_path = comfy
    log = log_path.read_text().splitlines()
    lines = [l for l in log if "IMPORT FAILED" in l or "Cannot import" in l]
    assert not [l for l in lines if "headroom" in l.lower()], lines
    if (BUILD_DIR / "capi" / "libheadroom_core.so").is_file():  # the C library answers inside ComfyUI
        core = [l for l in log if "Headroom: native core" in l]
        assert core and "loaded from" in core[0] and "libheadroom_core" in core[0], core


def test_object_info_lists_nodes_and_web_folder_is_served(comfy):
    url, _ = comfy
    info = get(url + "/object_info")
    for name in OUR_NODES:
        assert name in info and info[name]["category"].startswith("Headroom")
    assert "/extensions/headroom/headroom.js" in get(url + "/extensions")
    vram = get(url + "/headroom/vram")
    assert "snapshot" in vram and "native" in vram
    if (BUILD_DIR / "capi" / "libheadroom_core.so").is_file():
        assert vram["native"]["core"]["available"] is True, vram["native"]


def test_cpu_prompt_with_preflight_executes(comfy):
    url, _ = comfy
    prompt = {
        "1": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 64, "height": 64, "batch_size": 1}},
        "2": {"class_type": "HeadroomPreflight", "inputs": {"samples": ["1", 0], "budget": "24", "action": "warn"}},
        "3": {"class_type": "SaveLatent", "inputs": {"samples": ["2", 0], "filename_prefix": "headroom_test"}},
    }
    status, body = post(url + "/prompt", {"prompt": prompt, "client_id": "headroom-test"})
    assert status == 200, body
    prompt_id = body["prompt_id"]
    deadline = time.time() + 120
    while time.time() < deadline:
        history = get(url + f"/history/{prompt_id}")
        if prompt_id in history and history[prompt_id].get("status", {}).get("completed") is not None:
            break
        time.sleep(0.5)
    entry = history[prompt_id]
    assert entry["status"]["status_str"] == "success", entry["status"]
    report = entry["outputs"]["2"]["text"][0]
    # No diffusion loader in this prompt: the report must say it could not estimate, never a verdict.
    assert "Verdict: unknown" in report and "no diffusion model loader runs in this workflow" in report


def test_queue_gate_makes_comfyui_refuse_the_prompt_with_the_reason(comfy):
    """The block mechanism itself: ComfyUI validates the gate node and answers 400 with our text."""
    url, _ = comfy
    from headroom_pack.nodes.server.queue_gate import blocked_prompt
    status, body = post(url + "/prompt", {"prompt": blocked_prompt("Headroom blocked this run: test reason"),
                                          "client_id": "headroom-test"})
    assert status == 400
    assert "test reason" in json.dumps(body["node_errors"])


def test_queue_time_block_through_comfyuis_prompt_route(comfy):
    """Flux dev (16-bit) on a 1 GB budget does not fit: with the block setting ComfyUI's own /prompt
    answers 400 with the plan and queues nothing."""
    url, _ = comfy
    status, body = post(url + "/headroom/settings", {"queue_action": "block", "budget": "1"})
    assert status == 200
    try:
        status, body = post(url + "/prompt", {"prompt": FLUX_API_PROMPT, "client_id": "headroom-test"})
        errors = json.dumps(body.get("node_errors", {}))
        assert status == 400 and "Headroom blocked this run" in errors and "Verdict: does not fit" in errors
    finally:
        post(url + "/headroom/settings", {"queue_action": "warn", "budget": "auto"})
