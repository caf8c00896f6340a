"""`delta-contracts jars [TARGET…]`: fetch delta-spark's jars into the cache once, for offline runs after."""

from __future__ import annotations

from typing import Annotated

import typer

from delta_contracts.cli.errors import UsageError

EXTRA_TARGETS = ("derby", "unitycatalog")
TargetsArgument = Annotated[
    list[str] | None,
    typer.Argument(
        help="delta-4 (the default), delta-3, derby (a shared metastore's network client and server), or "
        "unitycatalog (Unity Catalog OSS's server and Spark connector).",
        show_default=False,
    ),
]


def jars_command(targets: TargetsArgument = None) -> None:
    """Fetch delta-spark's jars with Maven into ~/.cache/delta-contracts (DELTA_CONTRACTS_CACHE), where the
    spark engine and the local engine's in-place column drops find them. Exit 0 fetched or cached, 2 they
    cannot be had here."""
    from delta_contracts.engine.jars import JARS_ENV, TARGETS, JarsUnavailableError, fetch, jar_count

    for target in targets or ["delta-4"]:
        if target not in (*TARGETS, *EXTRA_TARGETS):
            raise UsageError(f"unknown target {target}: give {', '.join([*TARGETS, *EXTRA_TARGETS])}")
        try:
            folder, what = fetch(target)
        except JarsUnavailableError as err:
            raise UsageError(
                f"{target}: {err}",
                "without Maven, a delta-spark session resolves the same jars through Spark's own Ivy when it "
                f"starts (network needed then); or set {JARS_ENV} to a folder holding them",
            ) from None
        print(f"{target}: {what} -> {folder} ({jar_count(folder)} jars)")
