"""The in-memory engine (`engine.MemoryEngine`): Delta's metadata as Python values and the rows in an
in-process DuckDB database, for the runner's, gates' and schedule's own tests. Not a user's engine: the CLI
does not offer it. DuckDB is a test dependency (`pip install delta-contracts[dev]`)."""
