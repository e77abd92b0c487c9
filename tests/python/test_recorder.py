"""The run recorder on a stand-in of ComfyUI's server: node boundaries from its messages (with and
without a client_id), the prediction beside the measurement, a killed run reported at the next start,
and a history that cannot be written stopping the records, never the run. The history is read by the
real core (api::runs)."""
import json
import logging
import sys

import pytest

from conftest import load_pack, natives_installed, real_core_or_skip, run_with_client

load_pack()
from headroom_pack.nodes import recorder as recorder_pkg  # noqa: E402
from headroom_pack.nodes.server import prompt_handler, routes  # noqa: E402
from headroom_pack.nodes.recorder import history_store, hooks  # noqa: E402

# A decode of an empty latent: a prompt linking to a node it lacks is refused at queue time (issue 19).
PROMPT = {"4": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
          "5": {"class_type": "EmptyLatentImage", "inputs": {"width": 1024, "height": 1024, "batch_size": 1}},
          "8": {"class_type": "VAEDecode", "inputs": {"samples": ["5", 0], "vae": ["4", 0]}},
          "9": {"class_type": "SaveImage", "inputs": {"images": ["8", 0]}}}
PLAN = {"stages": [{"name": "vae_decode", "peak_bytes": 3 << 30, "min_bytes": 1 << 30, "streamed_bytes": 0,
                    "breakdown": {"x": 1}}],
        "host_ram_bytes": 5 << 30, "job": {"vae": {"file": "/home/me/models/vae/flux/ae.safetensors"}},
        "workflow": {"node_stages": {"8": "vae_decode"}}}


class Status:
    def __init__(self, status_str, messages):
        self.status_str, self.messages = status_str, messages


class FakeQueue:
    def __init__(self):
        self.currently_running = {}
        self.done = []

    def task_done(self, item_id, history_result, status=None):
        self.done.append(status)


class FakeServer:
    """What the recorder touches of ComfyUI's PromptServer: send_sync and prompt_queue."""

    def __init__(self):
        self.sent = []
        self.prompt_queue = FakeQueue()

    def send_sync(self, event, data, sid=None):
        self.sent.append(event)


@pytest.fixture
def core():
    with natives_installed(real_core_or_skip()) as c:
        yield c


def make(tmp_path, server=None):
    server = server or FakeServer()
    rec = hooks.Recorder(history_store.HistoryStore(str(tmp_path / "headroom" / "runs.jsonl")), sample_period=0.05)
    assert rec.attach(server)
    return rec, server


def run_prompt(server, prompt_id, client_id=True, fail=None):
    server.prompt_queue.currently_running[1] = (1, prompt_id, PROMPT, {}, ["9"])
    if client_id:
        server.send_sync("execution_start", {"prompt_id": prompt_id})
    for node in ("4", "8", "9"):
        server.send_sync("executing", {"node": node, "prompt_id": prompt_id})
        if fail and node == "8":
            break
    messages = []
    if fail:
        messages = [("execution_error", {"prompt_id": prompt_id, "node_id": "8", "exception_type": fail[0],
                                         "exception_message": fail[1]})]
        if client_id:
            server.send_sync(*messages[0])
    elif client_id:
        server.send_sync("execution_success", {"prompt_id": prompt_id})
    server.prompt_queue.task_done(1, {}, status=Status("error" if fail else "success", messages))
    del server.prompt_queue.currently_running[1]


def only_run(rec):
    answer = rec.history()
    assert answer["skipped_lines"] == 0
    return answer["runs"][0]


def stage(run, name):
    return next(s for s in run["stages"] if s["name"] == name)


