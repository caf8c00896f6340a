"""`diff --readers`: the readers of each object a change touches, added to diff's output."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from delta_contracts.cli.common import OutputFormat

if TYPE_CHECKING:
    from delta_contracts.contract.load import LoadedContract, LoadedProject
    from delta_contracts.diff.report import ContractDiff
    from delta_contracts.engine.select import EngineChoice
    from delta_contracts.telemetry.impact import ContractChange, ObjectReaders, Telemetry


def readers_of(
    pairs: Sequence[tuple[LoadedContract | None, LoadedContract | None]],
    results: Sequence[ContractDiff],
    project: LoadedProject,
    sources: Sequence[str],
    engine: str | None,
    url: str | None,
    warehouse: Path | None,
    env: str | None = None,
) -> tuple[list[ObjectReaders], Telemetry]:
    """The readers of what the changes touch; in an environment (`env`, or DELTA_CONTRACTS_ENV) from its
    readers log or engine, each object named as that environment names its table."""
    from delta_contracts.cli.common import choose_engine, chosen_environment
    from delta_contracts.contract.environments import contract_in_environment
    from delta_contracts.contract.model import duration
    from delta_contracts.telemetry.impact import ContractChange, log_telemetry, readers_of_changes

    environment = chosen_environment(project, env)
    names = project.project.names_in(environment)
    changes = [
        ContractChange(
            contract_in_environment(old.contract, names) if old else None,
            contract_in_environment(new.contract, names) if new else None,
            result.changes,
        )
        for (old, new), result in zip(pairs, results, strict=True)
    ]
    choice = choose_engine(project, engine, url, warehouse, environment=environment)
    now = datetime.now(UTC)
    if sources:
        telemetry = _from_sources(changes, sources, choice, now)
    else:
        telemetry = log_telemetry(choice.warehouse / "_delta_contracts")
    freshness = duration(project.project.telemetry.freshness)
    return readers_of_changes(changes, telemetry, now, freshness), telemetry


def _from_sources(
    changes: list[ContractChange], sources: Sequence[str], choice: EngineChoice, now: datetime
) -> Telemetry:
    from delta_contracts.cli.common import spark_of, start_engine
    from delta_contracts.telemetry.impact import source_telemetry, watched_for
    from delta_contracts.telemetry.sources import parse_source, read_source

    specs = [parse_source(s) for s in sources]
    print(f"engine: {choice.name} ({choice.url or choice.warehouse})", file=sys.stderr)
    with start_engine(choice) as live:
        spark = spark_of(live)
        frames = [(spec.name, read_source(spark, spec)) for spec in specs]
        return source_telemetry(spark, frames, watched_for(changes), now)


def with_readers(text: str, fmt: OutputFormat, items: list[ObjectReaders], telemetry: Telemetry) -> str:
    """diff's output with the readers added: a section of the text and Markdown, a key of the JSON."""
    from delta_contracts.telemetry.impact_report import render_markdown, render_text, to_json

    if fmt is OutputFormat.JSON:
        payload = json.loads(text)
        payload["readers"] = to_json(items, telemetry)
        return json.dumps(payload, indent=2)
    if fmt is OutputFormat.MARKDOWN:
        return f"{text}\n\n{render_markdown(items, telemetry)}"
    return f"{text}\n{render_text(items, telemetry)}"
