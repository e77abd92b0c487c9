"""The decoder wheel headroom_torch (native/python/pyproject.toml, scripts/build_decoder_wheel.sh).

Always (cheap): the version label and manifest entry from fake torch versions, and that the entry is the key
nodes/native/decoder_wheels.py selects: taken for the torch/CUDA/CPython/platform it names, refused for any other.
With HEADROOM_DECODER_WHEEL_TEST=1 (compiling the torch module takes minutes on 2 cores): the real build with
the running torch, installed into a fresh virtual environment, imported there in a child process, and its
printed manifest entry selected for this machine and refused for another torch."""
import importlib.util
import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = None


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


meta = _load("headroom_decoder_wheel_meta", REPO / "scripts" / "decoder_wheel_meta.py")
dw = _load("headroom_decoder_wheels_for_test", REPO / "nodes" / "native" / "decoder_wheels.py")
PEP440_LOCAL = re.compile(r"^\d+(\.\d+)*\+[a-z0-9]+(\.[a-z0-9]+)*$")


# ---- cheap: labels, pyproject copy, manifest entries from fake versions ----

@pytest.mark.parametrize("torch_version, cuda, label", [
    ("2.13.0+cpu", None, "torch2.13.cpu"),
    ("2.12.1+cu130", "13.0", "torch2.12.cu13"),
    ("2.9.0+cu128", "12.8", "torch2.9.cu12"),
    ("2.10.0", "12.6", "torch2.10.cu12"),
    ("2.11.0.dev20260101+cu130", "13.0", "torch2.11.cu13"),
])
def test_version_label(torch_version, cuda, label):
    assert meta.version_label(torch_version, cuda) == label
    v = meta.wheel_version(torch_version, cuda, base="0.1.0")
    assert v == "0.1.0+" + label and PEP440_LOCAL.match(v), v


def test_version_label_is_a_valid_pep440_version():
    packaging_version = pytest.importorskip("packaging.version")
    v = packaging_version.Version(meta.wheel_version("2.12.1+cu130", "13.0", base="0.1.0"))
    assert v.public == "0.1.0" and v.local == "torch2.12.cu13" and str(v) == "0.1.0+torch2.12.cu13"


@pytest.mark.parametrize("bad", ["", "nightly", None])
def test_version_label_refuses_what_is_not_a_torch_version(bad):
    with pytest.raises(ValueError):
        meta.version_label(bad, None)


def test_base_version_and_pyproject_copy():
    text = meta.PYPROJECT.read_text(encoding="utf-8")
    assert meta.base_version(text) == "0.1.0"
    copy = meta.pyproject_copy(text, "0.1.0+torch2.12.cu13", REPO)
    assert 'version = "0.1.0+torch2.12.cu13"' in copy
    assert f'cmake.source-dir = "{REPO.resolve().as_posix()}"' in copy
    if tomllib:
        cfg = tomllib.loads(copy)
        assert cfg["project"]["name"] == "headroom_torch"
        assert cfg["project"]["version"] == "0.1.0+torch2.12.cu13"
        skb = cfg["tool"]["scikit-build"]
        assert "wheel.py-api" not in copy and "py-api" not in skb.get("wheel", {}), "the module links one CPython: cpXY-cpXY"
        assert skb["build"]["targets"] == ["_headroom_torch"]
        assert skb["cmake"]["define"] == {"HEADROOM_TORCH": "ON", "HEADROOM_PYTHON": "ON", "HEADROOM_CAPI": "OFF",
                                          "HEADROOM_TESTS": "OFF"}
        assert "dependencies" not in cfg["project"], "listing torch would let pip replace the user's CUDA build"


def test_cmake_installs_the_module_only_under_scikit_build():
    cmake = (REPO / "CMakeLists.txt").read_text(encoding="utf-8")
    m = re.search(r"if\(SKBUILD\)[^\n]*\n\s*install\(TARGETS _headroom_torch [^)]*\)", cmake)
    assert m, "install(TARGETS _headroom_torch ...) under if(SKBUILD)"


