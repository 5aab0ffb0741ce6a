"""What a reader with the extension reads while a recluster commit is in flight: the new files or the
old ones they replace, never both (snapshot/InFlightCommits.scala), on a local disk and on S3.

Without the extension (spark.sparkclustering.commitView.enabled=false plays it) a listing taken
inside the commit holds both, and every rewritten row is read twice: each test shows that too, so
it would see the difference. States are made exactly (a journal published and a chosen prefix of it
applied, as a commit that stops there leaves it; a real commit held at a step), then played at
random by a writer and a reader thread."""
from __future__ import annotations

import shutil
import threading
import time

import pytest

from harness.commit_race import Writer
from harness.stalling_fs import STALLING_FS_CONF
from spark_clustering_dev.layout import fingerprint
from spark_clustering_dev.paths import local
from spark_clustering_dev.recluster_case import location

VIEW = "spark.sparkclustering.commitView.enabled"
WAIT = "spark.sparkclustering.commitView.waitSeconds"
RANDOM_ROUNDS = 40


@pytest.fixture(scope="module")
def s(spark, dbt_schema):
    spark.sql(f"create database if not exists {dbt_schema}")
    return dbt_schema


def make_table(spark, table: str, files: int = 8, rows_per_file: int = 100):
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"""create table {table} using parquet as
        select /*+ REPARTITION({files}) */ id, pmod(xxhash64(id), 1000) as a, concat('r', id) as b
        from range({files * rows_per_file})""")
    return fingerprint(spark, table, ["id", "a", "b"])


def reader(spark, view: bool = True, wait_seconds: float = 1.0):
    session = spark.newSession()  # its own SQL conf
    session.conf.set(VIEW, str(view).lower())
    session.conf.set(WAIT, str(wait_seconds))
    return session


def read(session, table: str, columns: str = "id, a, b", refresh: bool = True) -> tuple[tuple[int, int, int], set[str]]:
    """The rows' fingerprint (spark_clustering_dev.layout.fingerprint's) and the names of the files
    they came from, in one scan listed afresh (a new session lists at its first query anyway)."""
    if refresh:
        session.sql(f"refresh table {table}")
    row = session.sql(f"""select count(*), coalesce(sum(cast(hash({columns}) as bigint)), 0),
        coalesce(bit_xor(xxhash64({columns})), 0), collect_set(_metadata.file_path) from {table}""").first()
    return (int(row[0]), int(row[1]), int(row[2])), {p.rsplit("/", 1)[-1] for p in row[3]}


def crashed_commit(spark, table: str, k: int, done: int):
    """A commit of copies of k files whose journal is published and whose first `done` steps (k
    moves, then k deletes) are applied: (writer, replaced file names, new file names, moves)."""
    w = Writer(spark, table, location(spark, table), "reader test", 5)
    token = w.acquire()
    picked = sorted(w.files())[:k]
    staging, _ = w.stage(picked)
    moves = w.crash_mid_commit(staging, picked, done=done)
    w.release(token)
    return w, {p.rsplit("/", 1)[-1] for p, _, _ in picked}, {b.name for _, b in moves}, moves


def recover(w: Writer):
    token = w.acquire()
    try:
        return [tuple(r) for r in w.spark.sql(f"select run_id, action from table_rewrite_recover('{w.table}', '{token}', '')")
                .collect()]
    finally:
        w.release(token)


@pytest.mark.parametrize("done, side", [(1, "old"), (3, "new"), (4, "new")],
                         ids=["one-of-three-moved", "all-moved", "a-replaced-file-deleted"])
def test_a_scan_planned_inside_a_commit_reads_one_side_of_it(spark, s, done, side):
    table = f"{s}.one_side_{done}"
    expected = make_table(spark, table)
    w, replaced, added, _ = crashed_commit(spark, table, k=3, done=done)
    start = time.monotonic()
    rows, files = read(reader(spark, wait_seconds=0.5), table)
    took = time.monotonic() - start
    assert rows == expected, (rows, expected)
    if side == "new":
        assert added <= files and not (replaced & files), (sorted(files), added, replaced)
    else:  # the new files are not all there within the wait: the old ones, after waiting for the rest
        assert replaced <= files and not (added & files), (sorted(files), added, replaced)
        assert took >= 0.4, took
    # without the extension's view the listing holds both sides: the moved files' rows twice
    doubled, files_off = read(reader(spark, view=False), table)
    moved = min(done, 3)
    assert doubled[0] == expected[0] + 100 * moved - 100 * max(0, done - 3), (doubled, expected)
    assert len(files_off) == 8 + moved - max(0, done - 3)
    assert recover(w)[0][1].startswith("rolled forward")
    rows, files = read(reader(spark), table)
    assert rows == expected and added <= files and not (replaced & files)