def test_a_run_is_recorded_per_node_with_its_prediction(core, tmp_path):
    rec, server = make(tmp_path)
    rec.predictions.keep("p1", PLAN)
    run_prompt(server, "p1")
    assert server.sent == ["execution_start", "executing", "executing", "executing", "execution_success"]
    run = only_run(rec)
    assert run["prompt_id"] == "p1" and run["outcome"] == "ok" and run["ended"] is not None
    assert run["runtime"]["loader"] == "cpu"  # no CUDA context in this process
    decode = stage(run, "vae_decode")
    assert decode["predicted_bytes"] == 3 << 30 and decode["predicted_host_bytes"] == 5 << 30
    assert decode["model"] == "ae.safetensors"
    assert [n["type"] for n in decode["nodes"]] == ["VAEDecode"]
    assert decode["measured_bytes"] is None  # on the CPU there is no device peak
    if sys.platform.startswith("linux"):
        assert decode["rss_bytes"] > 10 << 20 and decode["ram_available_bytes"] > 0
    assert [n["type"] for n in stage(run, "other")["nodes"]] == ["VAELoader", "SaveImage"]
    text = (tmp_path / "headroom" / "runs.jsonl").read_text()
    assert "/home/me" not in text and "ae.safetensors" in text  # file names only


def test_without_a_client_id_the_run_starts_at_executing_and_ends_at_task_done(core, tmp_path):
    rec, server = make(tmp_path)
    run_prompt(server, "api", client_id=False, fail=("torch.OutOfMemoryError",
                                                      "Allocation on device 0 would exceed allowed memory. "
                                                      "(out of memory)\nCurrently allocated : 22.5 GiB"))
    run = only_run(rec)
    assert run["outcome"] == "oom"
    assert "Allocation on device" in run["message"]
    assert [n["id"] for s in run["stages"] for n in s["nodes"]] == ["4", "8"]


def test_an_error_that_is_not_memory_is_error(core, tmp_path):
    rec, server = make(tmp_path)
    run_prompt(server, "e", fail=("ValueError", "bad input at C:\\Users\\me\\secret\\x.png"))
    run = only_run(rec)
    assert run["outcome"] == "error"
    assert "x.png" in run["message"] and "secret" not in run["message"]


def test_a_killed_run_is_reported_at_the_next_start(core, tmp_path, caplog):
    rec, server = make(tmp_path)
    server.prompt_queue.currently_running[1] = (1, "k", PROMPT, {}, ["9"])
    rec.predictions.keep("k", PLAN)
    server.send_sync("execution_start", {"prompt_id": "k"})
    server.send_sync("executing", {"node": "4", "prompt_id": "k"})
    server.send_sync("executing", {"node": "8", "prompt_id": "k"})
    import time
    time.sleep(0.2)  # the sampler writes the RAM figures of the node that is running
    assert rec.history()["runs"][0]["active"] is True
    rec.sampler.stop()
    rec.store.close()  # the process dies here: no end event

    again, _ = make(tmp_path)
    with caplog.at_level(logging.WARNING, logger="headroom"):
        again.report_previous_runs()
    run = only_run(again)
    assert run["outcome"] == "unfinished" and run["active"] is False
    assert run["unfinished"]["stage"] == "vae_decode"
    assert run["unfinished"]["rss_bytes"] is not None
    assert run["timeline"], "the sampler left points"
    lines = [r.getMessage() for r in caplog.records if "did not finish" in r.getMessage()]
    assert len(lines) == 1 and "VAEDecode #8" in lines[0]


def kill_mid_decode(rec, server, prompt_id="k"):
    server.prompt_queue.currently_running[1] = (1, prompt_id, PROMPT, {}, ["9"])
    rec.predictions.keep(prompt_id, PLAN)
    server.send_sync("execution_start", {"prompt_id": prompt_id})
    server.send_sync("executing", {"node": "4", "prompt_id": prompt_id})
    server.send_sync("executing", {"node": "8", "prompt_id": prompt_id})
    rec.sampler.stop()
    rec.store.close()


