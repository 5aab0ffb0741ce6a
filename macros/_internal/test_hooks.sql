{#- The package's one test hook. Inert unless the test var `spark_clustering_test_hooks` maps this
    point to an action; tests use it to prove that a failure, a kill or a concurrent writer at that
    exact step loses nothing (docs/concurrency.md, "Test hooks"). Points: clustered_table.after_staging_write,
    clustered_table.after_format_write, clustered_table.after_backup, clustered_table.after_promote,
    recluster.after_plan, recluster.after_staging_write, recluster.after_validate. Actions:
      'fail'            raise "injected failure at <point>";
      {'pause': s}      print "spark_clustering: paused at <point>" and sleep s seconds inside Spark
                        (a test kills the process there);
      'wait'            set the session conf spark.sparkclustering.test.reached=<point> and wait
                        (at most 10 minutes) until the test sets spark.sparkclustering.test.release=<point>,
                        so a test sharing the session can act as a concurrent writer at that step.
    The jar's own steps inside table_rewrite_commit and swap_staging_table (where, with the jar loaded,
    clustered_table.after_backup and clustered_table.after_promote happen) read the Spark conf
    spark.sparkclustering.test.pauseAt instead (docs/concurrency.md, "Test hooks"). -#}
{% macro _test_hook(point) %}
    {%- set hooks = var('spark_clustering_test_hooks', none) -%}
    {%- if hooks is none or hooks is not mapping or point not in hooks -%}{{ return('') }}{%- endif -%}
    {%- set action = hooks[point] -%}
    {%- if action == 'fail' -%}
        {{ exceptions.raise_compiler_error('spark_clustering: injected failure at ' ~ point ~ ' (test hook)') }}
    {%- elif action is mapping and 'pause' in action -%}
        {{ log('spark_clustering: paused at ' ~ point, info=true) }}
        {%- do run_query("select reflect('java.lang.Thread', 'sleep', bigint(" ~ (action.pause * 1000) | int ~ "))") -%}
    {%- elif action == 'wait' -%}
        {%- do run_query('set spark.sparkclustering.test.reached=' ~ point) -%}
        {%- set ns = namespace(released=false) -%}
        {%- for _ in range(3000) if not ns.released -%}
            {%- set row = run_query('set spark.sparkclustering.test.release').rows[0] -%}
            {%- set ns.released = row[1] == point -%}
            {%- if not ns.released -%}
                {%- do run_query("select reflect('java.lang.Thread', 'sleep', bigint(200))") -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if not ns.released -%}
            {{ exceptions.raise_compiler_error('spark_clustering: test hook ' ~ point ~ ' was never released') }}
        {%- endif -%}
    {%- else -%}
        {{ exceptions.raise_compiler_error('spark_clustering: test hook ' ~ point ~ ': unknown action ' ~ action
            ~ " (use 'fail', {'pause': seconds} or 'wait')") }}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
