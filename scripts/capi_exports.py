"""The C functions native/capi/headroom_capi.h declares for export: what the built library must export,
and nothing more (scripts/pe_check.py, scripts/macho_check.py). Read from the header, so adding a
function there is the only change needed."""

import re
from pathlib import Path

HEADER = Path(__file__).resolve().parent.parent / "native" / "capi" / "headroom_capi.h"
DECLARATION = re.compile(r"^HEADROOM_CAPI_EXPORT\b[^(]*?\b(headroom_\w+)\s*\(", re.M)


def declared(header=HEADER):
    names = DECLARATION.findall(Path(header).read_text())
    if not names:
        raise ValueError(f"{header}: found no 'HEADROOM_CAPI_EXPORT <type> headroom_...(' declaration")
    return names
