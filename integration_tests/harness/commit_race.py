"""Rounds of the recluster file protocol (lease, recovery, commit) played by several writers at once
against one table, each round checking the exact row multiset while it holds the lease.

Used by tests/test_commit_races.py from threads of the test's own Spark and from child processes
with a Spark (and a metastore) of their own over the same table location: two catalogs, one
directory. A writer's round, with random delays between every step:

    take the lease -> recover what an earlier writer left -> check the rows -> one action ->
    check the rows (unless the action plays a crash) -> give the lease up

While it holds the lease a writer also holds `_race_holder` in the table directory, a marker file
created with O_EXCL: finding it there (left by a live process) means two writers hold the lease at
once, and the round fails naming both.

Actions: `commit` (copies of k random files are staged and committed in place of those files: the
rows stay the same, so any lost or duplicated file shows in the check), `recover` only, `abandon`
(staged files left without a journal, as a crash before the commit point leaves them),
`crash_mid_commit` (a journal published and a random part of it applied, as a crash after the commit
point leaves it), and `stale_token` (a commit with a lease already given up must fail and change
nothing).

    python -m harness.commit_race '<json plan>'   (the child process)
plan: {"work": dir, "table": "db.t", "location": path, "rounds": n, "seed": s, "expected": [fp...]}
"""
from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
import uuid
from pathlib import Path

from spark_clustering_dev.layout import fingerprint
from spark_clustering_dev.paths import local, uri
from spark_clustering_dev.sql import sql_str

ACTIONS = ["commit", "commit", "commit", "recover", "abandon", "crash_mid_commit", "stale_token"]


