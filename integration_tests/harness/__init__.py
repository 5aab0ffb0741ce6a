"""Test and example harness: real Spark (embedded session, Thrift server, standalone cluster) + dbt in-process."""
