"""One place for the repo's paths and the names the Scala extension is loaded by."""
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

# Everything this project starts listens on loopback only.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

REPO = Path(__file__).resolve().parents[2]
INTEGRATION_TESTS = REPO / "integration_tests"
BUILD = REPO / "build"
EXTENSION_CLASS = "org.apache.spark.sql.sparkclustering.SparkClusteringExtensions"


def _running_line() -> str:
    from importlib.metadata import version

    from spark_clustering_dev.lines import line_of

    return line_of(version("pyspark"))


def _jar_name(line: str) -> str:
    from spark_clustering_dev.lines import jar_name

    try:
        return jar_name(line)
    except KeyError:  # a Spark line the package is not built for: no such jar
        return f"spark-clustering-udfs_{line}.jar"


# This interpreter's Spark line (its pyspark) and the jar built for it (spark_clustering_dev.lines).
SPARK_LINE = _running_line()
JAR = BUILD / _jar_name(SPARK_LINE)
# The Delta Lake and Iceberg jars scripts/setup copies from Maven Central (jars/pom.xml), S3A's in s3/
# (jars/s3/pom.xml, scripts/setup --s3) and in compile/ what the extension compiles against, which
# no session loads: the default Spark line's, which the tests and benchmarks run; the other lines'
# smoke tests load a format's release of their own (build/lines/<line>/jars) in a session of that format.
FORMAT_JARS = BUILD / "jars"
# Git-ignored scratch space for warehouses, metastores and server logs.
WORK = BUILD / "work"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def local(file_uri: str) -> Path:
    """The local path of a `file:` URI (`file:/x`, `file:///x`, percent-encoded as Spark lists files
    and as _metadata.file_path gives them), or of a plain path."""
    if file_uri.startswith("file:") or "://" in file_uri:
        return Path(unquote(urlparse(file_uri).path))
    return Path(file_uri)


def uri(path: Path) -> str:
    return "file://" + str(path)
