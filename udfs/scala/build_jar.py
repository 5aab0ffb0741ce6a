"""Build the extension's jar for a Spark line, `build/spark-clustering-udfs_<line>_<scala>.jar`, from
udfs/scala/src with the Scala compiler in that line's pyspark `jars/` (and javac for the entry class).

No sbt (and so no network): scalac runs as `java -cp <pyspark jars> scala.tools.nsc.Main`. Sources
(spark_lines/lines.json says which per line):
  src/main/scala           every line
  src/shims/<shim>/scala   the few classes whose Spark internals differ between lines (e.g.
                           FileSourceScanExec's constructor, the classic session of Spark 4)
  src/formats/<f>/scala    a table format's rewrite, where the line has a release of that format
                           (and the format's own version differences: delta-3.3 / delta-4.4)
  src/entry/java           SparkClusteringExtensions, the class Spark loads: it checks the running
                           Spark line against this jar's before anything else loads
It compiles against the line's pyspark jars (its virtualenv, spark_clustering_dev.lines) and the
Maven jars of the line (Delta, Iceberg, hadoop-aws; scripts/setup fetches them first; never S3A's
runtime jars, which only some set-ups fetch), and writes
`spark-clustering-build.properties` (the line, its Scala, the jar's name) into the jar.

Skips the compile when a stamp (sha256 of the sources, this script, the line and its pyspark)
matches; a jar built from the same inputs before (a clean clone: CI) is taken from the cache
(spark_clustering_dev.lines.cache_dir).

Usage: python udfs/scala/build_jar.py [--line 4.1 | --all] [--force]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "dev"))
from spark_clustering_dev import lines  # noqa: E402

SRC = HERE / "src"
BUILD = REPO / "build"
PROPERTIES = "spark-clustering-build.properties"
# The JVMs of the build (scalac, javac, jar) compile their own code with C1 only, and collect with the
# serial GC: C2's compiler threads cost more than they gain back in a JVM that lives for a minute
# (the 4.1 line's scalac: 17-18 CPU-s instead of 36-42, the same class files). Not the JVMs of Spark.
SHORT_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def pyspark_version(jars_dir: Path) -> str:
    version_py = jars_dir.parent / "version.py"
    scope: dict = {}
    exec(version_py.read_text(), scope)  # __version__ = "4.1.4"
    return scope["__version__"]


def sources(line: str) -> tuple[list[Path], list[Path]]:
    """(Scala sources, Java sources) of the line."""
    spec = lines.spec(line)
    roots = [SRC / "main" / "scala"] + [SRC / "shims" / s / "scala" for s in spec["shims"]] + \
            [SRC / "formats" / f / "scala" for f in spec["formats"]]
    missing = [r for r in roots if not r.is_dir()]
    if missing:
        sys.exit(f"udf jar: Spark {line}: no source folder {missing[0].relative_to(REPO)} (spark_lines/lines.json)")
    return [f for r in roots for f in sorted(r.rglob("*.scala"))], sorted((SRC / "entry" / "java").rglob("*.java"))


def fingerprint(line: str, version: str, files: list[Path], jars: list[Path]) -> str:
    digest = hashlib.sha256()
    digest.update(f"spark {line} pyspark {version} {json.dumps(lines.spec(line), sort_keys=True)}\n".encode())
    for path in [Path(__file__).resolve(), *files, *jars]:
        digest.update(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path.name}\n".encode())
        # a fetched jar by its name and size (scripts/setup verified its bytes against its pom's
        # SHA256SUMS): no need to hash them again at every build
        digest.update(str(path.stat().st_size).encode() if path.suffix == ".jar" else path.read_bytes())
    return digest.hexdigest()


def tool(name: str) -> str:
    found = shutil.which(name) or (str(Path(os.environ["JAVA_HOME"]) / "bin" / name) if os.environ.get("JAVA_HOME") else None)
    if not found or not Path(found).exists():
        sys.exit(f"udf jar: `{name}` not found (install a JDK 17 or set JAVA_HOME)")
    return found


def write_jar(classes: Path, jar: Path) -> None:
    tmp = jar.with_suffix(".jar.tmp")
    jar_tool = shutil.which("jar")
    if jar_tool:
        subprocess.run([jar_tool, *(f"-J{o}" for o in SHORT_JVM), "cf", str(tmp), "-C", str(classes), "."], check=True)
    else:  # a JRE without the jar tool: a jar is a zip with an optional manifest
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(classes.rglob("*")):
                if path.is_file():
                    zf.write(path, path.relative_to(classes).as_posix())
    tmp.replace(jar)


def build(line: str, force: bool = False) -> int:
    spec = lines.spec(line)
    jars_dir = lines.pyspark_jars(line)
    version = pyspark_version(jars_dir)
    if lines.line_of(version) != line:
        sys.exit(f"udf jar: Spark {line}: {lines.venv(line)} holds pyspark {version}; run scripts/setup")
    # scalac does not expand `*` in a classpath, and jars/ also holds a directory (connect-repl)
    spark_jars = sorted(p for p in jars_dir.glob("*.jar") if p.is_file())
    if not any(p.name.startswith("scala-compiler-") for p in spark_jars):
        sys.exit(f"udf jar: no scala-compiler-*.jar in {jars_dir}; is pyspark installed correctly?")
    compile_jars = lines.compile_jars(line)
    if not compile_jars:
        sys.exit(f"udf jar: Spark {line}: no compile jars (Delta, Iceberg, hadoop-aws); run scripts/setup (it fetches them)")
    scala_files, java_files = sources(line)
    jar = lines.jar(line)
    stamp = jar.with_name(jar.name + ".sha256")
    want = fingerprint(line, version, scala_files + java_files, compile_jars)
    if not force and jar.exists() and stamp.exists() and stamp.read_text().strip() == want:
        print(f"udf jar: {jar.name} up to date")
        return 0
    cached = lines.cache_dir() / "jars" / f"{jar.stem}-{want[:16]}.jar"
    if not force and cached.exists():
        shutil.copyfile(cached, jar)
        stamp.write_text(want + "\n")
        print(f"udf jar: {jar.name} from the cache (same sources and jars as when it was built)")
        return 0

    classes = BUILD / "scala-classes" / line
    # stale classes from renamed sources must not end up in the jar
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    classpath = ":".join(str(p) for p in spark_jars + compile_jars)
    print(f"udf jar: compiling {len(scala_files)} Scala and {len(java_files)} Java file(s) for Spark {line} "
          f"(pyspark {version}, Scala {spec['scala']}) -> {classes.relative_to(REPO)}", flush=True)
    start = time.monotonic()
    proc = subprocess.run([tool("java"), "-Xss8m", *SHORT_JVM, "-cp", classpath, "scala.tools.nsc.Main", "-classpath", classpath,
                           "-d", str(classes), "-deprecation", "-feature", *map(str, scala_files + java_files)],
                          capture_output=True, text=True)
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode == 0 and java_files:
        # the entry class, for the Java the line runs on (Spark 3.5: 11 and later, as the package needs)
        release = "11" if spec["scala"] == "2.12" else "17"
        javac = subprocess.run([tool("javac"), *(f"-J{o}" for o in SHORT_JVM), "--release", release, "-nowarn",
                                "-cp", f"{classes}:{classpath}",
                                "-d", str(classes), *map(str, java_files)], capture_output=True, text=True)
        output = "\n".join(x for x in (output, (javac.stdout + javac.stderr).strip()) if x)
        proc = javac if javac.returncode else proc
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        print(f"udf jar: Spark {line}: compile FAILED after {elapsed:.1f}s (exit {proc.returncode}):", file=sys.stderr)
        print(output, file=sys.stderr)
        stamp.unlink(missing_ok=True)
        return proc.returncode or 1
    if output:
        print(output)
    print(f"udf jar: compiled in {elapsed:.1f}s")
    (classes / PROPERTIES).write_text(
        f"spark.line={line}\nscala.binary={spec['scala']}\npyspark={version}\njar={jar.name}\n"
        f"spark.lines={','.join(lines.lines())}\n"
        + "".join(f"{f}.version={spec[f]}\n" for f in ("delta", "iceberg") if spec.get(f)))
    write_jar(classes, jar)
    stamp.write_text(want + "\n")
    cached.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(jar, cached.with_suffix(".tmp"))
    cached.with_suffix(".tmp").replace(cached)
    print(f"udf jar: wrote {jar.relative_to(REPO)} ({jar.stat().st_size:,} bytes)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--line", default=None, help=f"the Spark line (default {lines.default_line()})")
    parser.add_argument("--all", action="store_true", help="every line of spark_lines/lines.json")
    parser.add_argument("--force", action="store_true", help="compile even when up to date")
    args = parser.parse_args()
    todo = lines.lines() if args.all else [args.line or lines.default_line()]
    for line in todo:
        code = build(line, args.force)
        if code:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