def test_the_next_start_offers_the_unfinished_run_once_with_the_cores_explanation(core, tmp_path, monkeypatch):
    rec, server = make(tmp_path)
    kill_mid_decode(rec, server)
    again, _ = make(tmp_path)
    again.report_previous_runs()
    monkeypatch.setattr(recorder_pkg, "_recorder", again)

    async def check(client):
        first = await (await client.get("/headroom/runs/unfinished")).json()
        run, explanation = first["run"], first["explanation"]
        assert run["prompt_id"] == "k" and run["unfinished"]["stage"] == "vae_decode"
        assert run["unfinished"]["rss_bytes"] > 0 and run["ram_total_bytes"] > 0
        # Explained as a run that died without a message, in the stage the history says, with ComfyUI's levers.
        assert explanation["recognised"] is True and explanation["format"] == "comfyui_unfinished_run"
        assert "vae_decode" in explanation["diagnosis"]["text"]
        assert "RAM was available" in explanation["diagnosis"]["text"]
        assert any("--cache-none" in f["text"] or "page file" in f["text"] for f in explanation["fixes"])
        seen = await (await client.post("/headroom/runs/unfinished/seen", json={})).json()
        assert seen == {"forgotten": True}
        after = await (await client.get("/headroom/runs/unfinished")).json()
        assert after == {"run": None, "explanation": None}
        again_seen = await (await client.post("/headroom/runs/unfinished/seen", json={})).json()
        assert again_seen == {"forgotten": False}
    run_with_client(check)


def test_the_explain_node_with_no_failure_in_this_process_explains_the_run_the_last_one_died_in(core, tmp_path, monkeypatch):
    from headroom_pack.nodes.comfyui import comfy_adapters
    from headroom_pack.nodes.graph import explain
    rec, server = make(tmp_path)
    kill_mid_decode(rec, server)
    again, _ = make(tmp_path)
    again.report_previous_runs()
    monkeypatch.setattr(recorder_pkg, "_recorder", again)
    monkeypatch.setattr(comfy_adapters, "last_execution_error", lambda: None)
    out = explain.HeadroomExplainOOM().explain("")["result"][0]
    assert out.startswith("The last run did not finish and left no error (it was in vae_decode)"), out
    assert "Fixes:" in out
    # A failure of this process, or a pasted text, is explained as itself.
    monkeypatch.setattr(comfy_adapters, "last_execution_error", lambda: "RuntimeError: shape mismatch")
    assert "did not finish" not in explain.HeadroomExplainOOM().explain("")["result"][0]
    assert "did not finish" not in explain.HeadroomExplainOOM().explain("ValueError: bad input")["result"][0]


def test_a_start_after_finished_runs_offers_no_notice(core, tmp_path, monkeypatch):
    rec, server = make(tmp_path)
    run_prompt(server, "done")
    again, _ = make(tmp_path)
    again.report_previous_runs()
    monkeypatch.setattr(recorder_pkg, "_recorder", again)

    async def check(client):
        assert await (await client.get("/headroom/runs/unfinished")).json() == {"run": None, "explanation": None}
    run_with_client(check)


def test_each_node_records_the_ram_it_added_over_its_start(core, tmp_path, monkeypatch):
    from headroom_pack.nodes.recorder import probes
    rss = iter([500, 1000, 1500, 2000, 2100])  # RSS at the run's start, then at each node's start and end
    peaks = iter([5000, 2100])
    monkeypatch.setattr(probes, "reset_host_peak", lambda: True)
    monkeypatch.setattr(probes, "host_peak", lambda: next(peaks))
    monkeypatch.setattr(probes, "host", lambda: {"rss_bytes": next(rss), "pinned_bytes": None,
                                                  "ram_available_bytes": None, "swap_used_bytes": None})
    rec, server = make(tmp_path)
    rec.sampler = type("NoSampler", (), {"start": lambda self: None, "stop": lambda self: None})()
    rec.predictions.keep("h", PLAN)
    server.prompt_queue.currently_running[1] = (1, "h", PROMPT, {}, ["9"])
    server.send_sync("execution_start", {"prompt_id": "h"})
    server.send_sync("executing", {"node": "8", "prompt_id": "h"})
    server.send_sync("executing", {"node": "9", "prompt_id": "h"})
    server.send_sync("execution_success", {"prompt_id": "h"})
    run = only_run(rec)
    assert stage(run, "vae_decode")["measured_host_added_bytes"] == 4000
    assert stage(run, "other")["measured_host_added_bytes"] == 100


