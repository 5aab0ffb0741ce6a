"""The one switch on the kind of table (macros/tables/_table_kind.sql), checked on the macros' text:
every kind implements the whole interface, and no macro outside macros/tables/ branches on Delta or
Iceberg. Pure file reading: no Spark session."""
from __future__ import annotations

import re

from spark_clustering_dev.paths import REPO

TABLES = REPO / "macros" / "tables"
# the steps every kind implements (the interface named in _table_kind.sql's header)
INTERFACE = {"name", "build_begin", "build_write", "version", "file_column", "file_place", "staging_dir", "stage",
             "metadata_file_stats", "after_rewrite", "read_whole_bytes", "rewrite_metadata_bytes"}
# what the shared format steps (_format_table.sql) ask of each format's kind besides the interface
FORMAT_STEPS = {"version_known_before_commit", "replace_version", "exact_stats_properties", "refuse_layout",
                "refuse_unbounded_columns", "restore_sql"}


def _kind_keys(file: str, macro: str) -> set[str]:
    """The keys of the dict a kind's macro returns (or updates its base kind with)."""
    text = (TABLES / file).read_text()
    body = text[text.index("{% macro " + macro + "()"):]
    body = body[:body.index("{% endmacro %}")]
    return set(re.findall(r"'(\w+)':", body))


def _code(text: str) -> str:
    """Jinja/SQL text without its comments ({# ... #} and -- lines)."""
    text = re.sub(r"\{#.*?#\}", "", text, flags=re.S)
    return "\n".join(line.split("--")[0] for line in text.splitlines())


def test_every_kind_implements_the_whole_interface():
    plain = _kind_keys("_plain_table.sql", "_plain_table_kind")
    shared = _kind_keys("_format_table.sql", "_format_table_kind")
    delta = shared | _kind_keys("_delta_table.sql", "_delta_table_kind")
    iceberg = shared | _kind_keys("_iceberg_table.sql", "_iceberg_table_kind")
    assert plain == INTERFACE, plain ^ INTERFACE
    assert delta == INTERFACE | FORMAT_STEPS, delta ^ (INTERFACE | FORMAT_STEPS)
    assert iceberg == INTERFACE | FORMAT_STEPS, iceberg ^ (INTERFACE | FORMAT_STEPS)


def test_every_implementation_named_by_a_kind_exists():
    defined = set()
    for path in (REPO / "macros").rglob("*.sql"):
        defined |= set(re.findall(r"\{% macro (\w+)\(", path.read_text()))
    for path in TABLES.glob("*.sql"):
        for name in re.findall(r"'\w+': spark_clustering\.(\w+)", path.read_text()):
            assert name in defined, f"{path.name} names {name}, which no macro defines"


def test_no_macro_outside_macros_tables_branches_on_delta_or_iceberg():
    literal = re.compile(r"""['"](delta|iceberg)['"]""", re.I)
    found = []
    for folder in ("macros", "models"):
        for path in (REPO / folder).rglob("*.sql"):
            if TABLES in path.parents:
                continue
            for number, line in enumerate(_code(path.read_text()).splitlines(), 1):
                if literal.search(line):
                    found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == [], "a branch on the table's format outside macros/tables/ (ask _table_kind instead):\n" + "\n".join(found)
