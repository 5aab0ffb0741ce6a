"""Other engines on the package's tables: DuckDB's own Delta and Iceberg readers, loaded offline from
their wheels (duckdb-extension-delta / -iceberg / -avro, pinned in requirements-dev.lock; nothing is
downloaded: autoinstall is off), and its built-in read_parquet over a plain parquet table's data
files, with the files each query made DuckDB read, from its profile; and pyarrow datasets of a
table's data files, which skip row groups by the Parquet footers' statistics.

Used by test_delta_tables / test_iceberg_tables (harness/format_table_cases.py: answers equal to
Spark's, files read equal to what the format's min/max allow), test_clustered_table (plain parquet)
and bench_table_formats.py (--other-readers: files read per layout next to Spark's)."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from spark_clustering_dev.duckdb_wheels import wheel_extension

# the extensions each format's reader needs, in load order (iceberg's reader loads avro's; read_parquet
# is DuckDB's own)
EXTENSIONS = {"delta": ["delta"], "iceberg": ["avro", "iceberg"], "parquet": []}


class DuckDbReader:
    """One DuckDB connection that reads tables of `table_format` ('delta', 'iceberg' or 'parquet') in
    place and profiles every query (JSON, to a file of its own)."""

    def __init__(self, table_format: str):
        import duckdb
        self.table_format = table_format
        self.con = duckdb.connect(config={"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false",
                                          "autoload_known_extensions": "false"})
        for name in EXTENSIONS[table_format]:
            self.con.execute(f"LOAD '{wheel_extension(name)}'")
        self._profile = Path(tempfile.mkdtemp(prefix="duckdb_profile_")) / "profile.json"
        self.con.execute("PRAGMA enable_profiling = 'json'")
        self.con.execute(f"PRAGMA profiling_output = '{self._profile}'")

    def source(self, path: Path) -> str:
        """The table function that reads the Delta / Iceberg table at local `path`
        (recluster_case.location): delta_scan of the table's folder, iceberg_scan of its newest
        metadata file (a table of a Hadoop or Hive catalog: the metadata file names start with a
        version number). A plain parquet table has no such entry point: files_source."""
        if self.table_format == "delta":
            return f"delta_scan('{path}')"
        newest = sorted(Path(path, "metadata").glob("*.metadata.json"))
        if not newest:
            raise FileNotFoundError(f"no Iceberg metadata file under {path}/metadata")
        return f"iceberg_scan('{newest[-1]}')"

    @staticmethod
    def files_source(files) -> str:
        """read_parquet of a plain parquet table's data files, given one by one (local paths, e.g. of
        table_data_files: a plain table has no log, and a glob of its folder would take the sidecar,
        staging or leftover files too). DuckDB has no statistics of a file before it opens it: it
        reads every listed file's footer, then skips the row groups whose statistics miss the
        filter, so its 'Total Files Read' of such a scan is every listed file, whatever the query."""
        paths = sorted(str(f) for f in files)
        if not paths:
            raise ValueError("read_parquet of no files")
        return "read_parquet([" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "])"

    def query(self, sql: str) -> tuple[list[tuple], int]:
        """The rows of `sql` and the data files its scan read ('Total Files Read' of the scan in
        DuckDB's profile: the files it opened, for delta_scan / iceberg_scan those the log's
        statistics kept, for read_parquet every listed file; 0 when no scan read a file)."""
        rows = self.con.execute(sql).fetchall()
        return rows, sum(_files_read(json.loads(self._profile.read_text())))

    def close(self):
        self.con.close()


def _files_read(node: dict):
    info = node.get("extra_info") or {}
    if "Total Files Read" in info:
        yield int(info["Total Files Read"])
    for child in node.get("children", []):
        yield from _files_read(child)


class PyArrowReader:
    """A pyarrow dataset of a table's data files (the paths its current version holds, as the format's
    own metadata or the listing gives them): what a reader that has only the Parquet footers gets.
    pyarrow keeps the row groups whose footer statistics may meet the filter and reads nothing else
    of a file whose row groups it all drops (the footer aside)."""

    def __init__(self, files):
        import pyarrow.dataset as ds
        self.dataset = ds.dataset(sorted(str(f) for f in files), format="parquet")

    @staticmethod
    def box_filter(box: dict):
        """The pyarrow expression of a box {column: (lo, hi)}: every column within its bounds."""
        import operator
        from functools import reduce

        import pyarrow.dataset as ds
        return reduce(operator.and_, [(ds.field(c) >= lo) & (ds.field(c) <= hi) for c, (lo, hi) in box.items()])

    def query(self, filter_expression, columns: list[str]):
        """(the rows of `columns` that meet `filter_expression`, as a pyarrow Table; the files of
        which pyarrow reads a row group; the row groups it reads)."""
        files = row_groups = 0
        for fragment in self.dataset.get_fragments():
            kept = fragment.subset(filter=filter_expression, schema=self.dataset.schema).num_row_groups
            files += kept > 0
            row_groups += kept
        return self.dataset.to_table(columns=columns, filter=filter_expression), files, row_groups