class Writer:
    def __init__(self, spark, table: str, location: Path, name: str, seed: int, delay_ms: int = 30):
        self.spark, self.table, self.location, self.name = spark, table, Path(location), name
        self.rng = random.Random(seed)
        self.delay_ms = delay_ms
        self.log: list[str] = []
        self.last_token = "00000000-0000-0000-0000-000000000000"

    def pause(self):
        time.sleep(self.rng.uniform(0, self.delay_ms) / 1000)

    def rows(self) -> tuple[int, int, int]:
        self.spark.sql(f"refresh table {self.table}")
        return fingerprint(self.spark, self.table, ["id", "a", "b"])

    def files(self) -> list[tuple[str, int, int]]:
        return [(r[0], r[1], r[2]) for r in self.spark.sql(
            f"select file_path, file_size, modification_time from table_data_files('{self.table}')").collect()]

    def acquire(self) -> str:
        return self.spark.sql(f"select lease_token from table_lease_acquire('{self.table}', "
                              f"'race {self.name}', '120', 'table')").first()[0]

    def release(self, token: str):
        self.spark.sql(f"select * from table_lease_release('{token}', 'false')").collect()

    def hold(self, token: str):
        """Take the holder marker; it is there already only if another writer holds the lease too
        (or a killed process left it: then it is taken over)."""
        marker = self.location / "_race_holder"
        for _ in range(2):
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                try:
                    other = marker.read_text()
                except FileNotFoundError:
                    other = "a writer that gave it up just now"
                pid = other.split()[0] if other.split() else ""
                if pid.isdigit() and not alive(int(pid)):
                    marker.unlink(missing_ok=True)
                    continue
                raise AssertionError(f"{self.name} ({token}) holds the lease, and so does {other or 'a writer taking it'}")
            os.write(fd, f"{os.getpid()} {self.name} ({token})".encode())
            os.close(fd)
            return
        raise AssertionError(f"{self.name}: the holder marker keeps coming back")

    def unhold(self):
        (self.location / "_race_holder").unlink()

    def stage(self, picked) -> tuple[Path, int]:
        """Byte copies of the picked files in a fresh staging directory: the same rows."""
        staging = self.location / f"_sc_recluster_race_{uuid.uuid4().hex[:12]}"
        staging.mkdir()
        total = 0
        for i, (path, size, _) in enumerate(picked):
            shutil.copyfile(local(path), staging / f"part-{i:05d}-{uuid.uuid4().hex[:8]}.parquet")
            total += size
            self.pause()
        return staging, total

    def commit(self, token: str, staging: Path, total: int, picked) -> str:
        replaced = ", ".join(sql_str(f"{size}:{mtime}:{path}") for path, size, mtime in picked)
        prefix = "sc-l1-" + staging.name.removeprefix("_sc_recluster_")
        return self.spark.sql(f"select status from table_rewrite_commit('{self.table}', '{token}', '', "
                              f"{sql_str(uri(staging))}, '{prefix}', '', '', '{total}', '', array({replaced}))").first()[0]

    def crash_mid_commit(self, staging: Path, picked, done: int | None = None) -> list[tuple[Path, Path]]:
        """Publish a journal the way the commit does, apply its first `done` steps (moves, then
        deletes; random if None), and stop. The moves, (staged file, its place in the table)."""
        staged = sorted(staging.iterdir())
        run = staging.name.removeprefix("_sc_recluster_")
        moves = [(f, self.location / f"sc-l1-{run}-{i:05d}.parquet", f.stat().st_size) for i, f in enumerate(staged)]
        lines = [f"move\t{uri(a)}\t{uri(b)}\t{n}" for a, b, n in moves]
        lines += [f"delete\t{path if path.startswith('file:') else uri(local(path))}" for path, _, _ in picked]
        (staging / "_sc_manifest.tmp").write_text("\n".join(lines) + "\n")
        (staging / "_sc_manifest.tmp").rename(staging / "_sc_manifest")
        if done is None:
            done = self.rng.randint(0, len(moves) + len(picked))
        for a, b, _ in moves[:done]:
            a.rename(b)
        for path, _, _ in picked[:max(0, done - len(moves))]:
            local(path).unlink()
        return [(a, b) for a, b, _ in moves]

    def round(self, expected) -> str:
        token = self.acquire()
        try:
            self.hold(token)
        except BaseException:
            self.release(token)
            raise
        try:
            self.pause()
            for row in self.spark.sql(f"select run_id, action from table_rewrite_recover('{self.table}', '{token}', '')").collect():
                self.log.append(f"{self.name} recovered {row[0]}: {row[1]}")
            got = self.rows()
            assert got == expected, (self.name, "after recovery", got, expected, self.log[-6:])
            action = self.rng.choice(ACTIONS)
            files = self.files()
            picked = self.rng.sample(files, self.rng.randint(1, min(4, len(files))))
            self.pause()
            if action == "recover":
                pass
            elif action == "stale_token":
                stale = self.acquire_stale()
                staging, total = self.stage(picked)
                try:
                    self.commit(stale, staging, total, picked)
                    raise AssertionError(f"{self.name}: a commit with a released lease went through")
                except Exception as e:  # noqa: BLE001 - the lease error is what we want
                    assert "lost the table's lease" in str(e) or "holds no lease" in str(e), str(e)[:500]
                shutil.rmtree(staging)
            else:
                staging, total = self.stage(picked)
                self.pause()
                if action == "commit":
                    status = self.commit(token, staging, total, picked)
                    assert status == "committed", (self.name, status)
                elif action == "crash_mid_commit":
                    self.crash_mid_commit(staging, picked)
                # abandon: staged files stay, no journal
            if action in ("commit", "recover", "stale_token"):
                got = self.rows()
                assert got == expected, (self.name, action, got, expected, self.log[-6:])
            self.log.append(f"{self.name} {action} {len(picked)} file(s)")
            return action
        finally:
            self.unhold()
            self.release(token)
            self.last_token = token

    def acquire_stale(self) -> str:
        """The token of this writer's previous round, given up since: a writer that lost its lease."""
        return self.last_token


def alive(pid: int) -> bool:
    """A running process (a killed one is a zombie until its parent reaps it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def main(plan: dict) -> None:
    from spark_clustering_dev.spark import get_spark

    spark = get_spark(Path(plan["work"]), app_name="spark_clustering_commit_race_child",
                      extra_conf={"spark.sparkclustering.lease.ttlSeconds": "20"})
    db, name = plan["table"].split(".")
    spark.sql(f"create database if not exists {db}")
    # an explicit schema: inferring one would read footers while the parent moves files
    spark.sql(f"create table if not exists {plan['table']} (id bigint, a bigint, b string) using parquet "
              f"location {sql_str(plan['location'])}")
    writer = Writer(spark, plan["table"], Path(plan["location"]), f"process-{plan['seed']}", plan["seed"])
    expected = tuple(plan["expected"])
    print("commit_race: started", flush=True)
    counts: dict[str, int] = {}
    for i in range(plan["rounds"]):
        action = writer.round(expected)
        counts[action] = counts.get(action, 0) + 1
        print(f"commit_race: round {i} {action}", flush=True)
    print("commit_race: done " + json.dumps(counts), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
