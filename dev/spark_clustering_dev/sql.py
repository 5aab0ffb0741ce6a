"""Spark SQL text."""


def sql_str(value: str) -> str:
    """`value` as a Spark SQL string literal (backslashes and quotes escaped)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
