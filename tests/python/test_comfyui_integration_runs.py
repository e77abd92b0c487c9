"""The run recorder in a real ComfyUI on the CPU (only with COMFYUI_PATH; COMFYUI_PYTHON runs it): a VAE
decode of a Flux-architecture VAE made at test time (random weights, ComfyUI's own VAELoader and
VAEDecode) appears in GET /headroom/runs with its decode stage's predicted bytes, the process's measured
RAM and outcome "ok"; a run killed with SIGKILL during a slow decode is "unfinished" after a restart,
with its stage, and the start-up log says so."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error
from pathlib import Path

import pytest

from conftest import BUILD_DIR, REPO
from test_comfyui_integration import free_port, get, post

COMFY = os.environ.get("COMFYUI_PATH")
pytestmark = [pytest.mark.skipif(not COMFY or not (Path(COMFY) / "main.py").is_file(),
                                 reason="COMFYUI_PATH not set to a ComfyUI source tree"),
              pytest.mark.skipif(not (BUILD_DIR / "capi").is_dir(), reason="the core library is not built")]
PYTHON = os.environ.get("COMFYUI_PYTHON", sys.executable)

# Flux's AutoencoderKL (16 latent channels) as ComfyUI detects it (comfy/sd.py): the decoder and the one
# encoder key that tells it from the x4 upscaler VAE; ComfyUI loads the rest of the encoder as missing.
MAKE_VAE = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, sys.argv[1])
    import comfy.cli_args
    comfy.cli_args.args.cpu = True
    import comfy.sd
    from safetensors.torch import save_file
    vae = comfy.sd.VAE(sd={"decoder.conv_in.weight": torch.zeros(512, 16, 3, 3),
                           "encoder.down.2.downsample.conv.weight": torch.zeros(512, 512, 3, 3)})
    g = torch.Generator().manual_seed(0)
    out = {}
    for name, t in vae.first_stage_model.state_dict().items():
        if not (name.startswith("decoder.") or name == "encoder.down.2.downsample.conv.weight"):
            continue
        if "norm" in name:
            v = torch.ones(t.shape) if name.endswith("weight") else torch.zeros(t.shape)
        elif name.endswith("weight") and t.dim() > 1:
            v = torch.randn(t.shape, generator=g) * (1.0 / t[0].numel()) ** 0.5
        else:
            v = torch.zeros(t.shape)
        out[name] = v.to(torch.float16).contiguous()
    save_file(out, sys.argv[2])
""")


def decode_prompt(size):
    return {"1": {"class_type": "EmptySD3LatentImage", "inputs": {"width": size, "height": size, "batch_size": 1}},
            "2": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
            "3": {"class_type": "VAEDecode", "inputs": {"samples": ["1", 0], "vae": ["2", 0]}},
            "4": {"class_type": "PreviewImage", "inputs": {"images": ["3", 0]}}}


class Comfy:
    def __init__(self, base):
        self.base = base
        self.proc = None
        self.log_path = None

    def start(self, n):
        port = free_port()
        cmd = [PYTHON, "main.py", "--cpu", "--listen", "127.0.0.1", "--port", str(port), "--disable-auto-launch",
               "--disable-api-nodes", "--base-directory", str(self.base), "--extra-model-paths-config",
               str(self.base / "extra_model_paths.yaml")]
        env = dict(os.environ, HEADROOM_BUILD_DIR=str(BUILD_DIR), OMP_NUM_THREADS="2")
        self.log_path = self.base / f"comfyui{n}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, cwd=COMFY, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 180
        while time.time() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"ComfyUI exited with {self.proc.returncode}:\n{self.log_path.read_text()[-4000:]}")
            try:
                get(self.url + "/system_stats", timeout=2)
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(1)
        self.stop()
        pytest.fail("ComfyUI did not start within 180 s")

    def stop(self, kill=False):
        if self.proc is None:
            return
        if kill:
            self.proc.send_signal(signal.SIGKILL)
        else:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        self.proc = None


