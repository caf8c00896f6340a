"""`make demo`: the main job on the embedded engine, end to end, over the example contracts."""

from __future__ import annotations

import sys

from delta_contracts.cli import app


def _run(*argv: str) -> int:
    print(f"\n$ delta-contracts {' '.join(argv)}", flush=True)
    try:
        app(list(argv), standalone_mode=False)
    except SystemExit as done:
        return int(done.code or 0)
    return 0


def main() -> int:
    code = _run("lint", "contracts")
    return 0 if code in (0, 1) else code


if __name__ == "__main__":
    sys.exit(main())