def test_the_host_peak_probe_reads_this_processs_peak_rss():
    from headroom_pack.nodes.recorder import probes
    if not probes.reset_host_peak():
        pytest.skip("no /proc/self/clear_refs here")
    before = probes.host_peak()
    block = bytearray(64 << 20)
    block[::4096] = b"x" * len(block[::4096])  # touched, so resident
    del block
    grown = probes.host_peak()
    assert grown - before >= 60 << 20  # the peak stays after the memory is freed
    assert probes.reset_host_peak() and probes.host_peak() < grown - (32 << 20)


def test_the_history_rotates_and_keeps_two_files(tmp_path):
    store = history_store.HistoryStore(str(tmp_path / "runs.jsonl"), rotate_bytes=2000)
    for i in range(100):
        assert store.append({"ev": "sample", "prompt_id": "r", "t": i, "pad": "x" * 50})
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["runs.1.jsonl", "runs.jsonl"]
    assert all(p.stat().st_size <= 2000 for p in tmp_path.iterdir())
    last = json.loads((tmp_path / "runs.jsonl").read_text().splitlines()[-1])
    assert last["t"] == 99 and last["v"] == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/dev/full is Linux's")
def test_a_full_disk_stops_recording_with_one_line_and_the_run_goes_on(tmp_path, caplog):
    server = FakeServer()
    rec = hooks.Recorder(history_store.HistoryStore("/dev/full"))
    assert rec.attach(server)
    with caplog.at_level(logging.WARNING, logger="headroom"):
        run_prompt(server, "full")
        run_prompt(server, "full2")
    assert server.sent.count("execution_success") == 2  # every message still reached ComfyUI
    assert len(server.prompt_queue.done) == 2
    assert rec.store.stopped is not None
    assert len([r for r in caplog.records if "recorder stopped" in r.getMessage()]) == 1


def test_a_folder_that_cannot_be_written_stops_recording(tmp_path, caplog):
    blocker = tmp_path / "headroom"
    blocker.write_text("a file where the folder should be")
    rec, server = make(tmp_path)
    with caplog.at_level(logging.WARNING, logger="headroom"):
        run_prompt(server, "p")
    assert server.sent[-1] == "execution_success"
    assert rec.store.stopped is not None


def test_a_failing_probe_never_reaches_comfyui(tmp_path, monkeypatch):
    rec, server = make(tmp_path)
    monkeypatch.setattr(hooks.probes, "host", lambda: 1 / 0)
    run_prompt(server, "p")
    assert server.sent[-1] == "execution_success"


def test_the_queue_time_estimate_is_kept_per_prompt_id(core, tmp_path, monkeypatch):
    rec, server = make(tmp_path)
    monkeypatch.setattr(recorder_pkg, "_recorder", rec)
    request = {"prompt": json.loads(json.dumps(PROMPT)), "client_id": "c"}
    out = prompt_handler.on_prompt(request)
    assert out is request and isinstance(request["prompt_id"], str)  # ComfyUI runs it under this id
    assert prompt_handler.wait_idle(10)
    prediction = rec.predictions.get(request["prompt_id"])
    assert prediction is not None and prediction["node_stages"] == {"8": "vae_decode"}
    given = {"prompt": json.loads(json.dumps(PROMPT)), "prompt_id": "mine"}
    prompt_handler.on_prompt(given)
    assert given["prompt_id"] == "mine"


def test_predictions_are_bounded():
    kept = hooks.predictions.Predictions(limit=3)
    for i in range(10):
        kept.keep(f"p{i}", PLAN)
    assert len(kept) == 3 and kept.get("p0") is None and kept.get("p9") is not None


def test_route_answers_the_cores_runs(core, tmp_path, monkeypatch):
    rec, server = make(tmp_path)
    monkeypatch.setattr(recorder_pkg, "_recorder", rec)
    for i in range(3):
        run_prompt(server, f"r{i}")

    async def check(client):
        r = await client.get("/headroom/runs?limit=2")
        assert r.status == 200
        body = await r.json()
        assert body["v"] == 1 and [x["prompt_id"] for x in body["runs"]] == ["r2", "r1"]
        bad = await client.get("/headroom/runs?limit=lots")
        assert bad.status == 400 and "limit" in (await bad.json())["error"]
        over = await client.get("/headroom/runs?limit=500")
        assert over.status == 400 and "limit" in (await over.json())["error"]
        default = await client.get("/headroom/runs")
        assert len((await default.json())["runs"]) == 3
    run_with_client(check)


