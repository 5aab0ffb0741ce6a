"""A real S3 API server on 127.0.0.1 for the tests and benchmarks (moto in server mode: the S3 REST
API, conditional writes included, each object's writes atomic as on S3: s3_server.py), and the
Spark confs that point S3A at it.

    with S3Server() as s3:                   # a moto server on a free loopback port
        s3.create_bucket("warehouse")
        spark = get_spark(..., s3_endpoint=s3.endpoint)
        spark.sql("create database d location 's3a://warehouse/d.db'")

Child processes find the endpoint in the environment (S3_ENDPOINT_ENV), as `get_spark` does.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from spark_clustering_dev.paths import FORMAT_JARS, WORK

# hadoop-aws + the AWS SDK bundle + spark-hadoop-cloud (jars/s3/pom.xml; only scripts/setup --s3 and
# --all-lines fetch them, apart from the format jars). With spark-hadoop-cloud on the classpath
# Spark 4 commits S3A writes with S3A's magic committer by itself: no copy per written file.
S3_JARS = FORMAT_JARS / "s3"
# set by the harness for child processes: the endpoint their sessions point S3A at
S3_ENDPOINT_ENV = "SPARK_CLUSTERING_S3_ENDPOINT"
ACCESS_KEY = SECRET_KEY = "spark-clustering-test"
# a bucket whose S3A client sends no conditional PUT (as with Hadoop < 3.4.2): the tests' way to
# see the lease refuse to work without one
NO_CONDITIONAL_CREATE_BUCKET = "no-conditional-create"
REGION = "us-east-1"


def s3a_conf(endpoint: str, no_conditional_create: tuple[str, ...] = (NO_CONDITIONAL_CREATE_BUCKET,)) -> dict[str, str]:
    """Spark confs for S3A against `endpoint` (path-style, plain HTTP, static keys); each bucket of
    `no_conditional_create` gets S3A's conditional PUT switched off, as an older Hadoop or a store
    without conditional writes would have it."""
    jars = sorted(str(p) for p in S3_JARS.glob("*.jar"))
    if len(jars) != 3:
        raise FileNotFoundError(f"hadoop-aws, the AWS SDK bundle and spark-hadoop-cloud are not in {S3_JARS}: "
                                "run scripts/setup --s3")
    conf = {
        "spark.hadoop.fs.s3a.endpoint": endpoint,
        "spark.hadoop.fs.s3a.endpoint.region": REGION,
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        "spark.hadoop.fs.s3a.access.key": ACCESS_KEY,
        "spark.hadoop.fs.s3a.secret.key": SECRET_KEY,
        "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        # the package's lease creates its files with If-None-Match: * (docs/object_stores.md)
        "spark.hadoop.fs.s3a.create.conditional.enabled": "true",
        # a local server answers at once or not at all: fail in seconds, not after minutes of retries
        "spark.hadoop.fs.s3a.attempts.maximum": "3",
        "spark.hadoop.fs.s3a.retry.limit": "3",
        "spark.hadoop.fs.s3a.connection.establish.timeout": "5s",
    }
    for bucket in no_conditional_create:
        conf[f"spark.hadoop.fs.s3a.bucket.{bucket}.create.conditional.enabled"] = "false"
    # On the driver's classpath rather than spark.jars: a local session's executor would copy the
    # 640 MB bundle into its work directory at every start, and the embedded Hive metastore loads
    # S3AFileSystem through the class loader of the JVM's first session. (A cluster's executors need
    # them too: spark.jars, or the jars in each node's Spark installation.)
    conf["spark.driver.extraClassPath"] = ":".join(jars)
    return conf


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """moto's S3 server (s3_server.py) in a child process on 127.0.0.1; its request log (one line per request, with
    the HTTP status) is kept in `log_path`."""

    def __init__(self, log_dir: Path | None = None, switch_interval: float | None = None, lose_answers: str = ""):
        """`switch_interval`: the server's sys.setswitchinterval (a test racing its threads);
        `lose_answers`: 'N:TEXT', the server's --lose-answers (a test's lost answers to stored creates)."""
        self.port = free_port()
        self.switch_interval = switch_interval
        self.lose_answers = lose_answers
        self.endpoint = f"http://127.0.0.1:{self.port}"
        log_dir = Path(log_dir or WORK / "s3")
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"moto-{self.port}.log"
        self._process: subprocess.Popen | None = None

    def start(self) -> "S3Server":
        log = open(self.log_path, "w")
        command = [sys.executable, "-m", "spark_clustering_dev.s3_server", "-H", "127.0.0.1", "-p", str(self.port)]
        if self.switch_interval is not None:
            command += ["--switch-interval", str(self.switch_interval)]
        if self.lose_answers:
            command += ["--lose-answers", self.lose_answers]
        self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.client().list_buckets()
                return self
            except Exception:  # noqa: BLE001 - not listening yet
                if self._process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the S3 server did not start; see {self.log_path}") from None
                time.sleep(0.2)

    def client(self):
        import boto3
        from botocore.config import Config

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION,
                            config=Config(retries={"max_attempts": 1}))

    def create_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object key under `prefix` (paged)."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def uploads(self, bucket: str, prefix: str = "") -> list[str]:
        """The keys of multipart uploads in progress (started, neither completed nor aborted)."""
        answer = self.client().list_multipart_uploads(Bucket=bucket, Prefix=prefix)
        return [u["Key"] for u in answer.get("Uploads", [])]

    def statuses(self) -> list[tuple[str, str, int]]:
        """(method, path, status) of every request the server answered so far, from its log."""
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            # 127.0.0.1 - - [date] "PUT /bucket/key HTTP/1.1" 412 -
            if '"' not in line:
                continue
            try:
                request, rest = line.split('"')[1], line.split('"')[2].split()
                method, path = request.split()[:2]
                out.append((method, path, int(rest[0])))
            except (IndexError, ValueError):
                continue
        return out

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()

    def __enter__(self) -> "S3Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def s3a_counters(spark, uri: str) -> dict[str, int]:
    """S3A's own request counters (IOStatistics) of the file system serving `uri` (one per bucket
    and JVM), the non-zero ones: object_copy_requests, object_put_request, object_list_request,
    action_http_head_request, action_http_get_request, object_delete_objects, op_rename, ..."""
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    counters = path.getFileSystem(spark._jsc.hadoopConfiguration()).getIOStatistics().counters()
    return {k: int(counters.get(k)) for k in counters.keySet() if int(counters.get(k)) > 0}


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def endpoint_from_env() -> str | None:
    return os.environ.get(S3_ENDPOINT_ENV) or None
