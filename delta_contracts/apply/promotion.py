"""Promotion order (`promote: [dev, staging, prod]` in contracts.yml): a migration's phase runs in an
environment only once it has finished in every earlier one, each read from that environment's own ledger.
`--force --reason` runs it anyway, and the ledger of the environment it runs in records who, why and what
the earlier environments lacked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from delta_contracts.apply.status import pending_migrations
from delta_contracts.contract.environments import NameMapping
from delta_contracts.plan.migrations import StoredMigration, load_history, table_folder
from delta_contracts.state import ledger as lg

if TYPE_CHECKING:
    from delta_contracts.apply.runner import Runner

PROMOTION_KIND = "promotion"


@dataclass(frozen=True)
class Upstream:
    """An earlier environment: its name, its ledger and how it names tables."""

    name: str
    ledger: lg.Ledger
    names: NameMapping


@dataclass(frozen=True)
class Promotion:
    environment: str
    earlier: Sequence[Upstream]
    migrations: Path

    def missing(self, runner: Runner, contract: str, history: Sequence[StoredMigration]) -> list[str]:
        """Each (migration, phase) this run would start here that an earlier environment has not finished,
        said as `<migration> [<phase>] has not run in <env>`."""
        from delta_contracts.contract.model import semver_tuple

        to = runner.options.to_version
        wanted = {
            stored.migration_id
            for stored in history
            if to is None or semver_tuple(stored.migration.to_version) <= semver_tuple(to)
        }
        phases = {p.value for p in runner.options.phases}
        here = pending_migrations(history, runner.ledger.entries([contract]), contract)
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
            their_history = load_history(table_folder(self.migrations, contract), upstream.names)
            their_entries = upstream.ledger.entries([contract])
            open_there = {
                (p.migration_id, phase)
                for p in pending_migrations(their_history, their_entries, contract)
                for phase in p.phases
            }
            for migration_id, phase in to_run:
                if (migration_id, phase) in open_there:
                    lacking.append(f"{migration_id} [{phase}] has not finished in {upstream.name}")
        return lacking

    def check(self, runner: Runner, contract: str, history: Sequence[StoredMigration]) -> str | None:
        """Why nothing of `contract` may run here (None: it may); forced, the run is recorded and allowed."""
        lacking = self.missing(runner, contract, history)
        if not lacking:
            return None
        order = " → ".join([*(u.name for u in self.earlier), self.environment])
        if runner.options.force_reason is None or runner.options.dry_run:
            return (
                f"not promoted to {self.environment} (promote: {order}): {'; '.join(lacking)}. Apply it "
                "there first, or run it here with --force --reason (recorded)"
            )
        event = lg.contract_event(
            contract,
            PROMOTION_KIND,
            lg.Status.PROMOTION_FORCED,
            reason=runner.options.force_reason,
            run_id=runner.run_id,
            detail=f"applied to {self.environment} out of order ({order}): {'; '.join(lacking)}",
        )
        runner.ledger.append([event])
        return None