def test_a_scan_planned_while_the_new_files_land_waits_for_them(spark, s):
    """One new file of three is in place when the scan is planned; the others land 0.3 s later: the
    scan waits and reads the new set (the old files are deleted right after, so reading them would
    fail), not the old one."""
    table = f"{s}.one_side_wait"
    expected = make_table(spark, table)
    w, replaced, added, moves = crashed_commit(spark, table, k=3, done=1)
    outcome = {}

    def scan():
        outcome["read"] = read(reader(spark, wait_seconds=30), table)
        outcome["at"] = time.monotonic()

    thread = threading.Thread(target=scan)
    thread.start()
    time.sleep(0.3)
    landed = time.monotonic()
    for staged, final in moves[1:]:
        staged.rename(final)
    thread.join(timeout=60)
    rows, files = outcome["read"]
    assert rows == expected and added <= files and not (replaced & files), (rows, sorted(files))
    assert outcome["at"] >= landed
    assert recover(w)[0][1].startswith("rolled forward")


@pytest.mark.parametrize("moved, deleted", [(2, 1), (0, 1)], ids=["across-moves-and-deletes", "before-any-move"])
def test_a_listing_torn_across_a_commit_is_listed_again(spark, s, moved, deleted):
    """What a listing of a local directory taken across a commit can show (it names the files, then
    reads each one's status): `moved` of the 3 new files and not all of the old ones (`deleted` of
    them gone), a state the commit itself never leaves. Read as is: rows twice and rows missing. The
    scan lists again until the commit lands 0.3 s later, and reads its new side; with no new file in
    the listing (before-any-move) only the journal under the table's root tells the commit is there."""
    table = f"{s}.torn_{moved}_{deleted}"
    expected = make_table(spark, table)
    w = Writer(spark, table, location(spark, table), "torn listing", 7)
    token = w.acquire()
    picked = sorted(w.files())[:3]
    staging, _ = w.stage(picked)
    moves = w.crash_mid_commit(staging, picked, done=0)
    w.release(token)
    for staged, final in moves[:moved]:
        staged.rename(final)
    for path, _, _ in picked[:deleted]:
        local(path).unlink()
    outcome = {}

    def scan():
        outcome["read"] = read(reader(spark, wait_seconds=30), table)

    thread = threading.Thread(target=scan)
    thread.start()
    time.sleep(0.3)
    for staged, final in moves[moved:]:
        staged.rename(final)
    for path, _, _ in picked[deleted:]:
        local(path).unlink()
    thread.join(timeout=60)
    added = {b.name for _, b in moves}
    rows, files = outcome["read"]
    assert rows == expected and added <= files, (rows, expected, sorted(files))
    assert recover(w)[0][1].startswith("rolled forward")


def test_a_commit_damaged_behind_its_back_is_read_as_it_is_after_the_wait(spark, s):
    """Neither side whole and the listing the same each time (a new file and an old one deleted by
    hand): after commitView.waitSeconds the scan reads the files present, it does not hang."""
    table = f"{s}.damaged"
    make_table(spark, table)
    w = Writer(spark, table, location(spark, table), "damaged", 9)
    token = w.acquire()
    picked = sorted(w.files())[:3]
    staging, _ = w.stage(picked)
    moves = w.crash_mid_commit(staging, picked, done=3)  # all moved
    w.release(token)
    moves[0][1].unlink()
    local(picked[0][0]).unlink()
    start = time.monotonic()
    rows, files = read(reader(spark, wait_seconds=0.5), table)
    took = time.monotonic() - start
    # the files present: 7 old (one deleted) and 2 of the 3 new ones (copies of old ones)
    assert rows[0] == 700 + 200 and len(files) == 9 and took >= 0.4, (rows, sorted(files), took)


