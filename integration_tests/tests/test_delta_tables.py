"""`clustered_table` on Delta Lake tables: the cases of harness/format_table_cases.py, on a session whose
`spark_catalog` serves delta (conftest starts it for this module's TABLE_FORMAT)."""
from harness.format_table_cases import *  # noqa: F401,F403  (the tests and their fixtures)

TABLE_FORMAT = "delta"
