"""What the run recorder costs per node (issue 21, item 5).

The recorder runs on ComfyUI's executor thread at every node boundary: one "executing" message ends a
node (device peaks, process RSS, /proc/meminfo, one JSON line written and flushed) and starts the next
(peaks reset, one line). This sends the same "executing" messages through a stand-in server's send_sync
with the recorder attached and without it, and prints the extra time per node (median and 99th
percentile over the nodes) and the bytes of history per node. No CUDA context exists here, so the
device reads are the cheap "no context" path; on a GPU each adds about a microsecond of torch's counters.
Run from the repository root:
    HEADROOM_BUILD_DIR=build .venv/bin/python tests/bench/bench_recorder.py [--nodes N]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "python"))

from conftest import load_pack  # noqa: E402

load_pack()
from headroom_pack.nodes.recorder import history_store, hooks  # noqa: E402


class Server:
    def __init__(self):
        self.prompt_queue = None

    def send_sync(self, event, data, sid=None):
        pass


def per_node(server, nodes):
    times = []
    server.send_sync("execution_start", {"prompt_id": "bench"})
    for i in range(nodes):
        began = time.perf_counter()
        server.send_sync("executing", {"node": str(i), "prompt_id": "bench"})
        times.append(time.perf_counter() - began)
    server.send_sync("execution_success", {"prompt_id": "bench"})
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=20000)
    args = parser.parse_args()
    plain = per_node(Server(), args.nodes)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "runs.jsonl")
        server = Server()
        rec = hooks.Recorder(history_store.HistoryStore(path, rotate_bytes=1 << 40))
        rec.attach(server)
        recorded = per_node(server, args.nodes)
        rec.sampler.stop()
        size = os.path.getsize(path)
    extra = sorted(r - p for r, p in zip(recorded, plain))
    median = statistics.median(extra) * 1e6
    p99 = extra[int(len(extra) * 0.99)] * 1e6
    # On a shared machine a node's time includes waits for a CPU; the quietest block of 100 nodes is the
    # recorder's own cost.
    blocks = [statistics.mean(recorded[i:i + 100]) - statistics.mean(plain[i:i + 100])
              for i in range(0, args.nodes - 99, 100)]
    print(f"run recorder, {args.nodes} nodes: {median:.1f} us per node (median), {p99:.1f} us (p99), "
          f"{min(blocks) * 1e6:.1f} us (quietest 100 nodes), {size / args.nodes:.0f} bytes of history per node")
    print(f"a 1 s node is slowed by {median / 1e4:.4f} %; a 20-node workflow by {20 * median / 1e3:.2f} ms in all")


if __name__ == "__main__":
    main()
