"""What an engine can do with an op, as data: how the op runs, or why it is refused, in one sentence.

An op's capability is its usual route, and the cases that send it another way, checked in order. A case's
condition is a named function of the op and of the table as its Delta log states it
(`local.routes.TableFacts`). Each engine's op module (`local.ops`, `spark.ops`) gives every op class its
capability and says the sentences, once; `EngineCapabilities` is the same by kind, which engines read to
refuse a migration before anything runs (`unsupported_reason`, `check_supported`) and, for the local engine,
to pick the tool each op runs with. The facts measured behind the local engine's sentences are in
`local.ops`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from delta_contracts.engine.local.routes import TableFacts
from delta_contracts.plan.ops import Op


class How(StrEnum):
    """The tool an op runs with; the values are the `path` an apply reports."""

    SQL = "sql"  # one statement: Spark's SQL, or Sail's on the local engine
    DELTA_RS = "delta-rs"  # a metadata commit through delta-rs (`local.ops`)
    DELTA_SPARK = "delta-spark"  # the local engine's delta-spark session, on the table's path
    CATALOG = "catalog"  # directory moves and deletes under the local warehouse
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class Route:
    how: How
    why: str = ""  # one sentence: why it is refused, or why it cannot stay on SQL / delta-rs ("{}": detail)


# Of an op and its table's facts; attached to the entries of the op classes it reads (so typed for those).
Condition = Callable[[Any, TableFacts], bool]
Detail = Callable[[Any, TableFacts], str]


@dataclass(frozen=True, slots=True)
class Case:
    """When `when` holds of the op and its table, the op takes `route` (its `{}` filled by `detail`)."""

    when: Condition
    route: Route
    detail: Detail | None = None

    def applied(self, op: Op, facts: TableFacts) -> Route:
        if self.detail is None:
            return self.route
        return Route(self.route.how, self.route.why.format(self.detail(op, facts)))


@dataclass(frozen=True, slots=True)
class Capability:
    usual: Route
    unless: tuple[Case, ...] = ()  # checked in order: the first that holds decides

    def route(self, op: Op, facts: TableFacts) -> Route:
        for case in self.unless:
            if case.when(op, facts):
                return case.applied(op, facts)
        return self.usual

    def hows(self) -> frozenset[How]:
        """Every tool this kind of op may run with (refused included), whatever the op and the table."""
        return frozenset({self.usual.how, *(case.route.how for case in self.unless)})


@dataclass(frozen=True, slots=True)
class EngineCapabilities:
    engine: str
    kinds: Mapping[str, Capability]
    # Kinds not listed: none, when every kind must be listed; else what the engine does with any op.
    otherwise: Capability | None = None

    def capability(self, kind: str) -> Capability | None:
        return self.kinds.get(kind, self.otherwise)

    def route(self, op: Op, facts: TableFacts | None = None) -> Route:
        """How `op` runs on this engine. `facts`: the table as its Delta log states it, needed where the op's
        entry has cases (an engine whose table has none, as Spark's, passes none)."""
        capability = self.capability(op.kind)
        if capability is None:
            return Route(How.REFUSED, f"the {self.engine} engine has no way to run a {op.kind} op")
        if facts is None:
            if capability.unless:
                raise TypeError(f"{self.engine} engine: a {op.kind} op is routed on its table's facts")
            facts = TableFacts()
        return capability.route(op, facts)

    def refusal(self, op: Op, facts: TableFacts | None = None) -> str | None:
        route = self.route(op, facts)
        return route.why if route.how is How.REFUSED else None


SQL = Route(How.SQL)
CATALOG = Route(How.CATALOG)


def refused(why: str) -> Route:
    return Route(How.REFUSED, why)


def by_delta_spark(why: str) -> Route:
    return Route(How.DELTA_SPARK, why)
