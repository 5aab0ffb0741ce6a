"""Development tooling shared by the tests (integration_tests/) and the benchmarks (benchmarks/): not
part of the dbt package. The embedded Spark session (`spark`), dbt in-process (`dbt`), the repo's paths
(`paths`), row fingerprints and layout checks (`layout`), a Thrift server and a standalone cluster
(`thrift`, `cluster`), the `recluster_case` model's rows (`recluster_case`) and the metric definitions'
reference implementation (`metrics_reference`). `scripts/setup` puts dev/ on the venv's path."""
