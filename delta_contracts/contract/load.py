"""Read contract files: YAML → defaults from `contracts.yml` → pydantic model, every error located."""

from __future__ import annotations

import copy
import difflib
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from delta_contracts.contract.errors import ContractError, Location, Problem, field_path
from delta_contracts.contract.model import Contract
from delta_contracts.contract.project import PROJECT_FILE, Project, find_project_file
from delta_contracts.contract.yamlsource import Path as FieldPath
from delta_contracts.contract.yamlsource import SourceMap, read_yaml

CONTRACT_SUFFIXES = (".yaml", ".yml")
DEFAULT_MIGRATIONS = "migrations"
# A field a contract can have: anything else that YAML read as a key is a fragment of something else.
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$-]*")


@dataclass(frozen=True)
class LoadedProject:
    project: Project
    root: Path
    data: dict[str, Any]
    source: SourceMap

    @classmethod
    def empty(cls, root: Path) -> LoadedProject:
        return cls(Project(), root, {}, SourceMap(str(root / PROJECT_FILE)))

    @property
    def migrations_root(self) -> Path:
        """`migrations:` of contracts.yml, relative to it; unset, `migrations/` where the command runs: the
        same folder as with no contracts.yml at all, so adding the file never moves an existing history."""
        if "migrations" in self.project.model_fields_set:
            return Path(os.path.normpath(self.root / self.project.migrations))
        return Path.cwd() / DEFAULT_MIGRATIONS

    def other_migrations_roots(self) -> list[Path]:
        """Folders a history may have been written to before (a default that once depended on the file)."""
        chosen = self.migrations_root.resolve()
        candidates = (self.root / DEFAULT_MIGRATIONS, Path.cwd() / DEFAULT_MIGRATIONS)
        return [c for c in dict.fromkeys(p.resolve() for p in candidates) if c != chosen]


@dataclass(frozen=True)
class LoadedContract:
    contract: Contract
    path: Path
    source: SourceMap

    def locate(self, *parts: str | int, key: bool = False) -> Location:
        return self.source.locate(tuple(parts), key=key)