@pytest.fixture(scope="module")
def comfy(tmp_path_factory):
    base = tmp_path_factory.mktemp("comfy_runs")
    custom = base / "packs"
    custom.mkdir()
    (base / "custom_nodes").mkdir()
    (custom / "headroom").symlink_to(REPO, target_is_directory=True)
    (base / "extra_model_paths.yaml").write_text(f"headroom_test:\n  custom_nodes: {custom}\n")
    vae_dir = base / "models" / "vae"
    vae_dir.mkdir(parents=True)
    subprocess.run([PYTHON, "-c", MAKE_VAE, COMFY, str(vae_dir / "ae.safetensors")], check=True, timeout=600,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c = Comfy(base)
    c.start(1)
    yield c
    c.stop()


def wait_done(url, prompt_id, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        history = get(url + f"/history/{prompt_id}")
        if prompt_id in history and history[prompt_id].get("status", {}).get("completed") is not None:
            return history[prompt_id]
        time.sleep(0.5)
    pytest.fail(f"prompt {prompt_id} did not finish within {timeout} s")


def run_of(url, prompt_id):
    runs = get(url + "/headroom/runs?limit=200")["runs"]
    found = [r for r in runs if r["prompt_id"] == prompt_id]
    assert found, [r["prompt_id"] for r in runs]
    return found[0]


def test_a_decode_run_is_recorded_with_predicted_and_measured_bytes(comfy):
    status, body = post(comfy.url + "/prompt", {"prompt": decode_prompt(64), "client_id": "headroom-test"})
    assert status == 200, body
    entry = wait_done(comfy.url, body["prompt_id"])
    assert entry["status"]["status_str"] == "success", entry["status"]
    run = run_of(comfy.url, body["prompt_id"])
    assert run["outcome"] == "ok" and run["ended"] >= run["started"]
    assert run["runtime"]["loader"] == "cpu"
    decode = next(s for s in run["stages"] if s["name"] == "vae_decode")
    assert [n["type"] for n in decode["nodes"]] == ["VAEDecode"]
    assert decode["model"] == "ae.safetensors"
    assert decode["predicted_bytes"] and decode["predicted_bytes"] > 0
    assert decode["measured_bytes"] is None  # no device on the CPU: the process's RAM is the measurement
    assert decode["rss_bytes"] > 100 * 2 ** 20  # ComfyUI with torch and a 100 MB VAE loaded
    assert decode["wall_s"] > 0
    history = comfy.base / "user" / "headroom" / "runs.jsonl"
    assert history.is_file() and str(comfy.base) not in history.read_text()  # file names, no paths


def test_a_run_killed_mid_decode_is_unfinished_after_restart(comfy):
    history = comfy.base / "user" / "headroom" / "runs.jsonl"
    status, body = post(comfy.url + "/prompt", {"prompt": decode_prompt(2048), "client_id": "headroom-test"})
    assert status == 200, body
    prompt_id = body["prompt_id"]
    deadline = time.time() + 120
    marker = '"ev":"node_start","prompt_id":"%s","t":' % prompt_id
    while time.time() < deadline:
        lines = [l for l in history.read_text().splitlines() if marker in l]
        if any('"type":"VAEDecode"' in l for l in lines):
            break
        time.sleep(0.2)
    else:
        pytest.fail("the decode never started")
    time.sleep(1.5)  # the sampler's RAM figures during the decode
    comfy.stop(kill=True)
    comfy.start(2)
    run = run_of(comfy.url, prompt_id)
    assert run["outcome"] == "unfinished" and run["ended"] is None and not run["active"]
    assert run["unfinished"]["stage"] == "vae_decode"
    assert run["unfinished"]["node"]["type"] == "VAEDecode"
    assert run["unfinished"]["rss_bytes"] > 100 * 2 ** 20
    assert run["unfinished"]["likely_cause"] in ("unknown", "host_ram_exhausted")
    log = comfy.log_path.read_text()
    assert "did not finish" in log and prompt_id in log, log[-3000:]
