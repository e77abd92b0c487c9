"""The run recorder in a real ComfyUI on the CPU (only with COMFYUI_PATH; COMFYUI_PYTHON runs it): a VAE
decode of a Flux-architecture VAE made at test time (random weights, ComfyUI's own VAELoader and
VAEDecode) appears in GET /headroom/runs with its decode stage's predicted bytes, the RAM the decode
added (measured) and outcome "ok"; a sampling run of a tiny SD 1.5-architecture UNet with a CLIP-L
encoder records its text_encode and sample stages; a run killed with SIGKILL during a slow decode is
"unfinished" after a restart, with its stage, the start-up log says so, and the notice the frontend
shows on its next load holds the run and the core's explanation, once."""
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


# A tiny UNet of Stable Diffusion 1.5's architecture (ComfyUI's openaimodel UNetModel: 320 channels, cross-
# attention on 768-wide CLIP-L tokens, so ComfyUI detects it as SD15) with one level instead of four, and a
# CLIP-L text encoder of the real size (ComfyUI's sd1_clip, 123 M): a real prompt through CLIPTextEncode and
# KSampler runs in seconds on two cores. Weights are random, scaled so activations stay finite.
MAKE_SD15 = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, sys.argv[1])
    import comfy.cli_args
    comfy.cli_args.args.cpu = True
    import comfy.model_detection, comfy.sd1_clip
    from comfy.ldm.modules.diffusionmodules.openaimodel import UNetModel
    from safetensors.torch import save_file
    g = torch.Generator().manual_seed(0)
    def filled(sd):
        out = {}
        for name, t in sd.items():
            if not t.is_floating_point():
                out[name] = t.contiguous()
            elif "norm" in name:
                out[name] = torch.ones(t.shape) if name.endswith("weight") else torch.zeros(t.shape)
            elif name.endswith("weight") and t.dim() > 1:
                out[name] = (torch.randn(t.shape, generator=g) * (1.0 / t[0].numel()) ** 0.5).to(torch.float16)
            else:
                out[name] = torch.zeros(t.shape, dtype=torch.float16)
        return out
    config = dict(image_size=32, in_channels=4, out_channels=4, model_channels=320, num_res_blocks=[1],
                  channel_mult=[1], transformer_depth=[1], transformer_depth_output=[1, 1],
                  transformer_depth_middle=1, context_dim=768, num_heads=8, use_linear_in_transformer=False,
                  use_spatial_transformer=True, legacy=False, adm_in_channels=None, use_temporal_resblock=False,
                  use_temporal_attention=False, dtype=torch.float32, device="cpu")
    unet = filled(UNetModel(**config).state_dict())
    detected = comfy.model_detection.model_config_from_unet(unet, "")
    assert type(detected).__name__ == "SD15", type(detected).__name__
    save_file(unet, sys.argv[2])
    clip = comfy.sd1_clip.SDClipModel(device="cpu", dtype=torch.float32)
    save_file(filled(clip.transformer.state_dict()), sys.argv[3])
