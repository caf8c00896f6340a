"""Planning: contract change → typed ops in phases → Spark SQL → migration files."""