def read_stretched_over_a_commit(spark, table: str, view: bool, partition: str | None = None):
    """A scan in a new session whose listing of the table (of its `partition` directory, e.g.
    'p=0') is held between naming its files and reading their status
    (harness/java/StallingLocalFileSystem.java) while a whole real commit runs, of copies of 3
    files (of every file of `partition`): (the commit's status, the scan's rows and files)."""
    root = location(spark, table)
    listed = root / partition if partition else root
    session = reader(spark, view=view, wait_seconds=5)
    for key, value in STALLING_FS_CONF.items():
        session.conf.set(key, value)
    marker, named = listed / "_stall_listing", listed / "_stall_listing_named"
    marker.touch()
    outcome = {}

    def scan():
        try:
            outcome["read"] = read(session, table, refresh=False)
        except Exception as e:  # noqa: BLE001 - reported below
            outcome["error"] = e

    thread = threading.Thread(target=scan)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not named.exists():
            assert thread.is_alive() and time.monotonic() < deadline, ("the listing never stalled", outcome)
            time.sleep(0.01)
        w = Writer(spark, table, root, "stretched", 13)
        token = w.acquire()
        if partition:
            picked = sorted(f for f in w.files() if f"/{partition}/" in f[0])
            staging = root / f"_sc_recluster_stretched_{len(picked)}_{int(time.time() * 1000)}"
            (staging / partition).mkdir(parents=True)
            for i, (path, _, _) in enumerate(picked):  # a staged file keeps its partition directory
                shutil.copyfile(local(path), staging / partition / f"part-{i:05d}.parquet")
            total = sum(size for _, size, _ in picked)
        else:
            picked = sorted(w.files())[:3]
            staging, total = w.stage(picked)
        status = w.commit(token, staging, total, picked)
        w.release(token)
        assert not staging.exists()  # the commit is over: no journal left to find
    finally:
        named.unlink(missing_ok=True)
        marker.unlink()
        thread.join(timeout=60)
    assert "error" not in outcome, outcome["error"]
    return status, outcome["read"]


def test_a_listing_stretched_over_a_whole_commit_is_listed_again(spark, s):
    """A listing that names the table's files before a commit's first move and reads their status
    after its last delete holds neither side: none of the new files, none of the replaced ones (each
    skipped as deleted), and the journal is gone by the time the scan looks. Read as is (the view
    off), the replaced files' rows are missing; with the view, the table root's time, which the
    commit's end set, makes the scan list again."""
    table = f"{s}.stretched"
    expected = make_table(spark, table)
    status, (rows, files) = read_stretched_over_a_commit(spark, table, view=False)
    assert status == "committed"
    assert rows[0] == expected[0] - 300 and len(files) == 5, (rows, sorted(files))
    assert spark.sql(f"select count(*) from {table}").first()[0] == expected[0]  # the table itself is whole
    status, (rows, files) = read_stretched_over_a_commit(spark, table, view=True)
    assert status == "committed"
    assert rows == expected and len(files) == 8, (rows, expected, sorted(files))


def test_a_partition_listed_empty_over_a_whole_commit_is_listed_again(spark, s):
    """The same for a partitioned table whose commit replaces every file of a partition: the
    stretched listing holds no file of it at all (read as is, the partition's 400 rows are missing),
    so no directory of the listing shows anything changed; the root's time still does."""
    table = f"{s}.stretched_partitions"
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"""create table {table} using parquet partitioned by (p) as
        select /*+ REPARTITION(4) */ id, pmod(xxhash64(id), 1000) as a, concat('r', id) as b, id % 2 as p
        from range(800)""")
    expected = fingerprint(spark, table, ["id", "a", "b"])
    status, (rows, files) = read_stretched_over_a_commit(spark, table, view=False, partition="p=0")
    assert status == "committed"
    assert rows[0] == 400 and len(files) == 4, (rows, sorted(files))
    status, (rows, files) = read_stretched_over_a_commit(spark, table, view=True, partition="p=0")
    assert status == "committed"
    assert rows == expected and len(files) == 8, (rows, expected, sorted(files))