def display_path(path: Path) -> str:
    """Paths in messages are relative to the working directory when they can be."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _read_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        problem = Problem(Location(display_path(path), 1, 1), "", f"cannot read: {reason}", "DC-IO")
        raise ContractError([problem]) from None


def load_project(path: Path) -> LoadedProject:
    return parse_project(_read_file(path), path)


def parse_project(text: str, path: Path) -> LoadedProject:
    shown = display_path(path)
    data, source = read_yaml(text, shown)
    if not isinstance(data, dict):
        raise ContractError([Problem(source.locate(()), "", "contracts.yml must be a mapping", "DC-SCHEMA")])
    try:
        project = Project.model_validate(data)
    except ValidationError as exc:
        raise ContractError(_problems_from_validation(exc, data, source, Project)) from None
    bad_rules = []
    for i, rule in enumerate(project.column_rules):
        try:
            re.compile(rule.match)
        except re.error as err:
            loc = source.locate(("column_rules", i, "match"))
            bad_rules.append(Problem(loc, f"column_rules[{i}].match", f"invalid regex: {err}", "DC-SCHEMA"))
    if bad_rules:
        raise ContractError(bad_rules)
    if project.environments or project.promote:
        from delta_contracts.contract.environment_checks import project_problems

        environment_problems = project_problems(project, source, path.parent)
        if environment_problems:
            raise ContractError(environment_problems)
    return LoadedProject(project, path.parent, data, source)


def project_for(path: Path) -> LoadedProject:
    """The project governing `path` (its nearest contracts.yml), or an empty one rooted at the working
    directory: without a contracts.yml, `migrations/` and `warehouse/` are where the command runs (as
    `--help` says), never inside the contracts folder."""
    found = find_project_file(path)
    if found is None:
        return LoadedProject.empty(Path.cwd())
    return _load_project_cached(found.resolve())


@cache
def _load_project_cached(path: Path) -> LoadedProject:
    return load_project(path)


def load_contract(path: Path, project: LoadedProject | None = None) -> LoadedContract:
    """Load one contract file; raise ContractError with located problems when it is unusable."""
    return parse_contract(_read_file(path), path, project if project is not None else project_for(path))


def parse_contract(text: str, path: Path, project: LoadedProject | None = None) -> LoadedContract:
    shown = display_path(path)
    data, source = read_yaml(text, shown)
    if not isinstance(data, dict):
        raise ContractError(
            [Problem(source.locate(()), "", "a contract must be a YAML mapping (key: value)", "DC-SCHEMA")]
        )
    if project is not None:
        data = apply_defaults(data, source, project)
    try:
        contract = Contract.model_validate(data)
    except ValidationError as exc:
        partial = _without_invalid_fields(data, exc)
        found = None if partial is None else LoadedContract(partial, path, source)
        raise ContractError(_problems_from_validation(exc, data, source, Contract), found) from None
    return LoadedContract(contract, path, source)


def _without_invalid_fields(data: dict[str, Any], exc: ValidationError, rounds: int = 3) -> Contract | None:
    """The contract with every optional field that failed validation left out, or None when a required one
    failed (or an item of a list: leaving it out would move the others and their locations)."""
    trimmed = copy.deepcopy(data)
    for _ in range(rounds):
        for error in exc.errors():
            path = _data_path(trimmed, tuple(error["loc"]))
            if not path or not isinstance(path[-1], str):
                return None
            parent: Any = trimmed
            for part in path[:-1]:
                parent = parent[part]
            if not isinstance(parent, dict) or path[-1] not in parent:
                return None
            del parent[path[-1]]
        try:
            return Contract.model_validate(trimmed)
        except ValidationError as again:
            exc = again
    return None


def apply_defaults(data: dict[str, Any], source: SourceMap, project: LoadedProject) -> dict[str, Any]:
    """Fill what the contract leaves unset from `contracts.yml`; locations of filled values point there."""
    defaults = project.data.get("defaults") or {}
    merged = copy.deepcopy(data)
    if isinstance(defaults, dict):
        for key, value in defaults.items():
            if key in merged and not (isinstance(merged[key], dict) and isinstance(value, dict)):
                continue
            merged[key] = _deep_merge(copy.deepcopy(value), merged.get(key))
            _adopt(source, project.source, ("defaults", key), (key,))
    columns = merged.get("columns")
    if isinstance(columns, list):
        for i, column in enumerate(columns):
            if not isinstance(column, dict) or not isinstance(column.get("name"), str):
                continue
            for r, rule in enumerate(project.project.column_rules):
                if not re.search(rule.match, column["name"]):
                    continue
                for name, value in rule.model_dump(exclude={"match"}, exclude_none=True).items():
                    if name not in column:
                        column[name] = value
                        _adopt(source, project.source, ("column_rules", r, name), ("columns", i, name))
    return merged


def _deep_merge(base: Any, override: Any) -> Any:
    if override is None:
        return base
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for key, value in override.items():
            out[key] = _deep_merge(base.get(key), value) if key in base else value
        return out
    return override


def _adopt(target: SourceMap, origin: SourceMap, from_prefix: FieldPath, to_prefix: FieldPath) -> None:
    n = len(from_prefix)
    for path, loc in origin.values.items():
        if path[:n] == from_prefix:
            target.values.setdefault(to_prefix + path[n:], loc)
    for path, loc in origin.keys.items():
        if path[:n] == from_prefix:
            target.keys.setdefault(to_prefix + path[n:], loc)


def _data_path(data: Any, loc: tuple[int | str, ...]) -> FieldPath:
    """The part of a pydantic error location that exists in the data (drops union-member tags)."""
    out: list[str | int] = []
    here = data
    for part in loc:
        if isinstance(here, dict) and part in here:  # noqa: SIM114 (mypy needs the list branch apart)
            here = here[part]
        elif isinstance(here, list) and isinstance(part, int) and 0 <= part < len(here):
            here = here[part]
        else:
            out.append(part)
            break
        out.append(part)
    return tuple(out)


def _field_names(model: type[BaseModel]) -> set[str]:
    names: set[str] = set()
    stack: list[Any] = [model]
    seen: set[Any] = set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for name, info in current.model_fields.items():
            names.add(info.alias or name)
            for arg in _model_args(info.annotation):
                stack.append(arg)
    return names


def _model_args(annotation: Any) -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        found.append(annotation)
    for arg in getattr(annotation, "__args__", ()) or ():
        found.extend(_model_args(arg))
    return found


def _problems_from_validation(
    exc: ValidationError, data: Any, source: SourceMap, model: type[BaseModel]
) -> list[Problem]:
    vocabulary = sorted(_field_names(model))
    raw = exc.errors()
    # A tuple whose items failed is also reported as too short; the item errors say more.
    errors = [
        e
        for e in raw
        if not (
            e["type"] == "too_short"
            and any(len(o["loc"]) > len(e["loc"]) and o["loc"][: len(e["loc"])] == e["loc"] for o in raw)
        )
    ]
    unknown_keys = {
        tuple(e["loc"][:-1]): str(e["loc"][-1]) for e in errors if e["type"] == "extra_forbidden" and e["loc"]
    }
    problems: list[Problem] = []
    seen: set[FieldPath] = set()
    for error in errors:
        loc = tuple(error["loc"])
        kind = error["type"]
        if kind == "missing" and loc:
            typo = unknown_keys.get(loc[:-1])
            # `colums:` yields "unknown colums" and "missing columns": one mistake, reported once.
            if typo is not None and difflib.get_close_matches(typo, [str(loc[-1])], n=1, cutoff=0.6):
                continue
        path = _data_path(data, loc)
        if path in seen:
            continue
        seen.add(path)
        name = field_path(loc)
        if kind == "extra_forbidden":
            key = str(loc[-1])
            hint = difflib.get_close_matches(key, vocabulary, n=1, cutoff=0.6)
            message = f"unknown field '{key}'" + (f" (did you mean '{hint[0]}'?)" if hint else "")
            if _FIELD_NAME.fullmatch(key) is None:
                # `{name: m, generated: round(a, 2) / 60}`: YAML ends a flow mapping's value at the comma.
                message += (
                    " — a comma inside a flow mapping `{…}` ends the value before it: "
                    'quote an expression that holds a comma (generated: "round(a, 2) / 60")'
                )
            problems.append(Problem(source.locate(path, key=True), name, message, "DC-SCHEMA"))
            continue
        if kind == "missing":
            message = f"missing required field '{loc[-1]}'"
            problems.append(Problem(source.locate(path[:-1]), name, message, "DC-SCHEMA"))
            continue
        message = error["msg"]
        value = error.get("input")
        if isinstance(value, str | int | float | bool) and not message.startswith("Value error"):
            message = f"{message}, got {value!r}"
        message = message.removeprefix("Value error, ")
        problems.append(Problem(source.locate(path), name, message, "DC-SCHEMA"))
    return problems


def contract_files(paths: list[Path]) -> list[Path]:
    """Expand folders into their contract files (sorted); `contracts.yml` itself is not a contract."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.suffix in CONTRACT_SUFFIXES and p.name != PROJECT_FILE and p.is_file()
            )
        else:
            found.append(path)
    return found
