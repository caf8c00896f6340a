"""What makes a project's `environments:` unusable, each problem at its `contracts.yml` line: a name that is
no plain word, a `promote` entry that names no environment, two environments sharing one warehouse (and so one
ledger, lease folder and readers log), a mapping that turns a contract id into no table name, and two
environments whose tables would be the same table."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from delta_contracts.contract.environments import (
    MappingError,
    check_environment_names,
    collision_key,
    place_of,
)
from delta_contracts.contract.errors import Problem
from delta_contracts.contract.project import Project
from delta_contracts.contract.yamlsource import SourceMap

if TYPE_CHECKING:
    from delta_contracts.contract.load import LoadedContract

CODE = "DC-ENV"


def _warehouse(project: Project, name: str, root: Path) -> Path:
    return Path(os.path.normpath(root / project.engine_settings(name).warehouse))


def place_kind(place: tuple[str, str]) -> str:
    return "warehouse" if place[0] == "local" else "catalog"


def project_problems(project: Project, source: SourceMap, root: Path) -> list[Problem]:
    """The problems of `environments:` and `promote:` that contracts.yml shows by itself."""
    problems = []
    for name in check_environment_names(project.environments):
        problems.append(
            Problem(
                source.locate(("environments", name), key=True),
                f"environments.{name}",
                f"'{name}' is not an environment name: a letter, then letters, digits, _ or -",
                CODE,
            )
        )
    seen: set[str] = set()
    for index, name in enumerate(project.promote):
        where = source.locate(("promote", index))
        if name not in project.environments:
            known = ", ".join(project.environments) or "none"
            problems.append(
                Problem(where, f"promote[{index}]", f"no environment '{name}' (declared: {known})", CODE)
            )
        elif name in seen:
            problems.append(Problem(where, f"promote[{index}]", f"'{name}' is listed twice", CODE))
        seen.add(name)
    for name, environment in project.environments.items():
        both = [f for f in ("catalog", "schema_prefix") if getattr(environment, f) is not None]
        if environment.names is not None and both:
            problems.append(
                Problem(
                    source.locate(("environments", name, "names")),
                    f"environments.{name}.names",
                    f"names and {' and '.join(both)} together: a names template says the whole name "
                    f"(use {{catalog}} and {{schema}} in it), so give one or the other",
                    CODE,
                )
            )
    warehouses: dict[Path, str] = {}
    for name in project.environments:
        try:
            project.engine_settings(name)  # an environment's engine settings are checked as `engine:`'s
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            problems.append(
                Problem(
                    source.locate(("environments", name, "engine", *first["loc"])),
                    f"environments.{name}.engine.{field}",
                    first["msg"].removeprefix("Value error, "),
                    CODE,
                )
            )
            continue
        folder = _warehouse(project, name, root)
        other = warehouses.setdefault(folder, name)
        if other != name:
            problems.append(
                Problem(
                    source.locate(("environments", name, "engine", "warehouse")),
                    f"environments.{name}.engine.warehouse",
                    f"{name} and {other} share the warehouse {folder}: give each environment its own "
                    "(it holds the environment's ledger, leases and readers log)",
                    CODE,
                )
            )
    return problems


def contract_problems(
    project: Project, source: SourceMap, root: Path, contracts: Sequence[LoadedContract]
) -> list[Problem]:
    """Contract ids an environment's mapping makes invalid, and tables two environments would share."""
    problems: list[Problem] = []
    owners: dict[tuple[str, str, tuple[str, ...]], tuple[str, str]] = {}
    for name, environment in project.environments.items():
        mapping = project.names_in(name)
        settings = project.engine_settings(name)
        place = place_of(settings.name, settings.url, _warehouse(project, name, root))
        field = "names" if environment.names is not None else "schema_prefix"
        if environment.names is None and environment.schema_prefix is None:
            field = "catalog"
        where = source.locate(("environments", name, field))
        for loaded in contracts:
            logical = loaded.contract.table_parts
            try:
                physical = mapping.physical(logical)
            except MappingError as err:
                problems.append(
                    Problem(
                        where,
                        f"environments.{name}.{field}",
                        f"makes the id of {loaded.path.name} invalid: {err}",
                        CODE,
                    )
                )
                continue
            key = collision_key(place, physical)
            other_env, other_id = owners.setdefault(key, (name, str(logical)))
            if (other_env, other_id) != (name, str(logical)):
                where_else = "" if other_env == name else f" of {other_env}, on the same {place_kind(place)}"
                problems.append(
                    Problem(
                        where,
                        f"environments.{name}.{field}",
                        f"{logical} becomes {physical} in {name}, the table {other_id} has{where_else}: "
                        "they would change one table; map them to different names",
                        CODE,
                    )
                )
    return problems
