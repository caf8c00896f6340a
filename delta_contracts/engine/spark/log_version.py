"""A Delta table's current version read from its log folder's file names, where this process can list it.

`apply` reads a table's version before and after every op (the ledger's `version_before` and `version`, the
check that a failed op committed nothing). On delta-spark the only SQL that gives it is `DESCRIBE HISTORY …
LIMIT 1`, a Spark job: measured at 0.4 s a call under load, a quarter of a metadata-only `apply`. A table
whose log is a folder on this machine's filesystem (a local warehouse, the resident engine's) has its version
in its newest commit file's name, `_delta_log/<20 digits>.json`, which Delta writes whole (a rename) and
never removes while it is the newest (delta-spark `FileNames.deltaFile`; log cleanup keeps the latest
commit).

The listing is trusted for a location only once it gave the same version as DESCRIBE HISTORY: a Spark Connect
server on another machine names folders this process cannot see, or sees as other folders, and a
catalog-managed table (Unity Catalog) may hold commits the folder does not show yet (`_staged_commits`).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

COMMIT_FILE = re.compile(r"\d{20}\.json")
LOG_FOLDER = "_delta_log"
STAGED_COMMITS = "_staged_commits"


def local_log_folder(location: str) -> Path | None:
    """The `_delta_log` folder of a table at `location` (DESCRIBE EXTENDED's), when it is a local path
    (a `file:` URI or a plain absolute path); None for any other filesystem."""
    parsed = urlparse(location)
    if parsed.scheme not in ("", "file") or parsed.netloc not in ("", "localhost"):
        return None
    path = Path(unquote(parsed.path))
    return path / LOG_FOLDER if path.is_absolute() else None


def listed_version(log: Path) -> int | None:
    """The newest commit's version in `log`, or None when the folder cannot be listed, holds no commit, or
    holds staged commits not yet in the log (a catalog-managed table's)."""
    try:
        names = [entry.name for entry in log.iterdir()]
        staged = log / STAGED_COMMITS
        if staged.is_dir() and any(staged.iterdir()):
            return None
    except OSError:
        return None
    versions = [int(name[:20]) for name in names if COMMIT_FILE.fullmatch(name)]
    return max(versions) if versions else None


class LogVersions:
    """Per table location: whether its listed version may stand for DESCRIBE HISTORY's (checked once)."""

    def __init__(self) -> None:
        self._trusted: dict[str, bool] = {}

    def version(self, location: str) -> int | None:
        """The listed version of the table at `location`, once trusted there; None: ask DESCRIBE HISTORY."""
        log = local_log_folder(location)
        if log is None or not self._trusted.get(location, False):
            return None
        return listed_version(log)

    def check(self, location: str, described: int | None) -> None:
        """Trust the listing at `location` from now on when it gives `described`, DESCRIBE HISTORY's version
        read just now; a listing that differs once (a commit in between, another machine's folder) is never
        trusted there."""
        if location in self._trusted:
            return
        log = local_log_folder(location)
        listed = None if log is None else listed_version(log)
        self._trusted[location] = listed is not None and listed == described
