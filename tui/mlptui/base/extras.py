"""The command that adds one of mlptui's optional extras (`gpu`, `cluster`) to the install that is running.

No package index serves mlptui, so `pip install 'mlptui[gpu]'` finds nothing: the extra comes from the
checkout mlptui was installed from, with the pip of the interpreter running it (a bare `pip` may be
another Python's when the venv is not activated), editable again when the install is editable.

    install_hint(extra) -> "/path/.venv/bin/python -m pip install -e '/path/checkout[gpu]'"
"""

from __future__ import annotations

import json
import shlex
import sys
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse


def install_hint(extra: str) -> str:
    found = _installed_from()
    if found is None:
        return f"pip install '.[{extra}]' in the mlptui checkout"
    checkout, editable = found
    return (f"{shlex.quote(sys.executable)} -m pip install {'-e ' if editable else ''}"
            f"{shlex.quote(f'{checkout}[{extra}]')}")


def _installed_from() -> tuple[str, bool] | None:
    """The checkout this install came from and whether it is editable, as pip recorded it
    (direct_url.json); else the checkout this file lies in (its source folders put on the path by hand)."""
    for dist in metadata.distributions(name="mlptui"):
        try:
            record = json.loads(dist.read_text("direct_url.json") or "null")
        except ValueError:
            continue
        url = urlparse(record.get("url", "")) if isinstance(record, dict) else None
        if url is not None and url.scheme == "file":
            return unquote(url.path), bool((record.get("dir_info") or {}).get("editable"))
    root = Path(__file__).resolve().parents[3]
    if (root / "pyproject.toml").is_file() and (root / "tui" / "mlptui" / "base" / "extras.py").is_file():
        return str(root), True
    return None
