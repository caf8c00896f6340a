"""Promotion order (`promote: [dev, staging, prod]` in contracts.yml): a migration's phase runs in an
environment only once it has finished in every earlier one, each read from that environment's own ledger.
`--force --reason` runs it anyway, and the ledger of the environment it runs in records who, why and what
the earlier environments lacked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from delta_contracts.state.record import Records, TableRecord

if TYPE_CHECKING:
    from delta_contracts.apply.runner import Runner

PROMOTION_KIND = "promotion"


@dataclass(frozen=True)
class Upstream:
    """An earlier environment: its name and its records (its ledger, its names for tables)."""

    name: str
    records: Records


@dataclass(frozen=True)
class Promotion:
    environment: str
    earlier: Sequence[Upstream]

    def missing(self, runner: Runner, record: TableRecord) -> list[str]:
        """Each (migration, phase) this run would start here that an earlier environment has not finished,
        said as `<migration> [<phase>] has not run in <env>`."""
        from delta_contracts.contract.model import semver_tuple

        to = runner.options.to_version
        wanted = {
            stored.migration_id
            for stored in record.history
            if to is None or semver_tuple(stored.migration.to_version) <= semver_tuple(to)
        }
        phases = {p.value for p in runner.options.phases}
        here = record.pending()
        to_run = [
            (p.migration_id, phase)
            for p in here
            if p.migration_id in wanted
            for phase in p.phases
            if phase in phases
        ]
        if not to_run:
            return []
        lacking = []
        for upstream in self.earlier:
            # Their migrations are ours (one folder), as they run under their names; checked here already.
            theirs = upstream.records.of(record.contract, verified=False)
            open_there = {(p.migration_id, phase) for p in theirs.pending() for phase in p.phases}
            for migration_id, phase in to_run:
                if (migration_id, phase) in open_there:
                    lacking.append(f"{migration_id} [{phase}] has not finished in {upstream.name}")
        return lacking

    def check(self, runner: Runner, record: TableRecord) -> str | None:
        """Why nothing of the record's table may run here (None: it may); forced, the run is recorded and
        allowed."""
        lacking = self.missing(runner, record)
        if not lacking:
            return None
        order = " → ".join([*(u.name for u in self.earlier), self.environment])
        if runner.options.force_reason is None or runner.options.dry_run:
            return (
                f"not promoted to {self.environment} (promote: {order}): {'; '.join(lacking)}. Apply it "
                "there first, or run it here with --force --reason (recorded)"
            )
        record.append_event(
            PROMOTION_KIND,
            reason=runner.options.force_reason,
            run_id=runner.run_id,
            detail=f"applied to {self.environment} out of order ({order}): {'; '.join(lacking)}",
        )
        return None
