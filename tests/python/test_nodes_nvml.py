"""NVML through dlopen: a stand-in libnvidia-ml (compiled here from the C below, with NVML's entry
point names and nvmlProcessInfo_t layout) answers like the driver; without the library the snapshot
says other processes are not reported."""
import os
import shutil
import subprocess
import textwrap

import pytest

from conftest import load_pack

load_pack()
from headroom_pack.nodes.comfyui import vram_snapshot  # noqa: E402

FAKE_NVML = textwrap.dedent("""
    typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId;
                     unsigned int computeInstanceId; } nvmlProcessInfo_t;
    static int handle_index = -1;
    int nvmlInit_v2(void) { return 0; }
    int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **device) {
        handle_index = (int)index; *device = (void *)&handle_index; return index < 2 ? 0 : 2; }
    int nvmlDeviceGetComputeRunningProcesses_v3(void *device, unsigned int *count, nvmlProcessInfo_t *infos) {
        const unsigned int n = 70;                      /* more than the first buffer (64) */
        if (*count < n) { *count = n; return 7; }       /* NVML_ERROR_INSUFFICIENT_SIZE */
        for (unsigned int i = 0; i < n; i++) {
            infos[i].pid = 1000 + i + 100 * (unsigned)(*(int *)device);
            infos[i].usedGpuMemory = i == 1 ? ~0ULL : (unsigned long long)(i + 1) << 20;
        }
        *count = n; return 0;
    }
""")


@pytest.fixture
def fake_nvml(tmp_path, monkeypatch):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "nvml.c"
    src.write_text(FAKE_NVML)
    lib = tmp_path / "libnvidia-ml-fake.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    monkeypatch.setenv("HEADROOM_NVML_LIBRARY", str(lib))
    monkeypatch.setattr(vram_snapshot, "_nvml", vram_snapshot._Nvml())
    return lib


def test_processes_from_nvml_grow_buffer_and_skip_unknown_sizes(fake_nvml, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    procs = vram_snapshot.nvml_processes(0)
    assert len(procs) == 70
    assert procs[0] == {"pid": 1000, "bytes": 1 << 20}
    assert procs[1] == {"pid": 1001, "bytes": None}  # NVML_VALUE_NOT_AVAILABLE
    assert procs[69]["bytes"] == 70 << 20


def test_cuda_visible_devices_maps_torch_index_to_driver_index(fake_nvml, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert vram_snapshot.nvml_processes(0)[0]["pid"] == 1100  # torch's cuda:0 is the driver's card 1


def test_without_nvml_other_processes_are_not_reported(monkeypatch, tmp_path):
    monkeypatch.setenv("HEADROOM_NVML_LIBRARY", str(tmp_path / "absent.so"))
    monkeypatch.setattr(vram_snapshot, "_nvml", vram_snapshot._Nvml())
    if os.path.exists("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"):
        pytest.skip("a real NVIDIA driver library is installed here")
    assert vram_snapshot.nvml_processes(0) is None
    assert "not reported" in vram_snapshot.format_report(vram_snapshot.snapshot())
