"""One background thread for the queue-time estimates (prompt_handler.py).

ComfyUI calls its prompt handlers synchronously on the server's event loop, and an estimate can take
seconds (a header of a million tensors, a prompt of 20,000 nodes): done there, it stalls every websocket
and every request of every user. The estimate is done here instead, one at a time. At most one job
waits: a newer prompt replaces the waiting one, because a toast about a prompt queued before the newest
one is of no use to anyone, and a queue that grows with each prompt would hold prompts (and memory)
without bound. A job that is replaced is told so (`dropped`), so nothing waits on it forever."""
import logging
import threading

log = logging.getLogger("headroom")


class Job:
    """Work for the worker: run() is called on its thread; dropped() when a newer job took its place
    before it started."""

    def run(self):
        raise NotImplementedError

    def dropped(self):
        pass


def one_line(error: BaseException, limit=300) -> str:
    """`Type: message` on one line, cut at `limit` characters: ComfyUI's log keeps one line per event."""
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


class LatestWins:
    """A single daemon thread, started on the first job; one job running and at most one waiting."""

    def __init__(self, name="headroom-preflight"):
        self._name = name
        self._cond = threading.Condition()
        self._pending = None
        self._busy = False
        self._thread = None

    def submit(self, job: Job):
        with self._cond:
            replaced, self._pending = self._pending, job
            # Started here rather than at import: importing the pack must start nothing. A thread killed by
            # something no job catches (SystemExit) is started again rather than leaving jobs unrun.
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()
        if replaced is not None:
            replaced.dropped()

    def _loop(self):
        while True:
            with self._cond:
                while self._pending is None:
                    self._cond.wait()
                job, self._pending = self._pending, None
                self._busy = True
            try:
                job.run()
            except Exception as e:  # one bad job must not end the thread that serves every later prompt
                log.warning("Headroom preflight failed in the background: %s", one_line(e))
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def idle(self) -> bool:
        """No job runs or waits now."""
        with self._cond:
            return self._pending is None and not self._busy

    def wait_idle(self, timeout=None) -> bool:
        """True once no job runs or waits (within `timeout` seconds); for tests and benchmarks."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and not self._busy, timeout)