""")


def sample_prompt():
    return {"1": {"class_type": "UNETLoader", "inputs": {"unet_name": "tiny-sd15-unet.safetensors", "weight_dtype": "default"}},
            "2": {"class_type": "CLIPLoader", "inputs": {"clip_name": "clip_l.safetensors", "type": "stable_diffusion"}},
            "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "a lighthouse", "clip": ["2", 0]}},
            "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "", "clip": ["2", 0]}},
            "5": {"class_type": "EmptyLatentImage", "inputs": {"width": 128, "height": 128, "batch_size": 1}},
            "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["3", 0], "negative": ["4", 0],
                                                       "latent_image": ["5", 0], "seed": 1, "steps": 2, "cfg": 2.0,
                                                       "sampler_name": "euler", "scheduler": "normal", "denoise": 1.0}},
            "7": {"class_type": "SaveLatent", "inputs": {"samples": ["6", 0], "filename_prefix": "headroom_runs"}}}


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
    for folder in ("diffusion_models", "text_encoders"):
        (base / "models" / folder).mkdir(parents=True)
    made = subprocess.run([PYTHON, "-c", MAKE_SD15, COMFY, str(base / "models" / "diffusion_models" / "tiny-sd15-unet.safetensors"),
                           str(base / "models" / "text_encoders" / "clip_l.safetensors")], timeout=600,
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr[-3000:]
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


def queue(comfy, prompt):
    status, body = post(comfy.url + "/prompt", {"prompt": prompt, "client_id": "headroom-test"})
    assert status == 200, body
    entry = wait_done(comfy.url, body["prompt_id"])
    assert entry["status"]["status_str"] == "success", entry["status"]
    return run_of(comfy.url, body["prompt_id"])


def stage_of(run, name):
    found = [s for s in run["stages"] if s["name"] == name]
    assert found, [s["name"] for s in run["stages"]]
    return found[0]


def test_a_decode_run_is_recorded_with_predicted_and_measured_bytes(comfy):
    decodes = []
    for size in (128, 256):  # the smaller first: memory it leaves to the allocator cannot hide the larger's
        run = queue(comfy, decode_prompt(size))
        assert run["outcome"] == "ok" and run["ended"] >= run["started"]
        assert run["runtime"]["loader"] == "cpu"
        decode = stage_of(run, "vae_decode")
        assert [n["type"] for n in decode["nodes"]] == ["VAEDecode"]
        assert decode["model"] == "ae.safetensors"
        assert decode["measured_bytes"] is None  # no device figure on the CPU: calibration learns from devices
        assert decode["rss_bytes"] > 100 * 2 ** 20  # ComfyUI with torch and a 100 MB VAE loaded
        assert decode["wall_s"] > 0
        decodes.append(decode)
    small, large = decodes
    for d in decodes:
        assert d["predicted_bytes"] > 0
        # On the CPU the decode's tensors live in the process: the RAM it added over its start is the measurement.
        assert d["measured_host_added_bytes"] > 2 ** 20 and d["measured_host_peak_bytes"] >= d["rss_bytes"] - 2 ** 20
    # Four times the pixels: the prediction and the measurement both grow, the measurement by more than twice.
    assert large["predicted_bytes"] > small["predicted_bytes"]
    assert large["measured_host_added_bytes"] > 2 * small["measured_host_added_bytes"]
    history = comfy.base / "user" / "headroom" / "runs.jsonl"
    assert history.is_file() and str(comfy.base) not in history.read_text()  # file names, no paths
    print(f"\ndecode 128: predicted {small['predicted_bytes']} measured +{small['measured_host_added_bytes']} RAM; "
          f"decode 256: predicted {large['predicted_bytes']} measured +{large['measured_host_added_bytes']} RAM")


def test_a_sampling_run_records_text_encode_and_sample_stages(comfy):
    run = queue(comfy, sample_prompt())
    assert run["outcome"] == "ok"
    encode, sample = stage_of(run, "text_encode"), stage_of(run, "sample")
    assert [n["type"] for n in encode["nodes"]] == ["CLIPTextEncode", "CLIPTextEncode"]
    assert [n["type"] for n in sample["nodes"]] == ["KSampler"]
    assert sample["model"] == "tiny-sd15-unet.safetensors" and encode["model"] == "clip_l.safetensors"
    assert sample["wall_s"] > 0 and sample["measured_host_added_bytes"] > 0
    assert encode["measured_host_added_bytes"] > 0
    # CLIP-L is the real one, so its stage is predicted; a one-level UNet is no SD 1.5 Headroom knows, so
    # its sample stage has no prediction rather than SD 1.5's (unknown, never a near family).
    assert encode["predicted_bytes"] > 0
    assert sample["predicted_bytes"] is None
    # The KSampler's nodes ran during the timeline's sample points, tagged with their stage.
    assert {p["stage"] for p in run["timeline"]} >= {"sample"}
    print(f"\nsample: predicted {sample['predicted_bytes']} measured +{sample['measured_host_added_bytes']} RAM; "
          f"text_encode: predicted {encode['predicted_bytes']} measured +{encode['measured_host_added_bytes']} RAM")


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
    # What the frontend shows on its first load after this start: the run and the core's explanation of a
    # run that died without a message, once.
    notice = get(comfy.url + "/headroom/runs/unfinished")
    assert notice["run"]["prompt_id"] == prompt_id and notice["run"]["ram_total_bytes"] > 0
    assert notice["explanation"]["format"] == "comfyui_unfinished_run"
    assert "(it was in vae_decode)" in notice["explanation"]["diagnosis"]["text"]
    assert post(comfy.url + "/headroom/runs/unfinished/seen", {}) == (200, {"forgotten": True})
    assert get(comfy.url + "/headroom/runs/unfinished") == {"run": None, "explanation": None}
