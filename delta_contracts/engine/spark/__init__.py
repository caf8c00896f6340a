"""The `spark` and `connect` engines: `engine` (SparkEngine), its op table (`ops`), the sessions it runs on
(`session`: a local or command-line session and its settings; `connect`: a Spark Connect server's), what
Spark raises and logs (`errors`), how it reads a table (`describe`) and names in Spark's plans (`sql_names`),
holding producers off a table (`hold`) and the apply ledger as a catalog table (`state_table`). Importing
this package imports nothing heavy; PySpark is imported only when a session is made or used."""
