"""The tables a statement names, as Spark's own parser reads it: for what sqlglot cannot parse.

Spark parses the text into its unanalysed logical plan (nothing is resolved, run or looked up, so a table
that does not exist is fine) and the relations of that plan are the statement's names: `UnresolvedRelation`
nodes are reads, the targets of INSERT / MERGE / UPDATE / DELETE and the identifiers of CREATE / REPLACE /
DROP are writes. Only a classic session reaches the JVM parser; on Spark Connect there is none (None), and
the conservative name match stays.
"""

from __future__ import annotations

from typing import Any

from delta_contracts.sql.extract import PATH_FORMATS, FallbackParser, Relations

# Plans whose own target is written: the accessor of the target, per node class.
_TARGETS = {
    "MergeIntoTable": "targetTable",
    "InsertIntoStatement": "table",
    "UpdateTable": "table",
    "DeleteFromTable": "table",
    "OverwriteByExpression": "table",  # INSERT ... REPLACE WHERE
    "AppendData": "table",
    "OverwritePartitionsDynamic": "table",
    "AlterViewAs": "child",
    "CloneTableStatement": "target",  # Delta's CREATE TABLE t [SHALLOW] CLONE s
    "RestoreTableStatement": "table",  # Delta's RESTORE TABLE t TO VERSION AS OF n
}
# Wrappers between a target and its relation (`UPDATE t AS x`, `... VERSION AS OF 3`).
_TIME_TRAVEL = frozenset({"RelationTimeTravel", "UnresolvedTimeTravel", "TimeTravel"})
_WRAPPERS = frozenset({"SubqueryAlias"}) | _TIME_TRAVEL
# Names of existing objects a command looks at (DESCRIBE, ALTER, ...): counted as reads, since a wrong read
# keeps a drop waiting and a wrong write could let it through.
_LOOKED_UP = frozenset({"UnresolvedTable", "UnresolvedTableOrView", "UnresolvedView"})


def spark_fallback_parser(spark: Any) -> FallbackParser | None:
    """A parser for `extract(..., fallback_parser=...)` backed by the session's SQL parser, or None when
    the session has no JVM at hand (Spark Connect)."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return None
    parser = jsession.sessionState().sqlParser()

    def relations(sql: str) -> Relations:
        return plan_relations(parser.parsePlan(sql))

    return relations


def engine_fallback_parser(engine: object) -> FallbackParser | None:
    """`spark_fallback_parser` for an engine with a classic Spark session; None for every other engine."""
    spark = getattr(engine, "spark", None)
    return None if spark is None else spark_fallback_parser(spark)


def plan_relations(plan: Any) -> Relations:
    reads: set[str] = set()
    writes: set[str] = set()
    _walk(plan, frozenset(), reads, writes)
    return Relations(tuple(sorted(reads)), tuple(sorted(writes)))


def _walk(node: Any, ctes: frozenset[str], reads: set[str], writes: set[str]) -> None:
    kind = str(node.getClass().getSimpleName())
    if kind == "UnresolvedWith":
        definitions = _seq(node.cteRelations())
        names = [str(d.productElement(0)).casefold() for d in definitions]
        for index, relation in enumerate(d.productElement(1) for d in definitions):
            # Inside a CTE only the earlier ones are visible: `WITH t AS (SELECT * FROM t)` reads the table.
            _walk(relation, ctes | frozenset(names[:index]), reads, writes)
        _walk(node.child(), ctes | frozenset(names), reads, writes)
        return
    if kind == "UnresolvedRelation":
        parts = [str(p) for p in _seq(node.multipartIdentifier())]
        if not (len(parts) == 1 and parts[0].casefold() in ctes):
            reads.add(_name(parts))
        return
    if kind == "UnresolvedIdentifier":
        writes.add(_name([str(p) for p in _seq(node.nameParts())]))
        return
    if kind in _TIME_TRAVEL:  # a leaf: its relation is no child
        _walk(node.relation(), ctes, reads, writes)
        return
    if kind == "UnresolvedTableValuedFunction":
        reads |= _change_feed(node)
    if kind == "CreateViewCommand":  # CREATE TEMP VIEW: a TableIdentifier, not an UnresolvedIdentifier
        writes.add(_name([str(p) for p in _seq(node.name().nameParts())]))
    if kind == "CacheTableAsSelect":
        writes.add(str(node.tempViewName()).casefold())
    if kind in _LOOKED_UP:
        reads.add(_name([str(p) for p in _seq(node.multipartIdentifier())]))
        return
    target = None
    if kind in _TARGETS:
        target = getattr(node, _TARGETS[kind])()
        name = _target_name(target)
        if name is not None:
            writes.add(name)
        else:
            _walk(target, ctes, reads, writes)
    if kind == "InsertIntoStatement":
        _walk(node.query(), ctes, reads, writes)
    for child in _seq(node.children()):
        if target is not None and child.equals(target):
            continue
        _walk(child, ctes, reads, writes)
    for inner in _seq(node.innerChildren()):
        if _is_plan(inner):
            _walk(inner, ctes, reads, writes)
    for subquery in _seq(node.subqueries()):
        _walk(subquery, ctes, reads, writes)


def _target_name(plan: Any) -> str | None:
    """The name of a write's target under its alias or time travel, or None."""
    while plan is not None:
        kind = str(plan.getClass().getSimpleName())
        if kind == "UnresolvedRelation" or kind in _LOOKED_UP:
            return _name([str(p) for p in _seq(plan.multipartIdentifier())])
        if kind == "UnresolvedIdentifier":
            return _name([str(p) for p in _seq(plan.nameParts())])
        if kind not in _WRAPPERS:
            return None
        plan = plan.relation() if kind in _TIME_TRAVEL else plan.child()
    return None


def _change_feed(node: Any) -> set[str]:
    """`table_changes('sales.orders', 2)`: the change feed of the table its first argument names."""
    if ".".join(str(p) for p in _seq(node.name())).casefold() != "table_changes":
        return set()
    arguments = _seq(node.functionArgs())
    if not arguments or str(arguments[0].getClass().getSimpleName()) != "Literal":
        return set()
    value = arguments[0].value()
    return {str(value.toString()).casefold()} if value is not None else set()


def _is_plan(node: Any) -> bool:
    try:
        return bool(node.getClass().getName().startswith("org.apache.spark.sql.catalyst.plans.logical."))
    except Exception:  # an inner child that is not a JVM object
        return False


def _seq(seq: Any) -> list[Any]:
    return [seq.apply(i) for i in range(seq.size())]


def _name(parts: list[str]) -> str:
    if len(parts) == 2 and parts[0].casefold() in PATH_FORMATS and "/" in parts[1]:
        return f"{parts[0].casefold()}.`{parts[1]}`"
    return ".".join(p.casefold() for p in parts)
