"""The harness itself: dbt builds a model on the embedded session and the rows are right."""


def test_session_target_builds_smoke_model(dbt, dbt_schema, spark):
    run = dbt(["run", "--select", "smoke_numbers"])
    assert run.node_results()["smoke_numbers"].status == "success"
    row = spark.sql(
        f"select count(*) as n, sum(id) as s, count(distinct id_mod_7) as b from {dbt_schema}.smoke_numbers"
    ).first()
    assert (row.n, row.s, row.b) == (100, sum(range(100)), 7)

