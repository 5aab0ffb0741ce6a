"""The settings chain (macros/config/_settings.sql): every declared key reaches every path that
declares it, set in config(), under meta or by its var; the docs' table of keys is the declaration's;
no documented way of setting a key makes dbt print a warning."""
from __future__ import annotations

import json
import re

import pytest

from spark_clustering_dev.dbt import run_operation_json
from spark_clustering_dev.paths import REPO

MODEL = "settings_case"

# A non-default value for every declared key, and where each path's validated config carries it
# (clustering_config's names). A key declared without a case here fails the test.
CASES = {
    "cluster_by": (["b", "a"], lambda c: c["cluster_by"]),
    "cluster_method": ("zorder", lambda c: c["method"]),
    "cluster_workload": ([{"a": [0, 10]}, {"b": [5, None]}], lambda c: c["workload"]),
    "cluster_ranges": (500, lambda c: c["ranges"]["a"]),
    "cluster_target_file_rows": (5000, lambda c: c["target_file_rows"]),
    "cluster_target_file_bytes": (2048, lambda c: c["target_file_bytes"]),
    "cluster_num_files": (3, lambda c: c["num_files"]),
    "cluster_sample_rows_per_range": (7, lambda c: c["sample_rows_per_range"]),
    "cluster_validate": ("checksum", lambda c: c["validate"]),
    "cluster_file_stats": (False, lambda c: c["file_stats"]),
    "file_format": ("orc", lambda c: c["file_format"]),
    "partition_by": (["p"], lambda c: c["partition_by"]),
    "cluster_swap": ("rename", lambda c: c["swap"]),
    "cluster_lease_wait_seconds": (7, lambda c: c["lease_wait_seconds"]),
    "recluster": ({"max_rounds": 2, "merge_ratio": 3}, lambda c: {k: c["gate"][k] for k in ("max_rounds", "merge_ratio")}),
    "skip_recluster": (True, lambda c: c["skip_recluster"]),
}
VALUES = {key: value for key, (value, _) in CASES.items()}
# dbt-spark's own keys: set in config() only (its macros never look under meta)
ADAPTER_KEYS = {"file_format", "partition_by"}


def model_vars(where: str) -> dict:
    """The vars setting every key in config() or (the package's keys) under meta."""
    if where == "config":
        return {"settings_config": VALUES}
    return {"settings_meta": {k: v for k, v in VALUES.items() if k not in ADAPTER_KEYS},
            "settings_config": {k: v for k, v in VALUES.items() if k in ADAPTER_KEYS}}


def build(dbt, tmp_path, alias: str, **vars_) -> tuple[dict, str]:
    """dbt run of the model; (the config its build resolved, the warnings dbt logged)."""
    from spark_clustering_dev.dbt import dbt_output

    run, out = dbt_output(dbt, ["run", "--select", MODEL], tmp_path / alias, vars={"settings_alias": alias, **vars_})
    code = run.node_results()[MODEL].node.compiled_code
    found = re.search(r"-- clustering_config: (.*)", code)
    assert found, code
    return json.loads(found.group(1)), run.warnings


def settings_of(schema: str, alias: str, **vars_) -> dict:
    return run_operation_json("clustering_settings", {"relation": f"{schema}.{alias}"}, schema=schema,
                              vars={"settings_alias": alias, **vars_})


@pytest.mark.parametrize("where", ["config", "meta"])
def test_every_declared_key_reaches_the_build_and_recluster(spark, dbt, dbt_schema, tmp_path, where):
    """Each key set in config() (or under meta) is in the config the build resolved and in the one
    recluster() resolves for the built table, for every path the declaration names; dbt prints no
    warning for either way of setting them (dbt >= 1.10 warns when config.get finds a key under meta)."""
    alias = f"settings_{where}"
    built, warnings = build(dbt, tmp_path, alias, **model_vars(where))
    assert warnings == [], warnings
    report = settings_of(dbt_schema, alias, **model_vars(where))
    declared = report["settings"]
    assert set(declared) == set(CASES), "a declared key without a case here, or a case without a key"
    for key, (value, carried) in CASES.items():
        paths = declared[key]["paths"]
        assert paths, key
        if "build" in paths:
            assert carried(built) == value, (key, "build", built)
            assert built["origins"][key] == ("config" if key in ADAPTER_KEYS else where), (key, built["origins"])
        if "recluster" in paths:
            assert carried(report["config"]) == value, (key, "recluster", report["config"])
            # the table decides its own format and partitioning; everything else comes from the model
            assert declared[key]["origin"] == ("argument" if key in ("file_format", "partition_by") else where), \
                (key, declared[key])
    # the build honoured what it resolved: orc, partitioned by p, no statistics sidecar
    detail = {r[0]: r[1] for r in spark.sql(f"describe table extended {dbt_schema}.{alias}").collect()}
    assert detail["Provider"].lower() == "orc", detail
    assert "p" in spark.sql(f"show partitions {dbt_schema}.{alias}").first()[0]
    assert spark.table(f"{dbt_schema}.{alias}").count() == 4000


