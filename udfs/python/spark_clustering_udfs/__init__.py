"""Python (Arrow-vectorized) versions of the spark_clustering functions.

`register(spark, prefix="")` registers `{prefix}range_id`, `{prefix}zorder_key` and
`{prefix}hilbert_key` for SQL use; `curves` holds the numpy implementations and `reference` the
slow scalar ones used by the tests. Importing this package does not import pyspark.
"""
from spark_clustering_udfs.curves import CurveArgumentError


def register(spark, prefix: str = "") -> dict:
    """Register the three functions on `spark` (see `spark_clustering_udfs.spark.register`)."""
    from spark_clustering_udfs.spark import register as _register

    return _register(spark, prefix=prefix)


__all__ = ["register", "CurveArgumentError"]
