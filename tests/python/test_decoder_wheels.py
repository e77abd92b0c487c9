"""Decoder-wheel selection (nodes/native/decoder_wheels.py) against fakes: an exact match of torch X.Y, CUDA
major, CPython tag and platform, never a near one, and a child-process import check that reports a
mismatched or crashing module without harming this process."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from conftest import REPO

spec = importlib.util.spec_from_file_location("decoder_wheels", REPO / "nodes" / "native" / "decoder_wheels.py")
dw = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dw)

WHEELS = [
    {"torch": "2.12", "cuda": "13", "python": "cp313", "platform": "win_amd64", "file": "a.whl"},
    {"torch": "2.11", "cuda": "12", "python": "cp313", "platform": "win_amd64", "file": "b.whl"},
    {"torch": "2.12", "cuda": "13", "python": "cp312", "platform": "linux_x86_64", "file": "c.whl"},
]


@pytest.mark.parametrize("torch_v,cuda_v,expect", [
    ("2.12.1+cu130", "13.0", "a.whl"),      # local label and patch release do not matter
    ("2.11.0+cu128", "12.8", "b.whl"),
])
def test_exact_match_is_taken(torch_v, cuda_v, expect):
    key = dw.running_key(torch_v, cuda_v, (3, 13), "win-amd64")
    wheel, why = dw.select(WHEELS, key)
    assert why is None and wheel["file"] == expect


@pytest.mark.parametrize("torch_v,cuda_v,py,plat", [
    ("2.13.0+cu130", "13.0", (3, 13), "win-amd64"),   # newer torch: the nearest lower one is NOT taken
    ("2.12.0+cu128", "12.8", (3, 13), "win-amd64"),   # same torch, other CUDA major
    ("2.12.0+cu130", "13.0", (3, 12), "win-amd64"),   # same torch and CUDA, other Python
    ("2.12.0+cpu", None, (3, 13), "win-amd64"),       # a CPU build never takes a CUDA wheel
    ("2.12.0", "13.0", (3, 13), "linux-aarch64"),     # other platform
])
def test_near_matches_are_refused_with_what_exists(torch_v, cuda_v, py, plat):
    key = dw.running_key(torch_v, cuda_v, py, plat)
    wheel, why = dw.select(WHEELS, key)
    assert wheel is None
    assert dw.describe(key) in why
    if plat == "win-amd64" and py == (3, 13):
        assert "torch 2.12 + CUDA 13" in why and "fails to load" in why
    line = dw.advice(why)
    assert "\n" not in line and dw.SOURCE_BUILD_VARIABLE in line and "ComfyUI's tiled decode" in line


def test_keys_from_real_version_strings():
    assert dw.running_key("2.9.1+cu128", "12.8", (3, 11), "linux-x86_64") == {
        "torch": "2.9", "cuda": "12", "python": "cp311", "platform": "linux_x86_64"}
    assert dw.cuda_major(None) == "cpu" and dw.torch_minor("garbage") is None
    assert dw.platform_tag("macosx-14.0-arm64") == "macosx_arm64"


def test_manifest_in_the_repository_is_well_formed_and_unreadable_ones_are_empty(tmp_path):
    data = json.loads(dw.MANIFEST.read_text())
    assert isinstance(data["wheels"], list)
    for w in data["wheels"]:
        assert {"torch", "cuda", "python", "platform", "file", "url", "sha256"} <= set(w)
    bad = tmp_path / "m.json"
    bad.write_text("{not json")
    assert dw.load_manifest(bad) == [] and dw.load_manifest(tmp_path / "absent.json") == []


def fake_module(folder, body):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_headroom_torch.py").write_text(body)
    (folder / "torch.py").write_text("__version__ = '2.12.0+cu130'\n")
    return folder


def test_import_check_accepts_a_module_built_for_the_running_torch(tmp_path):
    d = fake_module(tmp_path / "ok", "def built_torch_version():\n    return '2.12.0+cu130'\n")
    assert dw.import_check(sys.executable, d) is None


def test_import_check_reports_another_torch_and_a_crash_without_dying(tmp_path):
    d = fake_module(tmp_path / "old", "def built_torch_version():\n    return '2.11.0+cu128'\n")
    why = dw.import_check(sys.executable, d)
    assert "built against torch 2.11.0+cu128, running under torch 2.12.0+cu130" in why
    d = fake_module(tmp_path / "crash", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    why = dw.import_check(sys.executable, d)
    assert "crashed" in why and "signal 11" in why
    d = fake_module(tmp_path / "broken", "raise ImportError('DLL load failed while importing _headroom_torch')\n")
    assert "DLL load failed" in dw.import_check(sys.executable, d)
