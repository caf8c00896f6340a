r"""The one sqlglot dialect every stage reads and writes SQL in.

Databricks' dialect parses everything Spark SQL does plus the Delta and Unity Catalog extensions users write
(three-part names, `VERSION AS OF`, `delta.\`path\``, pipe syntax), and renders Spark-compatible SQL.
"""

DIALECT = "databricks"
