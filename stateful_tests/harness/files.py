"""Files the checks write for a maintainer to replay: written whole or not at all.

``write_json_atomically(path, body)`` writes into a temporary file in the same folder and renames
it over ``path``, so a crash or a full disk never leaves half a schedule or half a fuzz case
behind for a later replay to trip on.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_json_atomically(path: Path, body: Any) -> Path:
    """Write ``body`` as indented JSON to ``path`` (its folder is made if missing), atomically; return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(body, out, indent=1)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
