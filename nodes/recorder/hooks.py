"""Node boundaries from ComfyUI's own progress messages.

ComfyUI's executor calls PromptServer.send_sync on its own thread for "execution_start", "executing"
{node} right before each node runs, and "execution_success" / "execution_error" / "execution_interrupted"
when the prompt ends; 0.3.x (execution.py, main.py) and the current releases send the same messages, since
the browser's progress display depends on them. Wrapping send_sync therefore sees every node boundary on
the thread that runs the node, with no patch of execution.py's functions (whose signatures change between
releases). A node ends where the next "executing" or the end message is sent; cached nodes send no
"executing" and cost nothing. ComfyUI sends execution_start and the end messages only when the prompt
came with a client_id (execution.py add_message); "executing" {node} always. So a new prompt_id in
"executing" also starts a run, and PromptQueue.task_done, which main.py calls after every prompt with
its status messages, ends the run that no end message ended. Every call into the recorder is guarded: a recorder failure never reaches
send_sync's caller."""
import logging
import re
import time
import uuid

from . import predictions, probes
from .sampler import Sampler

log = logging.getLogger("headroom")

_ENDS = {"execution_success": "ok", "execution_error": "error", "execution_interrupted": "interrupted"}
# "C:\\Users\\me\\models\\x.safetensors" -> "x.safetensors": the history keeps file names, never paths.
_PATH = re.compile(r"(?:[A-Za-z]:)?[\\/](?:[^\s\\/'\"]+[\\/])+([^\s\\/'\"]+)")
MAX_MESSAGE = 500


def _scrub(text) -> str:
    text = _PATH.sub(r"\1", str(text))
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 3] + "..."


def ensure_prompt_id(json_data):
    """The prompt_id ComfyUI will give this queue request: the client's own, else one set here (ComfyUI
    takes json_data["prompt_id"] when present, server.py post_prompt), so the estimate made now can be
    matched with the run later. None for a request that is not a dict."""
    if not isinstance(json_data, dict):
        return None
    prompt_id = json_data.get("prompt_id")
    if prompt_id is None:
        prompt_id = json_data["prompt_id"] = str(uuid.uuid4())
    return str(prompt_id)


