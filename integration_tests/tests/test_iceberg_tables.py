"""`clustered_table` on Iceberg tables: the cases of harness/format_table_cases.py, on a session whose
`spark_catalog` serves iceberg (conftest starts it for this module's TABLE_FORMAT)."""
from harness.format_table_cases import FormatTableCases

TABLE_FORMAT = "iceberg"


class TestIcebergTables(FormatTableCases):
    """The cases of every format."""