def test_readers_during_random_commits_never_read_both_sides(spark, s):
    """A writer plays rounds of the commit protocol (real commits, crashes mid-commit left as they
    are for up to 0.4 s, recoveries; random delays) while a reader thread reads the table over and
    over: every read the reader completes holds exactly the table's rows (without the extension's view
    some read rows twice: 3 of 118 in one run). A read may fail when it was planned before a
    commit and opens a file the commit deleted since (Spark's FileNotFoundException; counted)."""
    table = f"{s}.random_readers"
    expected = make_table(spark, table, files=12)
    w = Writer(spark.newSession(), table, location(spark, table), "writer", seed=41, delay_ms=10)
    r = reader(spark, wait_seconds=2)
    stop = threading.Event()
    reads = {"exact": 0, "wrong": [], "failed": 0, "errors": []}

    def read_on():
        while not stop.is_set():
            try:
                rows, files = read(r, table)
            except Exception as e:  # noqa: BLE001 - a file deleted under a scan planned before the commit
                if any(m in str(e) for m in ("FileNotFound", "NoSuchFile", "does not exist")):
                    reads["failed"] += 1
                else:
                    reads["errors"].append(str(e)[:2000])
                continue
            if rows == expected:
                reads["exact"] += 1
            else:
                reads["wrong"].append((rows, sorted(files)))

    thread = threading.Thread(target=read_on)
    thread.start()
    actions = {}
    try:
        for _ in range(RANDOM_ROUNDS):
            action = w.round(expected)
            actions[action] = actions.get(action, 0) + 1
            if action == "crash_mid_commit":
                time.sleep(w.rng.uniform(0, 0.4))  # the state a crash left stays until the next recovery
    finally:
        stop.set()
        thread.join(timeout=120)
    recover(w)
    print(f"[commit readers] {RANDOM_ROUNDS} writer rounds {actions}; reads: {reads['exact']} exact, "
          f"{len(reads['wrong'])} wrong, {reads['failed']} failed on a deleted file")
    assert not reads["errors"], reads["errors"][:2]
    assert not reads["wrong"], reads["wrong"][:3]
    assert reads["exact"] >= RANDOM_ROUNDS, reads
    assert actions.get("commit", 0) >= 5 and actions.get("crash_mid_commit", 0) >= 2, actions


# ---- on S3: a real recluster commit of pending uploads, held between completions and deletes ----

BUCKET = "it-commit-readers"


def test_a_scan_of_a_bucket_planned_inside_a_real_commit_reads_one_side_of_it(spark, s3, dbt, dbt_schema):
    """A table in a bucket, appended to and reclustered by the incremental model's post-hook: its
    commit completes the new files' uploads, then is held (test hook `after_moves`) before it deletes
    the files they replace. A scan planned there reads the new files only; without the extension's
    view, both sides. After the commit: exact rows."""
    from spark_clustering_dev.recluster_case import DATA_COLUMNS, MODEL, expected

    s3.create_bucket(BUCKET)
    schema = f"{dbt_schema}_s3"
    spark.sql(f"create database if not exists {schema} location 's3a://{BUCKET}/{schema}.db'")
    alias = "readers_s3"
    table = f"{schema}.{alias}"
    base = {"rc_alias": alias, "rc_file_rows": 2000}
    dbt(["run", "--select", MODEL], schema=schema, vars={**base, "rc_start": 0, "rc_end": 6000,
                                                         "rc_materialized": "clustered_table", "rc_skip": True})
    outcome = {}

    def append_and_recluster():
        try:
            outcome["run"] = dbt(["run", "--select", MODEL], schema=schema, vars={
                **base, "rc_start": 6000, "rc_end": 8000, "rc_recluster": {"max_average_depth": 1.5}})
        except BaseException as e:  # noqa: BLE001 - re-raised below
            outcome["error"] = e

    spark.conf.set("spark.sparkclustering.test.pauseAt", "after_moves:wait")
    thread = threading.Thread(target=append_and_recluster)
    thread.start()
    try:
        deadline = time.monotonic() + 300
        while spark.conf.get("spark.sparkclustering.test.reached", "") != "after_moves":
            assert thread.is_alive() and time.monotonic() < deadline, outcome
            time.sleep(0.1)
        want = expected(spark, [(0, 8000)])
        rows, files = read(reader(spark), table, ", ".join(DATA_COLUMNS))
        doubled, files_off = read(reader(spark, view=False), table, ", ".join(DATA_COLUMNS))
    finally:
        spark.conf.set("spark.sparkclustering.test.release", "after_moves")
        thread.join(timeout=300)
        for key in ("pauseAt", "reached", "release"):
            spark.conf.unset(f"spark.sparkclustering.test.{key}")
    if "error" in outcome:
        raise outcome["error"]
    new = {f for f in files_off if f.startswith("sc-l")}
    assert new and rows == want and new <= files, (rows, want, sorted(files))
    assert doubled[0] > want[0] and len(files_off) > len(files), (doubled, want, sorted(files_off))
    assert read(reader(spark), table, ", ".join(DATA_COLUMNS))[0] == want  # (a second round may have followed)


