"""The test-only local file system whose listing can be held between naming a directory's files and
reading their status (java/StallingLocalFileSystem.java), compiled against the running pyspark's
Hadoop classes into a jar that every test session has on its driver classpath (a JVM's classpath is
fixed when it starts). Inert unless a session sets fs.file.impl to it (`STALLING_FS_CONF`)."""
from __future__ import annotations

import functools
import subprocess
import zipfile
from pathlib import Path

SOURCE = Path(__file__).parent / "java" / "StallingLocalFileSystem.java"

STALLING_FS_CONF = {
    "fs.file.impl": "sparkclustering.tests.StallingLocalFileSystem",
    "fs.file.impl.disable.cache": "true",
}


@functools.cache  # once per process: a session of another format starts with the same jar
def stalling_fs_jar(work_dir: Path) -> Path:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    classes = work_dir / "stalling_fs_classes"
    classes.mkdir(parents=True, exist_ok=True)
    subprocess.run(["javac", "--release", "17", "-nowarn", "-cp", f"{jars}/*", "-d", str(classes), str(SOURCE)],
                   check=True, capture_output=True, text=True)
    jar = work_dir / "stalling-fs-tests.jar"
    with zipfile.ZipFile(jar, "w") as out:
        for path in sorted(classes.rglob("*.class")):
            out.write(path, path.relative_to(classes).as_posix())
    return jar
