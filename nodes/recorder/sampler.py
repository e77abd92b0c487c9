"""While a prompt runs, one line of memory figures every PERIOD_S: the timeline, and the last RAM figures a
run killed during a long node leaves behind (the node events come only when a node ends)."""
import threading

PERIOD_S = 1.0


class Sampler:
    def __init__(self, write, period=PERIOD_S):
        self._write = write  # called with no arguments on the sampler's thread
        self._period = period
        self._running = threading.Event()
        self._wake = threading.Event()
        self._thread = None

    def start(self):
        self._running.set()
        self._wake.clear()
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, name="headroom-recorder", daemon=True)
            self._thread.start()

    def stop(self):
        self._running.clear()
        self._wake.set()

    def _loop(self):
        while True:
            self._running.wait()
            if self._wake.wait(self._period):  # stopped (or restarted) before the period ran out
                self._wake.clear()
                continue
            if self._running.is_set():
                try:
                    self._write()
                except Exception:  # a figure that cannot be read this second: try again the next
                    pass
