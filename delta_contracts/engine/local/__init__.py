"""The embedded `local` engine: `engine` (LocalEngine), its op table (`ops`) and the conditions its routes are
decided by (`routes`), the paths an op takes besides Sail (`delta_rs`, `delta_spark`), and the rewrite of a
table no path can change in place (`rewrite`). Importing this package imports nothing heavy."""
