"""The two stores the storage-sensitive tests run on: a local disk (`file`) and an S3 bucket through S3A
against the test process's S3 server on 127.0.0.1 (`s3a`; conftest's `s3` fixture). A test takes
`storage` as a parameter and asks `database_on` for a database of its module on that store: every
table it makes there lies on it.

    @pytest.mark.parametrize("storage", STORAGES)
    def test_x(spark, s3, dbt_schema, storage):
        schema = database_on(spark, s3, dbt_schema, storage)
"""
from __future__ import annotations

BUCKET = "it-storage"
STORAGES = ["file", "s3a"]


def database_on(spark, s3, base: str, storage: str) -> str:
    """`base` itself on the local disk; `<base>_s3`, located in the bucket, on S3."""
    if storage == "file":
        spark.sql(f"create database if not exists {base}")
        return base
    if storage != "s3a":
        raise ValueError(f"storage {storage!r}: one of {STORAGES}")
    if BUCKET not in {b["Name"] for b in s3.client().list_buckets().get("Buckets", [])}:
        s3.create_bucket(BUCKET)
    schema = f"{base}_s3"
    spark.sql(f"create database if not exists {schema} location 's3a://{BUCKET}/{schema}.db'")
    return schema


def location(spark, table: str) -> str:
    """The table's location URI (`file:/...` or `s3a://...`)."""
    rows = spark.sql(f"describe table extended {table}").collect()
    return next(r[1] for r in rows if r[0] == "Location").rstrip("/")


def database_location(spark, schema: str) -> str:
    rows = spark.sql(f"describe schema extended {schema}").collect()
    return next(r[1] for r in rows if r[0] == "Location").rstrip("/")


def names(spark, directory: str) -> list[str]:
    """The names of the entries of a directory on either store (Hadoop's file system: S3A lists
    the common prefixes as directories), sorted; none when it does not exist."""
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(directory)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    if not fs.exists(path):
        return []
    return sorted(str(s.getPath().getName()) for s in fs.listStatus(path))
