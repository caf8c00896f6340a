"""What a statement's nodes say, for the in-memory engine: a table's name, a column's definition (as the
Delta log would hold it), a literal's text."""

from __future__ import annotations

from sqlglot import exp

from delta_contracts.contract.types import canonical
from delta_contracts.engine.base import EngineError
from delta_contracts.live import LiveColumn
from delta_contracts.sql import expressions as x
from delta_contracts.tableid import TableId


def table_id(node: exp.Table) -> TableId:
    return TableId(part.name for part in node.parts)


def type_text(kind: exp.DataType) -> str:
    return canonical(x.sql(kind))


def text_of(node: exp.Expr | None) -> str | None:
    return None if node is None else str(node.this) if isinstance(node, exp.Literal) else x.sql(node)


def column_of(definition: exp.ColumnDef) -> LiveColumn:
    nullable, comment, default = True, None, None
    for constraint in definition.constraints:
        kind = constraint.kind
        if isinstance(kind, exp.NotNullColumnConstraint):
            nullable = bool(kind.args.get("allow_null"))
        elif isinstance(kind, exp.CommentColumnConstraint):
            comment = text_of(kind.this)
        elif isinstance(kind, exp.DefaultColumnConstraint):
            default = x.sql(kind.this)
        else:
            raise EngineError(
                f"column {definition.name}: the in-memory engine does not model {x.sql(kind)} "
                "(identity and generated columns run on the local and spark engines)"
            )
    declared = definition.args.get("kind")
    if not isinstance(declared, exp.DataType):
        raise EngineError(f"column {definition.name}: no type given")
    return LiveColumn(definition.name, type_text(declared), nullable, comment, default)
