"""YAML to plain data plus a source map (field path -> location), using PyYAML's node marks.

PyYAML's safe constructor keeps no positions and silently lets a repeated key overwrite the first one; we
compose the node tree ourselves so every value keeps its line and column and a duplicate key is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from delta_contracts.contract.errors import ContractError, Location, Problem, field_path, first_line

Path = tuple[str | int, ...]
# libyaml composes nodes (marks included) ~20x faster than the pure-Python parser; both give the same tree.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Aliases can expand a small file exponentially ("billion laughs"); no contract is anywhere near this.
_MAX_NODES = 200_000


@dataclass
class SourceMap:
    """Where each field of a document came from; keys are paths like ('columns', 2, 'type')."""

    file: str
    values: dict[Path, Location] = field(default_factory=dict)
    keys: dict[Path, Location] = field(default_factory=dict)

    def locate(self, path: Path, *, key: bool = False) -> Location:
        """The location of `path`, or of its nearest located ancestor."""
        probe = tuple(path)
        while True:
            if key and probe in self.keys:
                return self.keys[probe]
            if probe in self.values:
                return self.values[probe]
            if not probe:
                return Location(self.file, 1, 1)
            probe = probe[:-1]


def _mark(file: str, node: yaml.Node) -> Location:
    return Location(file, node.start_mark.line + 1, node.start_mark.column + 1)


class _Builder:
    def __init__(self, file: str, loader: yaml.SafeLoader | yaml.CSafeLoader) -> None:
        self.file = file
        self.loader = loader
        self.source = SourceMap(file)
        self.depth = 0
        self.built = 0
        self.open_nodes: set[int] = set()

    def build(self, node: yaml.Node, path: Path) -> Any:
        self.source.values[path] = _mark(self.file, node)
        if id(node) in self.open_nodes:
            raise ContractError([self._problem(node, path, "an alias refers to itself")])
        self.depth += 1
        self.built += 1
        if self.depth > 100:
            raise ContractError([self._problem(node, path, "document is nested too deeply")])
        if self.built > _MAX_NODES:
            raise ContractError([self._problem(node, path, f"document has more than {_MAX_NODES} values")])
        self.open_nodes.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path)
            if isinstance(node, yaml.SequenceNode):
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            return self._scalar(node, path)
        finally:
            self.depth -= 1
            self.open_nodes.discard(id(node))

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        self.loader.flatten_mapping(node)  # resolves `<<: *anchor` merge keys
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise ContractError([self._problem(key_node, path, "a mapping key must be a plain scalar")])
            key = str(self._scalar(key_node, path))
            if key in out:
                raise ContractError(
                    [self._problem(key_node, (*path, key), f"duplicate key '{key}' (the first is ignored)")]
                )
            self.source.keys[(*path, key)] = _mark(self.file, key_node)
            out[key] = self.build(value_node, (*path, key))
        return out

    def _scalar(self, node: yaml.Node, path: Path) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
            reason = getattr(exc, "problem", None) or first_line(exc)
            raise ContractError([self._problem(node, path, f"unreadable value: {reason}")]) from None

    def _problem(self, node: yaml.Node, path: Path, message: str) -> Problem:
        return Problem(_mark(self.file, node), field_path(path), message, "DC-YAML")


def read_yaml(text: str, file: str) -> tuple[Any, SourceMap]:
    """Parse one YAML document into plain data and its source map; raise ContractError when unreadable."""
    try:
        loader = _Loader(text)
    except yaml.reader.ReaderError as exc:
        raise ContractError([_reader_problem(text, file, exc)]) from None
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            loc = Location(file, mark.line + 1, mark.column + 1) if mark else Location(file, 1, 1)
            problem = exc.problem or exc.context or "invalid YAML"
            raise ContractError([Problem(loc, "", f"YAML syntax error: {problem}", "DC-YAML")]) from None
        except yaml.reader.ReaderError as exc:
            raise ContractError([_reader_problem(text, file, exc)]) from None
        except yaml.YAMLError as exc:
            message = first_line(exc)
            raise ContractError(
                [Problem(Location(file, 1, 1), "", f"YAML error: {message}", "DC-YAML")]
            ) from None
        if node is None:
            raise ContractError([Problem(Location(file, 1, 1), "", "the file is empty", "DC-YAML")])
        builder = _Builder(file, loader)
        try:
            data = builder.build(node, ())
        except RecursionError:
            raise ContractError(
                [Problem(_mark(file, node), "", "document is nested too deeply", "DC-YAML")]
            ) from None
        return data, builder.source
    finally:
        loader.dispose()


def _reader_problem(text: str, file: str, exc: yaml.reader.ReaderError) -> Problem:
    before = text[: exc.position]
    line = before.count("\n") + 1
    column = exc.position - (before.rfind("\n") + 1) + 1
    return Problem(
        Location(file, line, column),
        "",
        f"unreadable character U+{exc.character:04X}: YAML allows no control characters",
        "DC-YAML",
    )
