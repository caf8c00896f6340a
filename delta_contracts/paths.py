"""Where the toolkit writes: every path built from a name (a contract id, a table, a migration) is proved to
lie under its root before anything is written there.

Names reach the file system as single path components: `inside(root, "sales.orders")`, never
`root / "sales/orders"`. The check resolves the path (following symbolic links) and compares it with the
resolved root, so neither `..`, nor an absolute name, nor a link planted in the tree leads out.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from delta_contracts.errors import InputError

# Longest file name most file systems store (ext4, APFS, NTFS: 255 bytes).
MAX_NAME_BYTES = 255


class OutsideRootError(InputError, ValueError):
    """A name would make the toolkit write outside the folder it owns (or name no file at all)."""


def _check_component(root: Path, name: str) -> None:
    if name in ("", ".", "..") or any(sep in name for sep in ("/", "\\", "\0")):
        raise OutsideRootError(f"'{name}' is not a file name under {root} (a name, never a path)")
    if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        raise OutsideRootError(f"'{name[:40]}…' is longer than a file name may be ({MAX_NAME_BYTES} bytes)")


def inside(root: Path | str, *names: str) -> Path:
    """`root/names…`, after proving it stays under `root` once resolved; raises OutsideRootError otherwise.

    The path is returned as built (relative when `root` is), so messages show it the way the user wrote it."""
    base = Path(root)
    for name in names:
        _check_component(base, name)
    path = base.joinpath(*names)
    resolved_root = base.resolve()
    resolved = path.resolve()
    if resolved != resolved_root and not resolved.is_relative_to(resolved_root):
        raise OutsideRootError(f"{path} resolves to {resolved}, outside {resolved_root}")
    return path


def write_atomically(path: Path, content: str) -> None:
    """Write `content` to `path` whole or not at all: a temporary file beside it, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(content)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