def test_with_a_delete_delay_a_reader_planned_before_a_commit_does_not_fail(spark, s):
    """spark.sparkclustering.commit.deleteDelaySeconds = 3 in the committing session: the replaced
    files stay 3 s after the new ones are in place. A reader with the extension reads the whole
    table back to back during 6 commits of every file: every read holds exactly the table's rows,
    and none fails on a deleted file (without the delay a third of such reads failed:
    benchmarks/bench_commit_window.py --reader-rounds)."""
    table = f"{s}.delete_delay"
    expected = make_table(spark, table, files=6)
    committer = spark.newSession()
    committer.conf.set("spark.sparkclustering.commit.deleteDelaySeconds", "3")
    w = Writer(committer, table, location(spark, table), "delayed committer", seed=3, delay_ms=0)
    r = reader(spark, wait_seconds=2)
    stop = threading.Event()
    reads = {"exact": 0, "wrong": [], "errors": []}

    def read_on():
        while not stop.is_set():
            try:
                rows, _ = read(r, table)
            except Exception as e:  # noqa: BLE001 - none expected: reported below
                reads["errors"].append(str(e)[:1500])
                continue
            if rows == expected:
                reads["exact"] += 1
            else:
                reads["wrong"].append(rows)

    thread = threading.Thread(target=read_on)
    thread.start()
    commits = []
    try:
        for _ in range(6):
            token = w.acquire()
            try:
                picked = w.files()
                staging, total = w.stage(picked)
                started = time.monotonic()
                commits.append((w.commit(token, staging, total, picked), time.monotonic() - started))
            finally:
                w.release(token)
    finally:
        stop.set()
        thread.join(timeout=120)
    print(f"[commit readers] delete delay 3 s: {len(commits)} commits {[round(t, 1) for _, t in commits]} s; "
          f"reads: {reads['exact']} exact, {len(reads['wrong'])} wrong, {len(reads['errors'])} failed")
    assert all(status == "committed" and took >= 3 for status, took in commits), commits
    assert not reads["errors"], reads["errors"][:2]
    assert not reads["wrong"] and reads["exact"] >= 6, reads
    assert w.rows() == expected


def test_explain_names_the_index_each_scan_lists_through(spark, s):
    """What docs/concurrency.md says EXPLAIN's `Location:` shows for a plain table: the commit view
    under every scan, named by itself without a filter data skipping can use, by the skipping index
    on top of it with one; with the view and skipping both off, Spark's own index."""
    table = f"{s}.explained"
    make_table(spark, table, files=2)

    def location_of(session, query):
        plan = session.sql(f"explain {query}").first()[0]
        return plan.split("Location: ", 1)[1].split("(", 1)[0]

    session = reader(spark)
    whole, filtered = f"select * from {table}", f"select * from {table} where a < 100"
    assert location_of(session, whole) == "CommitAwareFileIndex"
    assert location_of(session, f"select count(*) from {table}") == "CommitAwareFileIndex"
    assert location_of(session, filtered) == "DataSkippingFileIndex"
    session.conf.set("spark.sparkclustering.skipping.enabled", "false")
    assert location_of(session, filtered) == "CommitAwareFileIndex"
    session.conf.set(VIEW, "false")
    assert location_of(session, filtered) == "InMemoryFileIndex"
    session.conf.set("spark.sparkclustering.skipping.enabled", "true")
    # the view, off, passes Spark's listing through, under the skipping index
    assert location_of(session, filtered) == "DataSkippingFileIndex"
    assert location_of(session, whole) == "InMemoryFileIndex"
