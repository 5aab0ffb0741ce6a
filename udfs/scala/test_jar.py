"""Compile and run the extension's unit suites (udfs/scala/src/test/scala) with JUnit 4: the pure
parts of the jar (the min/max predicate evaluator, curve keys, range_id's search, the k-d tree fit,
the recluster journal), tested in one JVM without a Spark session, in seconds.

  1. JUnit's jars (udfs/scala/test/pom.xml, checked against udfs/scala/test/SHA256SUMS) into
     build/scala-test/jars, fetched with Maven once (skipped when exactly those files are there);
  2. the extension's jar of the default line (build_jar.py; skips when up to date);
  3. the suites compiled with the same scalac (pyspark's jars/) against that jar, into
     build/scala-test/spark-clustering-unit-suites.jar (skipped when a stamp of the sources, this
     script and the jar matches; taken from the cache when compiled from the same inputs before);
  4. every `*Test` class run by org.junit.runner.JUnitCore.

Prints JUnit's report, then `N passed, N failed` alone on the last line; exits non-zero on a failure.
scripts/test runs it before pytest.

Usage: python udfs/scala/test_jar.py [--force]
"""
from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "dev"))
sys.path.insert(0, str(HERE))
import build_jar  # noqa: E402
from spark_clustering_dev import lines  # noqa: E402

TESTS = HERE / "src" / "test" / "scala"
POM = HERE / "test" / "pom.xml"
SUMS = HERE / "test" / "SHA256SUMS"
OUT = REPO / "build" / "scala-test"
RUNNER_JARS = OUT / "jars"
CLASSES = OUT / "classes"
SUITES_JAR = OUT / "spark-clustering-unit-suites.jar"
STAMP = OUT / "spark-clustering-unit-suites.jar.sha256"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def runner_jars() -> list[Path]:
    """JUnit's jars, exactly those of SHA256SUMS, fetched first when any is missing or differs."""
    want = dict(reversed(line.split()) for line in SUMS.read_text().splitlines() if line.strip())

    def present() -> bool:
        return RUNNER_JARS.is_dir() and {p.name for p in RUNNER_JARS.glob("*.jar")} == set(want) \
            and all(sha256(RUNNER_JARS / name) == digest for name, digest in want.items())

    if not present():
        print(f"unit suites: fetching the test runner's jars ({POM.relative_to(REPO)}) into {RUNNER_JARS.relative_to(REPO)}",
              flush=True)
        tmp = RUNNER_JARS.with_name("jars.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        mvn = shutil.which("mvn") or sys.exit("unit suites: `mvn` not found (Maven fetches JUnit once; install Maven)")
        subprocess.run([mvn, "-q", "-B", "-Dstyle.color=never",
                        "--strict-checksums", "-f", str(POM), "dependency:copy-dependencies",
                        f"-DoutputDirectory={tmp}"], check=True)
        bad = sorted(name for name, digest in want.items() if not (tmp / name).exists() or sha256(tmp / name) != digest)
        extra = sorted({p.name for p in tmp.glob("*.jar")} - set(want))
        if bad or extra:
            sys.exit(f"unit suites: the fetched jars do not match {SUMS.relative_to(REPO)}: {bad + extra}")
        shutil.rmtree(RUNNER_JARS, ignore_errors=True)
        tmp.replace(RUNNER_JARS)
    return sorted(RUNNER_JARS / name for name in want)


def compile_suites(line: str, extension: Path, classpath: list[Path], force: bool) -> None:
    """SUITES_JAR from the sources, compiled only when they, this script or the extension's jar
    changed; one built from the same inputs before (a clean clone: CI) is taken from the cache."""
    sources = sorted(TESTS.rglob("*.scala"))
    if not sources:
        sys.exit(f"unit suites: no sources under {TESTS.relative_to(REPO)}")
    digest = hashlib.sha256(f"spark {line}\n".encode())
    # the extension jar by its build stamp (the sha256 of everything it was built from)
    stamp_of_jar = extension.with_name(extension.name + ".sha256")
    digest.update(stamp_of_jar.read_bytes() if stamp_of_jar.exists() else sha256(extension).encode())
    for path in [Path(__file__).resolve(), *sources]:
        digest.update(f"{path.relative_to(REPO)}\n".encode())
        digest.update(path.read_bytes())
    want = digest.hexdigest()
    OUT.mkdir(parents=True, exist_ok=True)
    if not force and SUITES_JAR.exists() and STAMP.exists() and STAMP.read_text().strip() == want:
        print("unit suites: up to date")
        return
    cached = lines.cache_dir() / "jars" / f"{SUITES_JAR.stem}-{want[:16]}.jar"
    if not force and cached.exists():
        shutil.copyfile(cached, SUITES_JAR)
        STAMP.write_text(want + "\n")
        print("unit suites: from the cache (same sources and jar as when they were compiled)")
        return
    shutil.rmtree(CLASSES, ignore_errors=True)  # no stale classes of renamed tests
    CLASSES.mkdir(parents=True)
    cp = ":".join(map(str, classpath))
    print(f"unit suites: compiling {len(sources)} Scala file(s) -> {SUITES_JAR.relative_to(REPO)}", flush=True)
    start = time.monotonic()
    proc = subprocess.run([build_jar.tool("java"), "-Xss8m", "-cp", cp, "scala.tools.nsc.Main", "-classpath", cp,
                           "-d", str(CLASSES), "-deprecation", "-feature", *map(str, sources)],
                          capture_output=True, text=True)
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        STAMP.unlink(missing_ok=True)
        print(output, file=sys.stderr)
        sys.exit(f"unit suites: compile FAILED after {time.monotonic() - start:.1f}s")
    if output:
        print(output)
    build_jar.write_jar(CLASSES, SUITES_JAR)
    STAMP.write_text(want + "\n")
    cached.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SUITES_JAR, cached.with_suffix(".tmp"))
    cached.with_suffix(".tmp").replace(cached)
    print(f"unit suites: compiled in {time.monotonic() - start:.1f}s")


