"""The migrations folder: `migrations/<table id>/NNNN_<slug>.{sql,json}` plus a chained `migrations.sum`.

The `.sql` file is for reviewers; the `.json` file is for the machine — the ops, the contract snapshot the
migration reaches and the table state after it — because ops round-trip exactly through JSON while SQL would
have to be parsed back, and JSON diffs read well in a pull request. `migrations.sum` chains SHA-256 sums in
the manner of Atlas's `atlas.sum`, so an edited, removed or reordered file is caught with its name.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delta_contracts.contract.model import Contract
from delta_contracts.errors import InputError
from delta_contracts.paths import inside, write_atomically
from delta_contracts.plan.ops import Migration
from delta_contracts.plan.planner import TableState, plan
from delta_contracts.plan.serialize import migration_from_data, migration_to_data
from delta_contracts.plan.sqlfile import render_sql_file
from delta_contracts.plan.stored import StoredMigration
from delta_contracts.tableid import TableId
from delta_contracts.target import Target

if TYPE_CHECKING:
    from delta_contracts.contract.environments import NameMapping

SUM_FILE = "migrations.sum"
FORMAT = "delta-contracts/migration/v1"
_NAME = re.compile(r"^(\d{4})_[A-Za-z0-9_.-]+\.(sql|json)$")


class IntegrityError(InputError):
    """A migration folder does not match its sum file; `path` names the offending file."""

    def __init__(self, path: Path, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


@dataclass(frozen=True)
class PlannedFiles:
    migration_id: str
    migration: Migration
    files: dict[str, str]  # file name -> content


def table_folder(root: Path, contract_id: str) -> Path:
    """`<root>/<contract id>`, proved to lie under `root` (OutsideRootError otherwise): an id is a name."""
    return inside(root, contract_id)


def _h1(data: bytes) -> str:
    return "h1:" + base64.b64encode(hashlib.sha256(data).digest()).decode()


def compute_sum(folder: Path, names: list[str]) -> str:
    """Atlas-style: a line per file with a hash chained through the previous one, and a total first."""
    lines = []
    previous = b""
    for name in names:
        content = (folder / name).read_bytes()
        digest = _h1(previous + name.encode() + b"\0" + content)
        lines.append(f"{name} {digest}")
        previous = digest.encode()
    total = _h1("\n".join(lines).encode())
    return "\n".join([total, *lines]) + "\n"


def migration_files(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_file() and _NAME.match(p.name))


def verify(folder: Path) -> None:
    """Raise IntegrityError naming the first file that does not match `migrations.sum`."""
    names = migration_files(folder)
    sum_path = folder / SUM_FILE
    if not sum_path.exists():
        if names:
            raise IntegrityError(sum_path, "missing: the folder has migrations but no sum file")
        return
    recorded = sum_path.read_text(encoding="utf-8").splitlines()
    entries = dict(line.split(" ", 1) for line in recorded[1:] if " " in line)
    for name in names:
        if name not in entries:
            raise IntegrityError(folder / name, "not recorded in migrations.sum (added by hand?)")
    for name in entries:
        if name not in names:
            raise IntegrityError(folder / name, "recorded in migrations.sum but missing")
    expected = compute_sum(folder, [n for n in names]).splitlines()
    for line, want in zip(recorded[1:], expected[1:], strict=False):
        if line != want:
            raise IntegrityError(
                folder / line.split(" ", 1)[0], "changed since it was planned (checksum mismatch)"
            )
    if recorded[:1] != expected[:1]:
        raise IntegrityError(sum_path, "total checksum mismatch")


def load_history(folder: Path, names: NameMapping | None = None) -> list[StoredMigration]:
    """The folder's migrations in order; with `names`, as they run in that environment (every table they
    name under its mapping, `plan.environment`)."""
    from delta_contracts.contract.model import Contract

    history = []
    for name in migration_files(folder):
        if not name.endswith(".json"):
            continue
        path = folder / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != FORMAT:
                raise ValueError(f"format is {data.get('format')!r}, expected {FORMAT!r}")
            stored = StoredMigration(
                migration_id=name.removesuffix(".json"),
                migration=migration_from_data(data["migration"]),
                contract=Contract.model_validate(data["contract"]),
                state=TableState(
                    TableId(data["state"]["physical"]), tuple(tuple(p) for p in data["state"]["properties"])
                ),
                target=Target(data["target"]),
                sql_path=path.with_suffix(".sql"),
                json_path=path,
            )
        except (ValueError, KeyError, TypeError) as err:
            raise IntegrityError(path, f"unreadable migration: {err}") from None
        history.append(stored)
    if names is not None and not names.identity:
        from delta_contracts.plan.environment import history_in_environment

        return history_in_environment(history, names)
    return history


def _slug(old: Contract | None, new: Contract) -> str:
    if old is None:
        return f"create_{new.version}"
    return f"{old.version}_to_{new.version}"


def migration_data(
    migration: Migration, state: TableState, contract: Contract, target: Target
) -> dict[str, Any]:
    """A migration's `.json` file as data: what `load_history` reads back (its ops, the table's planned state
    and the contract it reaches)."""
    return {
        "format": FORMAT,
        "target": target.value,
        "migration": migration_to_data(migration),
        "state": {"physical": list(state.physical), "properties": [list(p) for p in state.properties]},
        "contract": contract.model_dump(mode="json", by_alias=True, exclude_defaults=False),
    }


def next_migration(history: list[StoredMigration], contract: Contract, target: Target) -> PlannedFiles | None:
    """The files of the migration `contract` needs, or None when the last snapshot already matches it."""
    last = history[-1] if history else None
    if last is not None and last.contract == contract:
        return None
    old = last.contract if last else None
    migration, state = plan(old, contract, target, state=last.state if last else None)
    number = (int(last.migration_id[:4]) + 1) if last else 1
    migration_id = f"{number:04d}_{_slug(old, contract)}"
    payload = migration_data(migration, state, contract, target)
    files = {
        f"{migration_id}.sql": render_sql_file(migration, migration_id=migration_id, target=target),
        f"{migration_id}.json": json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True) + "\n",
    }
    return PlannedFiles(migration_id, migration, files)


def write_migration(folder: Path, planned: PlannedFiles) -> list[Path]:
    """Write the migration's files, then the sum; a crash in between leaves a sum mismatch, not a lie."""
    written = []
    for name, content in planned.files.items():
        path = inside(folder, name)
        write_atomically(path, content)
        written.append(path)
    rewrite_sum(folder)
    return written


def rewrite_sum(folder: Path) -> None:
    """`migrations.sum` made again from the folder's files as they are now (`rehash`, `discard`)."""
    write_atomically(folder / SUM_FILE, compute_sum(folder, migration_files(folder)))