class FakeCuda:
    """torch.cuda as the recorder reads it: a context exists, peaks since the last reset."""

    def __init__(self):
        self.peak = 0
        self.resets = 0

    def is_initialized(self):
        return True

    def reset_peak_memory_stats(self):
        self.resets += 1
        self.peak = 0

    def max_memory_reserved(self):
        return self.peak

    def max_memory_allocated(self):
        return self.peak // 2

    def memory_reserved(self):
        return self.peak

    def current_device(self):
        return 0

    def get_device_name(self, index):
        return "Test GPU"

    def get_device_properties(self, index):
        return type("Props", (), {"total_memory": 24 << 30})()


def test_device_peaks_are_reset_and_read_around_each_node(core, tmp_path, monkeypatch):
    cuda = FakeCuda()
    monkeypatch.setitem(sys.modules, "torch", type("Torch", (), {"cuda": cuda})())
    rec, server = make(tmp_path)
    rec.predictions.keep("g", PLAN)
    server.prompt_queue.currently_running[1] = (1, "g", PROMPT, {}, ["9"])
    server.send_sync("execution_start", {"prompt_id": "g"})
    for node, peak in (("4", 1 << 30), ("8", 5 << 30), ("9", 2 << 20)):
        server.send_sync("executing", {"node": node, "prompt_id": "g"})
        cuda.peak = peak  # what the node allocated while it ran
    server.send_sync("execution_success", {"prompt_id": "g"})
    assert cuda.resets == 3
    run = only_run(rec)
    assert run["runtime"]["device"] == "Test GPU" and run["runtime"]["vram_total_bytes"] == 24 << 30
    decode = stage(run, "vae_decode")
    assert decode["measured_bytes"] == 5 << 30 and decode["measured_allocated_bytes"] == 5 << 29
    other = stage(run, "other")
    assert [n["peak_reserved_bytes"] for n in other["nodes"]] == [1 << 30, 2 << 20]
    assert other["measured_bytes"] == 1 << 30  # the stage's peak is its largest node's


def test_install_records_into_comfyuis_user_directory_unless_turned_off(core, tmp_path, monkeypatch):
    from headroom_pack import nodes
    folder_paths = type("FolderPaths", (), {"get_user_directory": staticmethod(lambda: str(tmp_path / "user"))})
    monkeypatch.setitem(sys.modules, "folder_paths", folder_paths)
    monkeypatch.setattr(recorder_pkg, "_recorder", None)
    monkeypatch.setenv("HEADROOM_RECORDER", "0")
    nodes.start_recorder(FakeServer())
    assert recorder_pkg.recorder() is None
    monkeypatch.delenv("HEADROOM_RECORDER")
    server = FakeServer()
    nodes.start_recorder(server)
    rec = recorder_pkg.recorder()
    assert rec is not None and rec.store.path == str(tmp_path / "user" / "headroom" / "runs.jsonl")
    run_prompt(server, "u")
    assert only_run(rec)["outcome"] == "ok"
    assert not rec.attach(server)  # a second install does not wrap ComfyUI's send_sync twice


def test_without_proc_the_process_ram_comes_from_psutil(monkeypatch):
    from headroom_pack.nodes.recorder import probes
    fake = type("Psutil", (), {"Process": staticmethod(lambda: type("P", (), {
        "memory_info": lambda self: type("M", (), {"rss": 123456789})()})())})
    monkeypatch.setattr(probes, "_proc_status_rss", lambda: None)
    monkeypatch.setitem(sys.modules, "psutil", fake)
    assert probes.host()["rss_bytes"] == 123456789
    monkeypatch.delitem(sys.modules, "psutil")
    assert probes.host()["rss_bytes"] is None  # unknown, never a made-up figure
