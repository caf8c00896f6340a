"""SQL helpers shared by several stages (pure, sqlglot only): normalization, and table/column extraction."""
