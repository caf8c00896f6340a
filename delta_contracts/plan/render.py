"""Ops → Spark SQL (Delta / Databricks) through sqlglot expression trees: one statement per op."""

from __future__ import annotations

from functools import singledispatch

from sqlglot import exp

from delta_contracts.plan.catch_up import CatchUpRows, CatchUpStrategy, merge_statement
from delta_contracts.plan.fence import fence_statement
from delta_contracts.plan.ops import (
    AddCheck,
    AddColumn,
    Backfill,
    CloseColumn,
    ColumnSpec,
    CopyRows,
    CreateTable,
    CreateView,
    DropCheck,
    DropColumnDefault,
    DropColumns,
    DropFeature,
    DropNotNull,
    DropTable,
    Op,
    RenameTable,
    SetClustering,
    SetColumnComment,
    SetColumnDefault,
    SetNotNull,
    SetProperties,
    SetTableComment,
    SyncIdentity,
    WidenType,
)
from delta_contracts.sql import expressions as x


def render(op: Op) -> str:
    """The one Spark SQL statement that performs `op`."""
    statement = build(op)
    # sqlglot flags `SET NOT NULL` (an ALTER COLUMN that disallows NULL) as unsupported while generating it
    # correctly.
    loose = any(action.args.get("allow_null") is False for action in statement.find_all(exp.AlterColumn))
    return x.sql(statement, strict=not loose)


def setting_statement(key: str, value: str) -> str:
    """`SET key = value`, as a `.sql` file sets a session setting before a statement that needs it."""
    item = exp.SetItem(this=exp.EQ(this=exp.Var(this=key), expression=exp.Var(this=value)))
    return x.sql(exp.Set(expressions=[item]))


def _alter(op: Op, *actions: exp.Expr) -> exp.Alter:
    return exp.Alter(this=x.table(op.table), kind="TABLE", actions=list(actions))


def _properties(pairs: tuple[tuple[str, str], ...]) -> exp.Properties:
    return exp.Properties(
        expressions=[exp.Property(this=exp.Literal.string(k), value=exp.Literal.string(v)) for k, v in pairs]
    )


def column_def(spec: ColumnSpec, *, with_constraints: bool) -> exp.ColumnDef:
    constraints: list[exp.ColumnConstraint] = []
    if with_constraints and not spec.nullable:
        constraints.append(exp.ColumnConstraint(kind=exp.NotNullColumnConstraint()))
    if with_constraints and spec.default is not None:
        constraints.append(exp.ColumnConstraint(kind=exp.DefaultColumnConstraint(this=x.parse(spec.default))))
    if with_constraints and spec.identity is not None:
        mode, start, step = spec.identity
        identity = exp.GeneratedAsIdentityColumnConstraint(
            this=mode == "always", start=exp.Literal.number(start), increment=exp.Literal.number(step)
        )
        constraints.append(exp.ColumnConstraint(kind=identity))
    if with_constraints and spec.generated is not None:
        generated = exp.GeneratedAsIdentityColumnConstraint(this=True, expression=x.parse(spec.generated))
        constraints.append(exp.ColumnConstraint(kind=generated))
    if spec.comment is not None:
        constraints.append(
            exp.ColumnConstraint(kind=exp.CommentColumnConstraint(this=exp.Literal.string(spec.comment)))
        )
    return exp.ColumnDef(this=x.ident(spec.name), kind=x.data_type(spec.type), constraints=constraints)


@singledispatch
def build(op: Op) -> exp.Expr:
    raise TypeError(f"no SQL rendering for {type(op).__name__}")


@build.register
def _(op: CreateTable) -> exp.Expr:
    props: list[exp.Expr] = [exp.FileFormatProperty(this=exp.Var(this="DELTA"))]
    if op.partitioned_by:
        props.append(
            exp.PartitionedByProperty(this=exp.Schema(expressions=[x.ident(c) for c in op.partitioned_by]))
        )
    if op.clustered_by:
        props.append(exp.ClusterProperty(expressions=[x.column(c) for c in op.clustered_by]))
    if op.comment is not None:
        props.append(exp.SchemaCommentProperty(this=exp.Literal.string(op.comment)))
    if op.properties:
        props.extend(_properties(op.properties).expressions)
    schema = exp.Schema(
        this=x.table(op.table), expressions=[column_def(c, with_constraints=True) for c in op.columns]
    )
    return exp.Create(this=schema, kind="TABLE", exists=True, properties=exp.Properties(expressions=props))


@build.register
def _(op: AddColumn) -> exp.Expr:
    spec = ColumnSpec(op.column.name, op.column.type, True, op.column.comment, None)
    definition = column_def(spec, with_constraints=False)
    if op.first:
        definition.set("position", exp.ColumnPosition(position="FIRST"))
    elif op.after:
        definition.set("position", exp.ColumnPosition(this=x.column(op.after), position="AFTER"))
    return _alter(op, exp.Schema(expressions=[definition]))


