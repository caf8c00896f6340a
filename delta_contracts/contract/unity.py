"""Where the spark and connect engines find a Unity Catalog server, as contracts.yml says it
(`engine.unity_catalog`, per environment too)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from delta_contracts.contract.model import Frozen


class UnityCatalogSettings(Frozen):
    """A Unity Catalog server whose catalogs the spark and connect engines use (docs/engines.md, "Unity
    Catalog"): each name in `catalogs` is registered as `spark.sql.catalog.<name>`."""

    uri: str | None = Field(
        default=None,
        description="The server, e.g. http://127.0.0.1:8080 (default: DELTA_CONTRACTS_UC_URI).",
        examples=["http://127.0.0.1:8080"],
    )
    token: str | None = Field(
        default=None,
        description="Its access token (default: DELTA_CONTRACTS_UC_TOKEN, else none, as an OSS server "
        "without authorization takes).",
        examples=["dapi0123"],
    )
    server: Literal["oss", "databricks"] = Field(
        default="oss",
        description="`oss` (Unity Catalog OSS 0.6.0: `plan` refuses what its connector cannot run) or "
        "`databricks` (Databricks' own Unity Catalog runs every op).",
        examples=["databricks"],
    )
    catalogs: tuple[str, ...] = Field(
        default=(),
        description="The server's catalogs to register, e.g. [dev, staging, prod].",
        examples=[["dev", "staging", "prod"]],
    )

    @field_validator("catalogs")
    @classmethod
    def _catalogs_are_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"'{name}' is not a catalog name: letters, digits and _")
            if name.lower() == "spark_catalog":
                raise ValueError("spark_catalog is Spark's session catalog, not a Unity Catalog one")
        return value
