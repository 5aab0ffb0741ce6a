{#- What dbt is doing right now, and how a macro reports to the command line. -#}

{#- Whether tables may be measured now: while dbt runs, tests, builds, shows or runs an operation,
    not while it compiles or generates docs (both set `execute` too, and on a fresh checkout no
    table exists yet). -#}
{% macro _measure_now() %}
    {{ return(execute and (flags.WHICH | string) in ['run', 'test', 'build', 'retry', 'show', 'run-operation']) }}
{% endmacro %}


{#- Under `dbt run-operation <macro_name>`, print the result as one JSON line
    `<macro_name>: {...}`; called from anywhere else (models, tests, other macros) it stays quiet. -#}
{% macro _print_if_run_operation(macro_name, result) %}
    {%- set invoked = (invocation_args_dict.get('macro') or '') | string -%}
    {%- if invocation_args_dict.get('which') == 'run-operation' and invoked.split('.')[-1] == macro_name -%}
        {{ print(macro_name ~ ': ' ~ tojson(result)) }}
    {%- endif -%}
{% endmacro %}