@build.register
def _(op: SetColumnDefault) -> exp.Expr:
    return _alter(op, exp.AlterColumn(this=x.ident(op.column), default=x.parse(op.default)))


@build.register
def _(op: DropColumnDefault) -> exp.Expr:
    return _alter(op, exp.AlterColumn(this=x.ident(op.column), drop=True))


@build.register
def _(op: SetColumnComment) -> exp.Expr:
    return _alter(op, exp.AlterColumn(this=x.ident(op.column), comment=exp.Literal.string(op.comment)))


@build.register
def _(op: SetTableComment) -> exp.Expr:
    return exp.Comment(this=x.table(op.table), kind="TABLE", expression=exp.Literal.string(op.comment))


@build.register
def _(op: WidenType) -> exp.Expr:
    return _alter(op, exp.AlterColumn(this=x.ident(op.column), dtype=x.data_type(op.to_type)))


@build.register
def _(op: SetProperties) -> exp.Expr:
    return _alter(op, exp.AlterSet(expressions=[_properties(op.properties)]))


@build.register
def _(op: DropFeature) -> exp.Expr:
    # sqlglot has no node of its own for Delta's DROP FEATURE; its DROP action names the kind (as for DROP
    # CONSTRAINT) and quotes the feature name, an identifier in Delta's grammar (`featureNameValue`).
    return _alter(op, exp.Drop(tables=[exp.Table(this=x.ident(op.feature))], kind="FEATURE"))


@build.register
def _(op: SyncIdentity) -> exp.Expr:
    return _alter(op, x.SyncIdentity(this=x.ident(op.column)))


@build.register
def _(op: SetClustering) -> exp.Expr:
    return _alter(op, exp.ClusterProperty(expressions=[x.column(c) for c in op.columns]))


@build.register
def _(op: AddCheck) -> exp.Expr:
    check = exp.CheckColumnConstraint(this=x.parse(op.expression), enforced=False)
    return _alter(
        op, exp.AddConstraint(expressions=[exp.Constraint(this=x.ident(op.name), expressions=[check])])
    )


@build.register
def _(op: CloseColumn) -> exp.Expr:
    return build(AddCheck(table=op.table, phase=op.phase, name=op.name, expression=op.expression))


@build.register
def _(op: DropCheck) -> exp.Expr:
    return _alter(op, exp.Drop(tables=[exp.Table(this=x.ident(op.name))], kind="CONSTRAINT", exists=True))


@build.register
def _(op: SetNotNull) -> exp.Expr:
    return _alter(op, exp.AlterColumn(this=x.ident(op.column), allow_null=False))


@build.register
def _(op: DropNotNull) -> exp.Expr:
    return _alter(op, exp.AlterColumn(this=x.ident(op.column), drop=True, allow_null=True))


@build.register
def _(op: Backfill) -> exp.Expr:
    return exp.Update(
        this=x.table(op.table),
        expressions=[exp.EQ(this=x.column(op.column), expression=x.parse(op.expression))],
        where=exp.Where(this=exp.Is(this=x.column(op.column), expression=exp.Null())),
    )


def copy_select(op: CopyRows) -> exp.Select:
    return exp.Select(
        expressions=[exp.Alias(this=x.parse(expr), alias=x.ident(name)) for name, expr in op.mapping]
    ).from_(x.table(op.source))


@build.register
def _(op: CopyRows) -> exp.Expr:
    target = exp.Schema(this=x.table(op.table), expressions=[x.ident(name) for name, _ in op.mapping])
    return exp.Insert(this=target, expression=copy_select(op), overwrite=True)


@build.register
def _(op: CatchUpRows) -> exp.Expr:
    return fence_statement(op) if op.strategy is CatchUpStrategy.INSERT_MISSING else merge_statement(op)


@build.register
def _(op: RenameTable) -> exp.Expr:
    return _alter(op, exp.AlterRename(this=x.table(op.new_name)))


def view_query_sql(op: CreateView) -> str:
    return x.view_query_text(op.source, op.columns)


@build.register
def _(op: CreateView) -> exp.Expr:
    query = x.view_query(op.source, op.columns)
    if op.alter_existing:
        return exp.Alter(this=x.table(op.table), kind="VIEW", actions=[query])
    return exp.Create(this=x.table(op.table), kind="VIEW", replace=True, expression=query)


@build.register
def _(op: DropColumns) -> exp.Expr:
    columns = exp.Schema(expressions=[x.ident(c) for c in op.columns])
    return _alter(op, exp.Drop(tables=[columns], kind="COLUMNS"))


@build.register
def _(op: DropTable) -> exp.Expr:
    return exp.Drop(tables=[x.table(op.table)], kind="TABLE", exists=True)