class Recorder:
    def __init__(self, store, sample_period=None):
        self.store = store
        self.predictions = predictions.Predictions()
        self.predictions.on_kept = self._late_prediction
        self.active = None        # prompt_id of the running prompt
        self._node = None         # (id, type, perf_counter at its start, RSS at its start)
        self._node_types = {}     # node id -> class_type of the running prompt
        self._predicted = False   # the running prompt's prediction is written
        self._server = None
        self.unfinished_run = None  # the run the previous process left unfinished (unfinished_notice.py)
        self.unfinished_seen = False  # the frontend showed its notice
        self.sampler = Sampler(self._sample, *(() if sample_period is None else (sample_period,)))

    # ---- wiring ----

    def attach(self, server) -> bool:
        original = getattr(server, "send_sync", None)
        if original is None or getattr(original, "_headroom_recorder", False):
            return False
        recorder = self

        def send_sync(event, data, sid=None):
            try:
                recorder.on_message(event, data)
            except Exception as e:  # never between ComfyUI and its own message
                log.debug("Headroom recorder: %s", e)
            return original(event, data, sid)

        send_sync._headroom_recorder = True
        server.send_sync = send_sync
        self._server = server
        queue = getattr(server, "prompt_queue", None)
        task_done = getattr(queue, "task_done", None)
        if task_done is not None and not getattr(task_done, "_headroom_recorder", False):
            def wrapped_task_done(*args, **kwargs):
                try:
                    recorder.on_task_done(kwargs.get("status", args[2] if len(args) > 2 else None))
                except Exception as e:
                    log.debug("Headroom recorder: %s", e)
                return task_done(*args, **kwargs)

            wrapped_task_done._headroom_recorder = True
            queue.task_done = wrapped_task_done
        return True

    def on_task_done(self, status):
        """The prompt is done: end its run from the status messages if no end message did."""
        if self.active is None:
            return
        messages = getattr(status, "messages", None) or []
        for event, data in messages if isinstance(messages, list) else []:
            if event in _ENDS and event != "execution_success":
                return self.on_message(event, data if isinstance(data, dict) else {})
        ok = getattr(status, "status_str", "success") == "success"
        self._end_node()
        self._end("ok" if ok else "error", None if ok else "ComfyUI reported an error")

    def on_message(self, event, data):
        if not isinstance(data, dict):
            return
        if event == "execution_start":
            return self._start(str(data.get("prompt_id")))
        if event == "executing":
            node, prompt_id = data.get("node"), data.get("prompt_id")
            if node is not None and prompt_id is not None and str(prompt_id) != self.active:
                self._start(str(prompt_id))  # no execution_start: a prompt queued without a client_id
            if self.active is None:
                return
            self._end_node()
            if node is not None:
                self._start_node(str(node))
        elif event in _ENDS and self.active is not None:
            self._end_node()
            outcome, message = _ENDS[event], None
            if event == "execution_error":
                message = _scrub(f"{data.get('exception_type', '')}: {data.get('exception_message', '')}")
                if self._is_oom(message):
                    outcome = "oom"
            self._end(outcome, message)

    # ---- events ----

    def _write(self, ev, prompt_id=None, **fields):
        self.store.append({"ev": ev, "prompt_id": prompt_id or self.active, "t": time.time(), **fields})

    def _start(self, prompt_id):
        if self.active is not None:  # a prompt that never ended (a message we missed): close it as it stands
            self._end_node()
            self._end("error", "no end message from ComfyUI")
        self.active = prompt_id
        self._node_types = self._types_of(prompt_id)
        self._predicted = False
        self._write("start", runtime=probes.runtime(), ram_total_bytes=probes.ram_total(), **probes.host())
        self._write_prediction(self.predictions.get(prompt_id))
        self.sampler.start()

    def _write_prediction(self, prediction):
        if prediction is not None and not self._predicted:
            self._predicted = True
            self._write("predict", prediction=prediction)

    def _late_prediction(self, prompt_id, prediction):
        # The estimate runs on the preflight worker and may finish after the prompt started.
        if prompt_id == self.active:
            self._write_prediction(prediction)

    def _start_node(self, node_id):
        node_type = self._node_types.get(node_id, "")
        probes.reset_device_peaks()
        # The RSS the node starts from, and its peak over the node: what the node added in host memory
        # (all a CPU run's tensors, and what a GPU run stages there).
        rss_start = probes.host()["rss_bytes"] if probes.reset_host_peak() else None
        self._node = (node_id, node_type, time.perf_counter(), rss_start)
        self._write("node_start", id=node_id, type=node_type)

    def _end_node(self):
        if self._node is None:
            return
        node_id, node_type, began, rss_start = self._node
        self._node = None
        wall = time.perf_counter() - began
        reserved, allocated = probes.device_peaks()
        peak_rss = probes.host_peak() if rss_start is not None else None
        self._write("node", id=node_id, type=node_type, wall_s=round(wall, 6), peak_reserved_bytes=reserved,
                    peak_allocated_bytes=allocated, rss_start_bytes=rss_start, peak_rss_bytes=peak_rss,
                    aimdo=probes.aimdo(), **probes.host())

    def _end(self, outcome, message):
        self.sampler.stop()
        self._write("end", outcome=outcome, message=message)
        self.active = None
        self._node_types = {}

    def _sample(self):
        active = self.active  # read once: the executor thread may end the run meanwhile
        if active is not None:
            self._write("sample", prompt_id=active, vram_bytes=probes.device_reserved(), **probes.host())

    # ---- what ComfyUI knows ----

    def _types_of(self, prompt_id):
        """node id -> class_type of the prompt being run, from ComfyUI's queue (the message has ids only)."""
        queue = getattr(self._server, "prompt_queue", None)
        running = getattr(queue, "currently_running", None)
        try:
            for item in list(running.values()) if isinstance(running, dict) else []:
                if len(item) > 2 and str(item[1]) == prompt_id and isinstance(item[2], dict):
                    return {str(k): str(v.get("class_type", "")) for k, v in item[2].items() if isinstance(v, dict)}
        except Exception:
            pass
        return {}

    @staticmethod
    def _is_oom(message):
        """Whether the core's OOM explainer recognises the error as a memory failure."""
        try:
            from ..native import native_loader
            return bool(native_loader.call_json("explain", {"text": message}).get("recognised"))
        except Exception:
            return False

    # ---- the previous process's runs ----

    def history(self, limit=20):
        """The core's answer for this history (api::runs), the running prompt marked as such."""
        from ..native import native_loader
        request = {"history": self.store.path, "limit": limit}
        if self.active is not None:
            request["active_prompt_id"] = self.active
        return native_loader.call_json("runs", request)

    def report_previous_runs(self):
        """At start-up: one log line for a run the previous process left unfinished, one for skipped lines."""
        try:
            answer = self.history(limit=1)
        except Exception as e:
            log.info("Headroom recorder: history not read: %s", e)
            return
        runs = answer.get("runs") or []
        if runs and runs[0].get("outcome") == "unfinished":
            self.unfinished_run = runs[0]  # the frontend's notice on its first load (unfinished_notice.py)
            log.warning("Headroom: the last run (prompt %s) did not finish: %s", runs[0].get("prompt_id"),
                        runs[0].get("message"))
        skipped = answer.get("skipped_lines") or 0
        if skipped:
            log.warning("Headroom recorder: %d lines of %s skipped (damaged, too long or from a newer Headroom): %s",
                        skipped, self.store.path, answer.get("skipped"))
