"""Version label, pyproject copy and manifest entry of the decoder wheel (scripts/build_decoder_wheel.sh).

The wheel headroom_torch-<base>+torch<X.Y>.<cpu|cuNN>-cpXY-cpXY-<platform>.whl is tied to the torch X.Y and
CUDA major it was compiled against; its manifest entry is exactly the key nodes/native/decoder_wheels.py computes for
a running torch (running_key, loaded from that file by path, so the two can never disagree). torch is imported
only by the command line, so the tests drive the functions with fake versions.

  python scripts/decoder_wheel_meta.py version               -> 0.1.0+torch2.13.cpu (the running torch)
  python scripts/decoder_wheel_meta.py pyproject DST_DIR     -> DST_DIR/pyproject.toml with that version
  python scripts/decoder_wheel_meta.py entry WHEEL           -> the manifest entry (JSON) for that wheel
"""
import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = REPO / "native" / "python" / "pyproject.toml"
DECODER_WHEELS = REPO / "nodes" / "native" / "decoder_wheels.py"


def decoder_wheels():
    """nodes/native/decoder_wheels.py as a module, loaded by path (no package import, as install.py does)."""
    spec = importlib.util.spec_from_file_location("headroom_decoder_wheels", DECODER_WHEELS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def base_version(text=None):
    """The unlabelled version of native/python/pyproject.toml ('0.1.0')."""
    text = PYPROJECT.read_text(encoding="utf-8") if text is None else text
    m = re.search(r'^version\s*=\s*"([^"+]+)"', text, re.M)
    if not m:
        raise ValueError("no version in native/python/pyproject.toml")
    return m.group(1)


def version_label(torch_version, cuda_version):
    """'2.13.0+cpu', None -> 'torch2.13.cpu'; '2.12.1+cu130', '13.0' -> 'torch2.12.cu13' (a PEP 440 local label)."""
    dw = decoder_wheels()
    minor = dw.torch_minor(torch_version)
    if minor is None:
        raise ValueError(f"not a torch version: {torch_version!r}")
    cuda = dw.cuda_major(cuda_version)
    return f"torch{minor}." + ("cpu" if cuda == "cpu" else f"cu{cuda}")


def wheel_version(torch_version, cuda_version, base=None):
    return f"{base or base_version()}+{version_label(torch_version, cuda_version)}"


def pyproject_copy(text, version, source_dir):
    """native/python/pyproject.toml with the labelled version and an absolute cmake.source-dir, so the copy
    builds from any folder."""
    out, n = re.subn(r'^version\s*=\s*"[^"]*"', f'version = "{version}"', text, count=1, flags=re.M)
    if n != 1:
        raise ValueError("no version line to replace")
    src = Path(source_dir).resolve().as_posix()
    out, n = re.subn(r'^cmake\.source-dir\s*=\s*"[^"]*"', f'cmake.source-dir = "{src}"', out, count=1, flags=re.M)
    if n != 1:
        raise ValueError("no cmake.source-dir line to replace")
    return out


def manifest_entry(wheel, torch_version, cuda_version, version_info=None, platform=None):
    """The decoder_wheels.json entry that decoder_wheels.select matches for this torch/CUDA/CPython/platform.
    The wheel's own name must carry the same label and CPython tag (a mislabelled wheel is refused here rather
    than published); url is left for the release job."""
    wheel = Path(wheel)
    key = decoder_wheels().running_key(torch_version, cuda_version, version_info, platform)
    parts = wheel.name[:-len(".whl")].split("-") if wheel.name.endswith(".whl") else []
    if len(parts) != 5 or parts[0] != "headroom_torch":
        raise ValueError(f"not a headroom_torch wheel name: {wheel.name}")
    label = version_label(torch_version, cuda_version)
    if not parts[1].endswith("+" + label):
        raise ValueError(f"{wheel.name} is not labelled {label} (the torch it would be listed for)")
    if parts[2] != key["python"] or parts[3] != key["python"]:
        raise ValueError(f"{wheel.name} is not a {key['python']}-{key['python']} wheel")
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    return dict(key, file=wheel.name, sha256=sha, url=None)


def _running():
    import torch  # only here: the functions above take versions as arguments
    if getattr(torch.version, "hip", None):
        sys.exit(f"torch {torch.__version__} is a ROCm build; decoder wheels are built for CPU or CUDA torch only")
    return torch.__version__, torch.version.cuda


def main(argv):
    if len(argv) == 1 and argv[0] == "version":
        print(wheel_version(*_running()))
    elif len(argv) == 2 and argv[0] == "pyproject":
        dst = Path(argv[1])
        dst.mkdir(parents=True, exist_ok=True)
        text = pyproject_copy(PYPROJECT.read_text(encoding="utf-8"), wheel_version(*_running()), REPO)
        (dst / "pyproject.toml").write_text(text, encoding="utf-8")
    elif len(argv) == 2 and argv[0] == "entry":
        print(json.dumps(manifest_entry(argv[1], *_running()), indent=2))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
