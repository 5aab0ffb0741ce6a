"""Drive dbt in-process with `dbtRunner` against the integration-test project."""
from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spark_clustering_dev.paths import INTEGRATION_TESTS

_lock = threading.Lock()


class DbtError(AssertionError):
    """A dbt invocation failed; `messages` holds every error dbt reported."""

    def __init__(self, args: list[str], messages: list[str]):
        self.args_ = args
        self.messages = messages
        super().__init__(f"dbt {' '.join(args)} failed:\n" + "\n".join(messages))


@dataclass
class DbtRun:
    args: list[str]
    success: bool
    result: Any
    exception: BaseException | None
    messages: list[str] = field(default_factory=list)
    # every warning dbt logged during the invocation (event name: message), e.g. a deprecation
    warnings: list[str] = field(default_factory=list)

    def node_results(self) -> dict[str, Any]:
        """node name -> RunResult, for `run`/`build`/`test`/`seed` (not hooks, e.g. the package's on-run-end)."""
        results = getattr(self.result, "results", None) or []
        return {r.node.name: r for r in results
                if getattr(r, "node", None) is not None and r.node.resource_type != "operation"}


def _messages(result: Any, exception: BaseException | None) -> list[str]:
    messages = []
    if exception is not None:
        messages.append(str(exception))
    for r in getattr(result, "results", None) or []:
        status = str(getattr(r, "status", ""))
        if status.lower() in {"error", "fail", "runtimeerror", "warn"} and getattr(r, "message", None):
            name = getattr(getattr(r, "node", None), "name", "?")
            messages.append(f"{name}: {status}: {r.message}")
    return messages


def packages_installed(project_dir: Path = INTEGRATION_TESTS) -> bool:
    """Whether `dbt deps` already linked the package into `project_dir`/dbt_packages."""
    return (Path(project_dir) / "dbt_packages" / "spark_clustering").exists()


def install_packages(project_dir: Path = INTEGRATION_TESTS) -> None:
    """`dbt deps` for `project_dir` when its package link is missing (packages_installed); one
    process at a time decides and installs (parallel test workers start together)."""
    from dbt.cli.main import dbtRunner

    project_dir = Path(project_dir)
    with _lock, _file_lock(project_dir / "dbt_packages.lock"):
        if not packages_installed(project_dir):
            installed = dbtRunner().invoke(["deps", "--quiet", "--project-dir", str(project_dir),
                                            "--profiles-dir", str(project_dir)])
            if not installed.success:
                raise DbtError(["deps"], _messages(installed.result, installed.exception))


@contextlib.contextmanager
def _file_lock(path: Path):
    """An exclusive lock between processes, held for the `with` block (released when the process dies)."""
    import fcntl

    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_dbt(args: list[str], *, target: str = "session", schema: str = "spark_clustering_it",
            vars: dict[str, Any] | None = None, project_dir: Path = INTEGRATION_TESTS,
            expect_success: bool = True, env: dict[str, str] | None = None,
            callbacks: list | None = None) -> DbtRun:
    """Run `dbt <args>` in this process (so the embedded SparkSession is shared).

    First runs `dbt deps` for `project_dir` when its package link is missing (packages_installed):
    dbt deps rewrites dbt_packages/, which another process (a test worker, a benchmark) may be
    reading, and the link to the local package stays current once made.
    Raises DbtError with every reported error when the outcome differs from `expect_success`.
    `callbacks`: more of dbt's event callbacks (each gets every event dbt fires, e.g. `SQLQuery`).
    """
    from dbt.cli.main import dbtRunner
    from dbt_common.tests import enable_test_caching

    # Each invocation parses every macro of the project and its packages again (~1.4 s of CPU; a
    # changed --vars rules out partial parsing). dbt's own test framework (dbt.tests.fixtures.project)
    # turns on its per-process caches of those parses, keyed by the text parsed; so does this harness.
    enable_test_caching()
    # Nor do the tests read the manifest.json and run_results.json dbt writes after each invocation
    # (1.2 MB of JSON each time): without them an invocation took 0.27 s of the process's CPU instead
    # of 0.67 (means of 8 interleaved rounds, a dbt run of one clustered_table model), over ~500
    # invocations of a CI run. DBT_WRITE_JSON=true in the environment writes them again.
    os.environ.setdefault("DBT_WRITE_JSON", "false")
    os.environ.update({"SPARK_CLUSTERING_TARGET": target, "SPARK_CLUSTERING_SCHEMA": schema,
                       "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **(env or {})})
    project_dir = Path(project_dir)
    common = ["--project-dir", str(project_dir), "--profiles-dir", str(project_dir)]
    install_packages(project_dir)
    full = [*args, *common, "--target", target]
    if vars:
        full += ["--vars", json.dumps(vars)]
    warnings: list[str] = []

    def collect_warnings(event) -> None:
        if event.info.level == "warn":
            warnings.append(f"{event.info.name}: {event.info.msg}")

    res = dbtRunner(callbacks=[collect_warnings, *(callbacks or [])]).invoke(full)
    run = DbtRun(full, bool(res.success), res.result, res.exception, _messages(res.result, res.exception), warnings)
    if run.success != expect_success:
        if expect_success:
            raise DbtError(full, run.messages or ["(dbt reported no message)"])
        raise AssertionError(f"dbt {' '.join(full)} succeeded but a failure was expected")
    return run


def run_operation_json(macro: str, args: dict[str, Any], prefix: str | None = None, **kw) -> Any:
    """Run `dbt run-operation <macro> --args <json>` and parse the JSON the macro prints on one line
    after `<prefix>: ` (default: the macro name)."""
    import contextlib
    import io

    prefix = (prefix or macro) + ": "
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured):  # dbt's Jinja print() writes to sys.stdout
            run_dbt(["run-operation", macro, "--args", json.dumps(args)], **kw)
    except DbtError as error:  # a failed run-operation prints its error to stdout only
        raise DbtError(error.args_, [*error.messages, captured.getvalue()[-4000:]]) from None
    lines = captured.getvalue().splitlines()
    for line in lines:
        idx = line.find(prefix)
        if idx >= 0:
            return json.loads(line[idx + len(prefix):])
    raise AssertionError(f"run-operation {macro} printed no line with {prefix!r}:\n" + "\n".join(lines[-40:]))


def dbt_output(dbt, args: list[str], target_path: Path, expect_success: bool = True, **kw) -> tuple[DbtRun, str]:
    """Run `dbt(args)` (a test module's dbt fixture) in its own --target-path (other processes may run
    dbt on the same project at once); return (run, everything dbt printed), since a failed
    run-operation prints its error to stdout only."""
    import contextlib
    import io

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            run = dbt([*args, "--target-path", str(target_path)], expect_success=expect_success, **kw)
    except (DbtError, AssertionError) as error:
        raise AssertionError(f"{error}\n--- dbt output ---\n{out.getvalue()[-4000:]}") from None
    return run, out.getvalue()