def test_a_var_beats_the_model_and_an_unset_key_takes_its_default(dbt, dbt_schema, tmp_path):
    alias = "settings_var"
    built, _ = build(dbt, tmp_path, alias, settings_config={"cluster_by": ["a"], "cluster_lease_wait_seconds": 7},
                     spark_clustering_lease_wait_seconds=11)
    assert (built["lease_wait_seconds"], built["origins"]["cluster_lease_wait_seconds"]) == (11, "var")
    report = settings_of(dbt_schema, alias, settings_config={"cluster_by": ["a"], "cluster_lease_wait_seconds": 7},
                         spark_clustering_lease_wait_seconds=11)
    assert report["config"]["lease_wait_seconds"] == 11
    assert report["settings"]["cluster_lease_wait_seconds"]["origin"] == "var"
    # the method the build recorded on the table, where recluster() looks before the default
    assert report["settings"]["cluster_method"] | {"paths": None} == \
        {"value": "hilbert", "origin": "property", "default": "hilbert", "paths": None}
    for key, setting in report["settings"].items():
        if key not in ("cluster_by", "cluster_lease_wait_seconds", "file_format", "partition_by", "cluster_method"):
            assert (setting["origin"], setting["value"]) == ("default", setting["default"]), (key, setting)
        # (the project sets +file_format: parquet for every model)
        if key not in ("cluster_by", "cluster_lease_wait_seconds", "file_format"):
            assert built["origins"][key] == "default", key


def test_a_bad_var_is_named_as_the_var(dbt, tmp_path):
    from spark_clustering_dev.dbt import dbt_output

    with pytest.raises(AssertionError) as error:
        dbt_output(dbt, ["run", "--select", MODEL], tmp_path / "bad", vars={
            "settings_alias": "settings_bad_var", "settings_config": {"cluster_by": ["a"]},
            "spark_clustering_lease_wait_seconds": -1})
    assert "var 'spark_clustering_lease_wait_seconds' = -1 is not valid: use a number of seconds >= 0" in str(error.value)


def test_recluster_resolves_cluster_by_from_the_table_when_the_model_names_none(spark, dbt, dbt_schema, tmp_path):
    """A table no model's config names columns for: recluster() reads the columns and method the last
    clustering recorded (table properties), and says where they came from."""
    alias = "settings_recorded"
    build(dbt, tmp_path, alias, settings_config={"cluster_by": ["b"], "cluster_method": "linear"})
    # the graph no longer knows the table's model (another alias): only the table is left
    report = settings_of(dbt_schema, alias, settings_alias="another_alias")
    assert report["model"] is None
    assert (report["settings"]["cluster_by"]["value"], report["settings"]["cluster_by"]["origin"]) == (["b"], "property")
    assert (report["config"]["method"], report["settings"]["cluster_method"]["origin"]) == ("linear", "property")


def _documented_keys() -> dict[str, str]:
    """{key: default column} of the config table in macros/config/config.yml."""
    text = (REPO / "macros" / "config" / "config.yml").read_text()
    rows = re.findall(r"^\s*\| `([a-z_]+)` \| ([^|]*) \|", text, flags=re.M)
    return {key: default.strip() for key, default in rows}


def _documented(default):
    """How config.yml writes a declared default."""
    if default is None:
        return {"unset", "required"}
    return {"`" + (json.dumps(default) if not isinstance(default, str) else default) + "`"}


def test_the_docs_table_lists_every_declared_key_with_its_default(dbt_schema, dbt, tmp_path):
    build(dbt, tmp_path, "settings_docs", settings_config={"cluster_by": ["a"]})
    declared = settings_of(dbt_schema, "settings_docs", settings_config={"cluster_by": ["a"]})["settings"]
    documented = _documented_keys()
    assert set(documented) == set(declared), (set(documented) ^ set(declared))
    for key, setting in declared.items():
        assert documented[key] in _documented(setting["default"]), (key, documented[key], setting["default"])


def test_the_jar_is_called_by_argument_names_and_read_by_column_names(spark, dbt, dbt_schema, tmp_path):
    """The typed boundary (_call_extension): a table function's rows come back by column name; every
    declared function is one the jar registers; a wrong or missing argument is named before any call."""
    from spark_clustering_dev.dbt import DbtError

    alias = "settings_boundary"
    build(dbt, tmp_path, alias, settings_config={"cluster_by": ["a"], "cluster_num_files": 3})
    out = run_operation_json("extension_call_case", {"name": "table_data_files",
                                                     "arguments": {"table": f"{dbt_schema}.{alias}"}}, schema=dbt_schema)
    files = {r[0].rsplit("/", 1)[-1]: r[1] for r in
             spark.sql(f"select distinct _metadata.file_path, _metadata.file_size from {dbt_schema}.{alias}").collect()}
    assert {r["file_path"].rsplit("/", 1)[-1]: r["file_size"] for r in out["rows"]} == files and len(files) == 3, out["rows"]
    assert all(set(r) == {"file_path", "file_size", "modification_time", "table_version", "log_stats", "has_row_deletes",
                        "from_build"} for r in out["rows"]), out["rows"]
    for name in out["declared"]:
        assert spark.sql(f"show functions like '{name}'").count() == 1, f"{name} is declared but the jar has no such function"
    with pytest.raises(DbtError) as wrong:
        run_operation_json("extension_call_case", {"name": "table_data_files", "arguments": {"tabel": "x.y"}}, schema=dbt_schema)
    assert "table_data_files has no argument 'tabel' (its arguments: table)" in str(wrong.value)
    with pytest.raises(DbtError) as missing:
        run_operation_json("extension_call_case", {"name": "table_lease_check", "arguments": {"lease_token": "t"}}, schema=dbt_schema)
    assert "table_lease_check called without its argument 'what'" in str(missing.value)