def _fake_wheel(tmp_path, version, py="cp312", plat="win_amd64", data=b"not really a wheel"):
    p = tmp_path / f"headroom_torch-{version}-{py}-{py}-{plat}.whl"
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("torch_version, cuda, vi, plat, key_cuda", [
    ("2.12.1+cu130", "13.0", (3, 12), "win-amd64", "13"),
    ("2.9.0+cu128", "12.8", (3, 12), "win-amd64", "12"),
    ("2.13.0+cpu", None, (3, 12), "win-amd64", "cpu"),
])
def test_manifest_entry_is_selected_for_its_torch_only(tmp_path, torch_version, cuda, vi, plat, key_cuda):
    wheel = _fake_wheel(tmp_path, meta.wheel_version(torch_version, cuda, base="0.1.0"))
    entry = meta.manifest_entry(wheel, torch_version, cuda, version_info=vi, platform=plat)
    import hashlib
    assert entry == {"torch": dw.torch_minor(torch_version), "cuda": key_cuda, "python": "cp312",
                     "platform": "win_amd64", "file": wheel.name,
                     "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(), "url": None}
    json.dumps(entry)  # what the script prints

    same = dw.running_key(dw.torch_minor(torch_version) + ".7", cuda, vi, plat)  # any patch release of X.Y
    assert dw.select([entry], dw.running_key(torch_version, cuda, vi, plat)) == (entry, None)
    assert dw.select([entry], same)[0] == entry
    other_torch = "2.8.0" if not torch_version.startswith("2.8") else "2.7.0"
    for key in (dw.running_key(other_torch, cuda, vi, plat),                      # another torch X.Y
                dw.running_key(torch_version, "11.8" if cuda else "12.8", vi, plat),  # another CUDA major / CPU
                dw.running_key(torch_version, cuda, (3, 11), plat),               # another CPython
                dw.running_key(torch_version, cuda, vi, "linux-x86_64")):         # another platform
        chosen, why = dw.select([entry], key)
        assert chosen is None and why, key


def test_manifest_entry_refuses_a_mislabelled_wheel(tmp_path):
    labelled_12 = _fake_wheel(tmp_path, "0.1.0+torch2.12.cu13")
    with pytest.raises(ValueError, match="not labelled torch2.13.cu13"):
        meta.manifest_entry(labelled_12, "2.13.0+cu130", "13.0", version_info=(3, 12), platform="win-amd64")
    with pytest.raises(ValueError, match="cp311"):
        meta.manifest_entry(labelled_12, "2.12.0+cu130", "13.0", version_info=(3, 11), platform="win-amd64")
    with pytest.raises(ValueError, match="not a headroom_torch wheel"):
        meta.manifest_entry(tmp_path / "headroom_core-0.1.0-py3-none-any.whl", "2.12.0", None)


# ---- real: build, install into a fresh venv, import there (HEADROOM_DECODER_WHEEL_TEST=1) ----

real = pytest.mark.skipif(os.environ.get("HEADROOM_DECODER_WHEEL_TEST") != "1",
                          reason="set HEADROOM_DECODER_WHEEL_TEST=1 to build the decoder wheel (minutes)")


def _child_env():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return env


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run(["bash", str(REPO / "scripts" / "build_decoder_wheel.sh"), str(out)], cwd=REPO,
                       env=dict(_child_env(), HEADROOM_PYTHON=sys.executable),
                       capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    wheels = list(out.glob("headroom_torch-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0], json.loads(r.stdout)


@pytest.fixture(scope="module")
def venv_python(built, tmp_path_factory):
    wheel, _ = built
    env_dir = tmp_path_factory.mktemp("venv")
    # A venv made from .venv's python with --system-site-packages sees the *base* interpreter's site-packages,
    # not .venv's, so a .pth adds .venv's (after the new venv's own, so the installed wheel comes first).
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], check=True, timeout=600)
    exe = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(subprocess.check_output([str(exe), "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"],
                                        text=True).strip())
    parent = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "headroom_parent_venv.pth").write_text("\n".join(sorted(parent)) + "\n", encoding="utf-8")
    r = subprocess.run([str(exe), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                       capture_output=True, text=True, timeout=600, env=_child_env())
    assert r.returncode == 0, r.stdout + r.stderr
    return exe, site


@real
def test_wheel_name_and_contents(built):
    import torch
    wheel, entry = built
    tag = dw.python_tag()
    label = meta.version_label(torch.__version__, torch.version.cuda)
    assert wheel.name.startswith(f"headroom_torch-0.1.0+{label}-{tag}-{tag}-"), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    payload = [n for n in names if ".dist-info/" not in n]
    assert len(payload) == 1 and re.match(r"^_headroom_torch\..*(\.so|\.pyd)$", payload[0]), names


@real
def test_installed_wheel_imports_and_matches_the_running_torch(venv_python):
    import torch
    exe, site = venv_python
    code = ("import json, torch, _headroom_torch as m; "
            "print(json.dumps([m.__file__, m.built_torch_version(), torch.__version__]))")
    r = subprocess.run([str(exe), "-c", code], capture_output=True, text=True, timeout=600, env=_child_env(),
                       cwd=str(site.parent))
    assert r.returncode == 0, r.stderr
    where, built_for, running = json.loads(r.stdout.strip().splitlines()[-1])
    assert Path(where).resolve().parent == site.resolve(), where
    assert built_for == torch.__version__ == running
    # install.py's own check (a child process importing from a folder) accepts it too.
    assert dw.import_check(exe, site) is None


@real
def test_printed_entry_is_selected_here_and_refused_for_another_torch(built):
    import hashlib
    import torch
    wheel, entry = built
    assert entry["file"] == wheel.name and entry["url"] is None
    assert entry["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    here = dw.running_key(torch.__version__, torch.version.cuda)
    assert dw.select([entry], here) == (entry, None)
    major, minor = (int(x) for x in dw.torch_minor(torch.__version__).split("."))
    other = dw.running_key(f"{major}.{minor - 1}.0", torch.version.cuda)
    chosen, why = dw.select([entry], other)
    assert chosen is None and "no decoder wheel" in why
