"""The history file: one JSON event per line, appended and flushed as the run goes, so a process killed
mid-run leaves every event before its last line (the core's reader skips a line cut in half). Rotated
at ROTATE_BYTES: runs.jsonl becomes runs.1.jsonl and the older one is dropped, so the history stays under
about 8 MiB. A disk that is full or a folder that cannot be written stops recording with one log line;
the run itself never sees the error."""
import json
import logging
import os
import threading

log = logging.getLogger("headroom")

VERSION = 1
ROTATE_BYTES = 4 * 1024 * 1024
FILE_NAME = "runs.jsonl"
ROTATED_NAME = "runs.1.jsonl"


def default_path():
    """<ComfyUI user directory>/headroom/runs.jsonl, or None outside ComfyUI. The user directory holds the
    user's settings; never the models or output folders, which are shared and published."""
    try:
        import folder_paths
        user = folder_paths.get_user_directory()
    except Exception:
        return None
    return os.path.join(user, "headroom", FILE_NAME) if user else None


class HistoryStore:
    def __init__(self, path, rotate_bytes=ROTATE_BYTES):
        self.path = path
        self.rotated = os.path.join(os.path.dirname(path), ROTATED_NAME)
        self.rotate_bytes = rotate_bytes
        self.stopped = None  # the reason recording stopped, once it has
        self._file = None
        self._size = 0
        self._lock = threading.Lock()  # the executor thread and the sampler both write

    def append(self, event: dict) -> bool:
        """Writes one event line; False once recording has stopped. Never raises."""
        if self.stopped is not None:
            return False
        try:
            line = json.dumps({"v": VERSION, **event}, separators=(",", ":"), allow_nan=False) + "\n"
        except (TypeError, ValueError) as e:  # a figure that is not JSON: drop that event, keep recording
            log.debug("Headroom recorder: event not written: %s", e)
            return True
        data = line.encode("utf-8", "replace")
        with self._lock:
            try:
                if self._file is None:
                    self._open()
                elif self._size + len(data) > self.rotate_bytes:
                    self._rotate()
                self._file.write(data)
                self._file.flush()
                self._size += len(data)
                return True
            except OSError as e:
                self._stop(e)
                return False

    def _open(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self._file = open(self.path, "ab")
        self._size = self._file.tell()

    def _rotate(self):
        self._file.close()
        self._file = None
        os.replace(self.path, self.rotated)
        self._open()

    def _stop(self, error):
        self.stopped = f"{type(error).__name__}: {error}"
        log.warning("Headroom recorder stopped: cannot write %s (%s); runs go on unrecorded",
                    self.path, self.stopped)
        try:
            if self._file is not None:
                self._file.close()
        except OSError:
            pass
        self._file = None

    def close(self):
        with self._lock:
            if self._file is not None:
                try:
                    self._file.close()
                except OSError:
                    pass
                self._file = None