def suite_classes() -> list[str]:
    """The top-level classes named *Test (JUnit's runner is given each by name)."""
    with zipfile.ZipFile(SUITES_JAR) as jar:
        return sorted(name[:-len(".class")].replace("/", ".") for name in jar.namelist()
                      if name.endswith("Test.class") and "$" not in name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--force", action="store_true", help="compile the suites even when up to date")
    args = parser.parse_args()
    line = lines.default_line()
    junit = runner_jars()
    if build_jar.build(line):
        return 1
    extension = lines.jar(line)
    spark_jars = sorted(p for p in lines.pyspark_jars(line).glob("*.jar") if p.is_file())
    # compiled as build_jar.py compiles the jar (its Maven jars too: scalac may need the types its
    # classes name), run without them: the pure code needs pyspark's jars only
    compile_suites(line, extension, spark_jars + lines.compile_jars(line) + [extension] + junit, args.force)
    classes = suite_classes()
    cp = ":".join(map(str, [SUITES_JAR, extension, *junit, *spark_jars]))
    start = time.monotonic()
    proc = subprocess.run([build_jar.tool("java"), "-Xss8m", "-cp", cp, "org.junit.runner.JUnitCore", *classes],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.monotonic() - start
    report = proc.stdout
    print(report.rstrip())
    # JUnitCore's summary: "OK (N tests)" or "Tests run: N,  Failures: M"
    ok = re.search(r"^OK \((\d+) tests?\)", report, re.M)
    failed = re.search(r"^Tests run: (\d+),\s+Failures: (\d+)", report, re.M)
    if ok:
        run, failures = int(ok.group(1)), 0
    elif failed:
        run, failures = int(failed.group(1)), int(failed.group(2))
    else:
        print(f"unit suites: JUnit gave no summary (exit {proc.returncode})", file=sys.stderr)
        return proc.returncode or 1
    print(f"unit suites: {len(classes)} classes in {elapsed:.1f}s")
    print(f"{run - failures} passed, {failures} failed")
    if run == 0:
        print("unit suites: JUnit ran no test", file=sys.stderr)
        return 1
    return 1 if failures or proc.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
