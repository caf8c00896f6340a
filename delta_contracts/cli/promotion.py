"""`apply --env` under `promote:`: the ledgers of the earlier environments, each read where it is kept — the
Delta table in its warehouse (no engine started), or the catalog table its `ledger:` names, read through that
environment's own engine (its Spark session or Connect server)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from delta_contracts.cli.common import ContractSet
from delta_contracts.cli.errors import EngineStartError

if TYPE_CHECKING:
    from delta_contracts.apply.promotion import Promotion
    from delta_contracts.state.record import Records


@contextmanager
def promotion_of(contracts: ContractSet, migrations: Path) -> Iterator[Promotion | None]:
    """The earlier environments of `promote:` whose ledgers a migration must have finished in before it runs
    in the chosen one; None when the chosen environment is first or not in the order. The engines opened to
    read catalog ledgers stay open until the run ends."""
    from delta_contracts.apply.promotion import Promotion, Upstream

    project = contracts.project.project
    here = contracts.environment
    if here is None or here not in project.promote:
        yield None
        return
    with ExitStack() as engines:
        earlier = [
            Upstream(name, _records_of(contracts, name, migrations, engines))
            for name in project.promote[: project.promote.index(here)]
        ]
        yield Promotion(here, earlier)


def _records_of(contracts: ContractSet, name: str, migrations: Path, engines: ExitStack) -> Records:
    """The records of environment `name`: its ledger, read now, and its names for tables."""
    from delta_contracts.cli.common import choose_engine
    from delta_contracts.contract.errors import first_line
    from delta_contracts.engine.select import open_engine
    from delta_contracts.state.record import Records

    names = contracts.project.project.names_in(name)
    choice = choose_engine(contracts.project, None, None, None, (), name)
    if choice.ledger is None:
        return Records.open(migrations, choice.warehouse / "_delta_contracts", names)
    print(
        f"promote: reading the ledger of {name} ({choice.ledger}) through its {choice.name} engine",
        file=sys.stderr,
    )
    try:
        live = engines.enter_context(open_engine(choice))
        records = Records.open(migrations, live, names)  # readable now, or said now (not halfway through)
    except Exception as err:  # the engine could not start (StateTableError: the table is unreadable)
        raise EngineStartError(
            f"promote: cannot read the ledger of {name}, the catalog table {choice.ledger}, through "
            f"{name}'s {choice.name} engine ({choice.url or choice.warehouse}): {first_line(err)}. Run "
            f"`apply --env {contracts.environment}` where {name}'s engine can be reached (its url, "
            f"credentials and catalog), or keep {name}'s ledger in its warehouse (no `ledger:`)"
        ) from None
    return records
