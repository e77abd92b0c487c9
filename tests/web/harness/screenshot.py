"""The browser tests' pictures: always written to tests/web/artifacts/ (ignored by git); with
HEADROOM_UPDATE_SCREENSHOT=1 also copied to docs/, so a plain test run leaves the tree clean."""
import os
import shutil

from .server import HERE, REPO


def save(page, name, selector="#sidebar"):
    folder = HERE.parent / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    page.locator(selector).screenshot(path=str(path))
    if os.environ.get("HEADROOM_UPDATE_SCREENSHOT") == "1":
        (REPO / "docs").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, REPO / "docs" / name)
    return path
