"""API-format prompts as ComfyUI's "Export (API)" writes them, shared by the tests that queue or plan one."""

# FLUX.1 dev text-to-image (ComfyUI's flux_dev template, the models by their ComfyUI file names).
FLUX_API_PROMPT = {
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-dev.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "clip_l.safetensors",
                                                      "clip_name2": "t5xxl_fp16.safetensors", "type": "flux",
                                                      "device": "default"}},
    "3": {"class_type": "CLIPTextEncode", "inputs": {"clip": ["2", 0], "text": "a fox"}},
    "4": {"class_type": "EmptySD3LatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
    "5": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["3", 0], "negative": ["3", 0],
                                                "latent_image": ["4", 0], "seed": 1, "steps": 20, "cfg": 1.0,
                                                "sampler_name": "euler", "scheduler": "simple", "denoise": 1.0}},
    "6": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    "7": {"class_type": "VAEDecode", "inputs": {"samples": ["5", 0], "vae": ["6", 0]}},
    "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "headroom_test"}},
}
