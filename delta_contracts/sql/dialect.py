r"""The one sqlglot dialect every stage reads and writes SQL in: the project's own.

It is Databricks' dialect, which parses everything Spark SQL does plus the Delta and Unity Catalog extensions
users write (three-part names, `VERSION AS OF`, `delta.\`path\``, pipe syntax), and renders
Spark-compatible SQL — subclassed, so that what the project teaches it (the Delta statements sqlglot has no
node for) lives on the subclass alone: importing the toolkit changes nothing of sqlglot's shared dialects,
and a process that generated SQL before a module defining such a statement was imported (a notebook) still
renders it.
"""

from __future__ import annotations

from typing import ClassVar

from sqlglot import exp
from sqlglot.dialects.databricks import Databricks
from sqlglot.generators.databricks import DatabricksGenerator


class KeywordStatement(exp.Expression):
    """A Delta statement or clause sqlglot has no node for: fixed keywords around one quoted name (`this`).
    Each subclass gives its `template`, `{}` standing for the name as the dialect quotes it; the project's
    dialect generates any subclass, whenever it was defined."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True}
    template: ClassVar[str]


class DeltaContracts(Databricks):
    """Databricks' dialect plus the project's `KeywordStatement` nodes."""

    class Generator(DatabricksGenerator):
        def sql(
            self,
            expression: str | exp.Expr | None,
            key: str | None = None,
            comment: bool = True,
        ) -> str:
            # sqlglot caches a generator class's dispatch table the first time it generates, so a node
            # registered after that (a module imported late) would be unknown to it: matched here instead.
            if key is None and isinstance(expression, KeywordStatement):
                return expression.template.format(super().sql(expression, "this"))
            return str(super().sql(expression, key, comment))


DIALECT = "deltacontracts"
"""The name sqlglot knows the project's dialect by (`DeltaContracts`, registered when this module is
imported, as every user of the name imports it from here)."""
