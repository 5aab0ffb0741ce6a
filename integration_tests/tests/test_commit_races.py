"""No row lost or duplicated when writers race: the recluster file protocol (table lease, recovery,
commit proofs) played by two threads of one Spark and by a second Spark in another process (its own
metastore, the same table directory: two catalogs over one location) that is `kill -9`ed at random
moments, with random delays between every step. Every round checks the exact row multiset (count +
two order-independent checksums) while it holds the lease; see harness/commit_race.py."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.commit_race import Writer
from spark_clustering_dev.paths import INTEGRATION_TESTS, WORK, local
from spark_clustering_dev.recluster_case import location

THREAD_ROUNDS = 60
PROCESS_ROUNDS = 25
LIVES = 2  # the child is killed in every life but the last (each life starts a JVM: ~20 s)


@pytest.fixture(scope="module")
def s(spark, dbt_schema):
    spark.sql(f"create database if not exists {dbt_schema}")
    return dbt_schema


def make_table(spark, table: str, files: int = 12, rows_per_file: int = 100) -> tuple:
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"""create table {table} using parquet as
        select /*+ REPARTITION({files}) */ id, pmod(xxhash64(id), 1000) as a, concat('r', id) as b
        from range({files * rows_per_file})""")
    return Writer(spark, table, location(spark, table), "setup", 0).rows()


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(("_sc_recluster_", "_sc_damaged_")))


def assert_recovered_intact(spark, table, root, expected):
    """A last recovery finishes whatever the last crash left; then the rows are exact, nothing staged."""
    final = Writer(spark, table, root, "final", 1)
    token = final.acquire()
    spark.sql(f"select * from table_rewrite_recover('{table}', '{token}', '')").collect()
    final.release(token)
    assert final.rows() == expected
    assert leftovers(root) == []


def run_threads(writers, expected, rounds):
    errors: list[BaseException] = []
    counts: dict[str, int] = {}

    def play(w):
        try:
            for _ in range(rounds):
                action = w.round(expected)
                counts[action] = counts.get(action, 0) + 1
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=play, args=(w,)) for w in writers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors, counts


def test_two_threads_commit_recover_and_crash_at_random(spark, s):
    table = f"{s}.race_threads"
    expected = make_table(spark, table)
    root = location(spark, table)
    writers = [Writer(spark, table, root, f"thread-{i}", seed=100 + i) for i in range(2)]
    start = time.monotonic()
    errors, counts = run_threads(writers, expected, THREAD_ROUNDS)
    assert not errors, str(errors[0])[:4000]
    assert_recovered_intact(spark, table, root, expected)
    print(f"[commit races] threads: {2 * THREAD_ROUNDS} rounds in {time.monotonic() - start:.0f}s {json.dumps(counts)}")
    for action in ["commit", "recover", "abandon", "crash_mid_commit", "stale_token"]:
        assert counts.get(action, 0) >= 3, counts


def brief(output: str) -> str:
    """The child's own lines and error messages, without Java stack frames."""
    keep = [x for x in output.splitlines() if not x.lstrip().startswith("at ") and "WARN" not in x]
    return "\n".join(keep[-40:])


def start_child(plan: dict) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "harness.commit_race", json.dumps(plan)], cwd=INTEGRATION_TESTS,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def test_two_catalogs_over_one_location_with_a_process_killed_at_random(spark, s):
    """The test's Spark and a child Spark (own metastore, external table over the same directory)
    race; the child is killed with SIGKILL at a random moment of its rounds and started again.
    A killed writer's lease is freed at once (dead pid on this host); what it left is recovered by
    whoever takes the lease next."""
    table = f"{s}.race_catalogs"
    expected = make_table(spark, table)
    root = location(spark, table)
    rng = random.Random(7)
    work = WORK / f"commit-race-{os.getpid()}"
    stop = threading.Event()
    errors, counts = [], {}
    parent = Writer(spark, table, root, "parent", seed=300)

    def play():
        try:
            while not stop.is_set():
                action = parent.round(expected)
                counts[action] = counts.get(action, 0) + 1
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    thread = threading.Thread(target=play)
    thread.start()
    outputs, kills = [], 0
    try:
        for life in range(LIVES):
            plan = {"work": str(work), "table": "race.t", "location": str(root), "rounds": PROCESS_ROUNDS,
                    "seed": 400 + life, "expected": list(expected)}
            proc = start_child(plan)
            lines: list[str] = []
            pump = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
            pump.start()
            if life < LIVES - 1:
                # kill it somewhere in its rounds: after a random number of them, mid-round
                target = rng.randint(3, 15)
                deadline = time.monotonic() + 300
                while proc.poll() is None and time.monotonic() < deadline and \
                        sum("commit_race: round" in x for x in lines) < target:
                    time.sleep(0.05)
                time.sleep(rng.uniform(0, 0.3))
                os.killpg(proc.pid, signal.SIGKILL)
                kills += 1
            code = proc.wait(timeout=600)
            pump.join(timeout=10)
            outputs.append("".join(lines))
            if life < LIVES - 1:
                assert code == -signal.SIGKILL, outputs[-1][-3000:]
                assert sum("commit_race: round" in x for x in lines) >= 3, outputs[-1][-3000:]
            else:
                assert code == 0 and "commit_race: done" in outputs[-1], outputs[-1][-4000:]
    finally:
        stop.set()
        thread.join()
        shutil.rmtree(work, ignore_errors=True)
    assert not errors, str(errors[0])[:4000]
    assert_recovered_intact(spark, table, root, expected)
    child_rounds = sum(o.count("commit_race: round") for o in outputs)
    print(f"[commit races] two catalogs: parent {sum(counts.values())} rounds {json.dumps(counts)}, "
          f"child {child_rounds} rounds, {kills} kills")
    assert child_rounds >= PROCESS_ROUNDS + 3 * (LIVES - 1) and sum(counts.values()) >= 10, (child_rounds, counts)


# ---- the commit's proofs, one adversary at a time ------------------------------------------------

def run_until_paused(session, step: str, key: str, action) -> tuple[threading.Thread, dict[str, str]]:
    """Run `action` on a thread of its own until it waits at `step` (the session's conf
    spark.sparkclustering.test.pauseAt = `<step>:wait`); the outcome dict gets its result under `key`
    or the text of its error under "error" once the test releases the step and joins the thread."""
    outcome: dict[str, str] = {}

    def run():
        try:
            outcome[key] = action()
        except Exception as e:  # noqa: BLE001 - the error is what the tests look at
            outcome["error"] = str(e)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while session.conf.get("spark.sparkclustering.test.reached", "") != step:
        assert time.monotonic() < deadline and thread.is_alive(), outcome
        time.sleep(0.05)
    return thread, outcome


def acquire_paused_before_create(spark, key: str, acquire) -> tuple:
    """`acquire(session)` on a session of its own (its own SQL conf: only its acquisition stops),
    held at the step before the lease file is created: (session, thread, outcome), as run_until_paused."""
    session = spark.newSession()
    session.conf.set("spark.sparkclustering.test.pauseAt", "before_lease_create:wait")
    return (session, *run_until_paused(session, "before_lease_create", key, lambda: acquire(session)))


def staged_round(spark, table, k=3, seed=1):
    """A writer holding the lease with copies of k files staged: (writer, token, staging, bytes, picked)."""
    w = Writer(spark, table, location(spark, table), "proof", seed)
    token = w.acquire()
    picked = sorted(w.files())[:k]
    staging, total = w.stage(picked)
    return w, token, staging, total, picked


def test_recovery_by_another_writer_waits_for_the_lease_of_a_live_one(spark, s):
    """The reported loss: a recovery ran while a commit was staged and deleted its staging; the
    commit then applied only its deletes. Now recovery needs the lease the live writer holds."""
    table = f"{s}.proof_live"
    expected = make_table(spark, table)
    w, token, staging, total, picked = staged_round(spark, table)
    with pytest.raises(Exception) as err:
        spark.sql(f"select * from table_lease_acquire('{table}', 'other', '0.5', 'table')").collect()
    assert f"table {table} is being written by race proof" in str(err.value), str(err.value)[:2000]
    assert staging.exists()
    assert w.commit(token, staging, total, picked) == "committed"
    w.release(token)
    assert w.rows() == expected


def test_a_commit_that_lost_its_lease_after_its_journal_stops_and_the_new_holder_finishes_it(spark, s):
    """A writer publishes its commit journal and stalls before applying it, so long that its lease
    lapses (its own session: a 1 s ttl, and renewal stops after 1 s unused); another writer takes
    the lease and its recovery rolls the journal forward. The stalled writer then goes on: it must
    stop with a lost-lease error naming the journal, not apply the journal beside the new holder
    (the race that once failed with a raw FileNotFoundException from a staged file's rename)."""
    table = f"{s}.proof_stale_journal"
    expected = make_table(spark, table)
    stale = spark.newSession()  # its own SQL conf: only its lease is short, only its commit stops
    for key, value in {"lease.ttlSeconds": "1", "lease.idleSeconds": "1", "test.pauseAt": "after_manifest:wait"}.items():
        stale.conf.set(f"spark.sparkclustering.{key}", value)
    w = Writer(stale, table, location(spark, table), "stale", 1)
    token = w.acquire()
    picked = sorted(w.files())[:3]
    staging, total = w.stage(picked)
    thread, outcome = run_until_paused(stale, "after_manifest", "status",
                                       lambda: w.commit(token, staging, total, picked))
    assert (staging / "_sc_manifest").exists()
    new_holder = Writer(spark, table, location(spark, table), "new holder", 2)
    token2 = new_holder.acquire()  # waits until the stalled writer's lease has lapsed
    recovered = spark.sql(f"select run_id, action from table_rewrite_recover('{table}', '{token2}', '')").collect()
    new_holder.release(token2)
    stale.conf.set("spark.sparkclustering.test.release", "after_manifest")
    thread.join(timeout=120)
    assert len(recovered) == 1 and recovered[0][1].startswith("rolled forward"), recovered
    assert "status" not in outcome, f"the stalled writer went on with its commit: {outcome['status']}"
    assert "lost the table's lease after publishing its commit journal" in outcome["error"], outcome["error"][:2000]
    assert "this run stops without applying it" in outcome["error"] and staging.name in outcome["error"]
    assert new_holder.rows() == expected and leftovers(new_holder.location) == []


def test_commit_of_files_that_are_not_the_validated_ones_aborts(spark, s):
    table = f"{s}.proof_bytes"
    expected = make_table(spark, table)
    w, token, staging, total, picked = staged_round(spark, table)
    next(staging.iterdir()).unlink()  # a staged file vanishes between validation and commit
    status = w.commit(token, staging, total, picked)
    assert status.startswith("aborted: the staged files") and "are not the ones validated" in status, status
    w.release(token)
    assert w.rows() == expected and leftovers(w.location) == []


def test_a_second_commit_of_the_same_files_aborts(spark, s):
    """Two commits planned on the same files (two catalogs without a shared lease would get here):
    the second finds its replaced files gone and changes nothing."""
    table = f"{s}.proof_twice"
    expected = make_table(spark, table)
    w, token, staging, total, picked = staged_round(spark, table)
    staging2, total2 = w.stage(picked)
    assert w.commit(token, staging, total, picked) == "committed"
    status = w.commit(token, staging2, total2, picked)
    assert status.startswith("aborted:") and "changed or vanished" in status, status
    w.release(token)
    assert w.rows() == expected and leftovers(w.location) == []


def test_journal_whose_staged_file_vanished_rolls_back_before_any_delete(spark, s):
    table = f"{s}.proof_rollback"
    expected = make_table(spark, table)
    w, token, staging, total, picked = staged_round(spark, table, k=4)
    # a published journal, one file moved in, then a staged file removed behind the package's back
    w.rng.randint = lambda a, b: 1
    w.crash_mid_commit(staging, picked)
    next(p for p in staging.iterdir() if p.name.startswith("part-")).unlink()
    rows = spark.sql(f"select run_id, action from table_rewrite_recover('{table}', '{token}', '')").collect()
    assert len(rows) == 1 and rows[0][1].startswith("rolled back (1 staged file(s) vanished"), rows
    w.release(token)
    assert w.rows() == expected and leftovers(w.location) == []


def test_journal_damaged_after_deletes_began_is_kept_aside_and_blocks_nothing(spark, s):
    table = f"{s}.proof_damaged"
    make_table(spark, table)
    w, token, staging, total, picked = staged_round(spark, table, k=3)
    w.rng.randint = lambda a, b: 4  # all 3 moves and 1 delete applied, then the crash
    w.crash_mid_commit(staging, picked)
    moved = sorted(w.location.glob("sc-l1-*"))
    moved[0].unlink()  # someone deletes a moved-in file: its rows are gone for good
    rows = spark.sql(f"select run_id, action from table_rewrite_recover('{table}', '{token}', '')").collect()
    assert len(rows) == 1 and rows[0][1].startswith("damaged ("), rows
    assert "Delete that directory once inspected" in rows[0][1]
    # later recoveries report it and go on; commits work
    rows = spark.sql(f"select run_id, action from table_rewrite_recover('{table}', '{token}', '')").collect()
    assert [r[1] for r in rows if r[1].startswith("damaged commit kept for inspection")], rows
    before = w.rows()
    picked2 = sorted(w.files())[:2]
    staging2, total2 = w.stage(picked2)
    assert w.commit(token, staging2, total2, picked2) == "committed"
    w.release(token)
    assert w.rows() == before


def test_zero_row_files_are_not_new_work(spark, s):
    """An append that selects nothing: whatever Spark writes for it, the table holds the same rows and
    recluster's listing sees no new rows (it would otherwise spend a round on it)."""
    table = f"{s}.proof_empty"
    expected = make_table(spark, table, files=2)
    before = {r[0] for r in spark.sql(f"select file_path from table_data_files('{table}')").collect()}
    spark.sql(f"insert into {table} select id, pmod(xxhash64(id), 1000), concat('r', id) from range(10) where id < 0")
    after = {r[0] for r in spark.sql(f"select file_path from table_data_files('{table}')").collect()}
    new_rows = spark.sql(f"select count(*) from {table} where _metadata.file_path in "
                         f"({', '.join(repr(p) for p in after - before) or 'null'})").first()[0]
    assert new_rows == 0
    assert Writer(spark, table, location(spark, table), "x", 0).rows() == expected


def test_a_file_being_copied_in_is_neither_listed_nor_replaced(spark, s):
    """`hadoop fs -put` writes `<name>._COPYING_` and renames it when done: Spark's listing skips it,
    and so do recluster's listing and a commit of every listed file (it is not theirs to replace)."""
    table = f"{s}.proof_copying"
    expected = make_table(spark, table, files=3)
    w = Writer(spark, table, location(spark, table), "copying", 0)
    listed = w.files()
    copying = w.location / "part-99999-incoming.parquet._COPYING_"
    copying.write_bytes(local(listed[0][0]).read_bytes()[:100])  # a copy cut short: not a parquet file yet
    assert sorted(w.files()) == sorted(listed)
    assert w.rows() == expected  # Spark's own scan skips it too
    token = w.acquire()
    staging, total = w.stage(listed)
    assert w.commit(token, staging, total, listed) == "committed"
    w.release(token)
    assert w.rows() == expected and copying.stat().st_size == 100
    assert not {p for p, _, _ in w.files()} & {p for p, _, _ in listed}


# ---- the lease against a writer that stalls while taking it --------------------------------------

def take_lease(session, table: str, owner: str, wait_seconds: float) -> str:
    return session.sql(f"select lease_token from table_lease_acquire('{table}', '{owner}', '{wait_seconds}', "
                       "'name')").first()[0]


def give_up_lease(session, token: str):
    session.sql(f"select * from table_lease_release('{token}', 'false')").collect()


@pytest.mark.parametrize("taken_meanwhile", [2, 20])
def test_a_writer_that_stalls_while_taking_the_lease_never_shares_it(spark, s, taken_meanwhile):
    """A writer found the lease free and stalled right before creating its generation file. Meanwhile
    the lease was taken and given up `taken_meanwhile` times, and now a holder has it. The stalled
    writer must wait for that holder, not hold the lease beside it. With 2, its generation number is
    taken. With 20, that number's file was taken and deleted again, so only the listing after
    creating catches it. (Before the fix, all older generations were deleted, and the stalled writer
    got the lease in both cases. This is how a killed child's successor and a live writer both held
    one in the two-catalog race.)"""
    table = f"{s}.lease_stall_{taken_meanwhile}"
    make_table(spark, table, files=1, rows_per_file=10)
    stalled, thread, outcome = acquire_paused_before_create(
        spark, "token", lambda session: take_lease(session, table, "race stalled", 1))
    for i in range(taken_meanwhile):
        give_up_lease(spark, take_lease(spark, table, f"race meanwhile {i}", 0))
    holder = take_lease(spark, table, "race holder", 0)
    stalled.conf.set("spark.sparkclustering.test.release", "before_lease_create")
    thread.join(timeout=120)
    stalled.conf.unset("spark.sparkclustering.test.pauseAt")
    try:
        assert "token" not in outcome, f"two holders at once: the stalled writer got {outcome['token']}"
        assert f"table {table} is being written by race holder" in outcome.get("error", ""), outcome
    finally:
        give_up_lease(spark, holder)
    # given up, the lease is free again for the writer that stalled
    give_up_lease(stalled, take_lease(stalled, table, "race stalled", 5))


def test_a_lease_file_read_while_it_is_rewritten_counts_as_held(spark, s):
    """A renewal truncates the lease file and writes it again, so a reader can get a prefix of it. A
    prefix cut inside `expires_ms` must count as a lease being written (held for a ttl after its
    modification time), not as one that expired in 1970."""
    table = f"{s}.lease_torn"
    make_table(spark, table, files=1, rows_per_file=10)
    first = take_lease(spark, table, "race first", 0)
    leases = location(spark, table).parent / "_sc_leases" / "lease_torn"
    newest = max(leases.glob("lease.*"), key=lambda p: int(p.suffix[1:]))
    whole = newest.read_text()  # as written while held: expires_ms is a time to come
    give_up_lease(spark, first)
    assert whole.endswith("\n") and int(whole.split("expires_ms\t")[1]) > time.time() * 1000, whole
    torn = leases / f"lease.{int(newest.suffix[1:]) + 1}"
    torn.write_text(whole.replace("race first", "race torn")[:-6])  # expires_ms loses its last digits
    try:
        with pytest.raises(Exception) as err:
            take_lease(spark, table, "race other", 0.5)
        assert f"table {table} is being written by a writer that is starting" in str(err.value), \
            str(err.value)[:2000]
    finally:
        torn.unlink(missing_ok=True)  # the fault this test catches deletes it


def acquire_waited_ms(session, table: str, owner: str, wait_seconds: float) -> tuple[str, int]:
    row = session.sql(f"select lease_token, waited_ms from table_lease_acquire('{table}', '{owner}', "
                      f"'{wait_seconds}', 'name')").first()
    return row[0], row[1]


def test_waited_ms_counts_only_the_time_another_writer_held_the_lease(spark, s):
    """`waited_ms` (dbt logs `waited <s> s for the lease` from it) is the time a writer waited while
    another held the lease, not the time taking it took: on S3 a free lease costs a few requests,
    and once a second. Free, but 1.5 s spent inside the acquisition (held at the step before the
    lease file is created): 0. Held by another writer for 2 s after the waiter started: about that."""
    table = f"{s}.lease_waited"
    make_table(spark, table, files=1, rows_per_file=10)
    slow, thread, outcome = acquire_paused_before_create(
        spark, "lease", lambda session: acquire_waited_ms(session, table, "race slow", 30))
    time.sleep(1.5)
    slow.conf.set("spark.sparkclustering.test.release", "before_lease_create")
    thread.join(timeout=60)
    slow.conf.unset("spark.sparkclustering.test.pauseAt")
    assert "lease" in outcome, outcome
    token, waited = outcome["lease"]
    give_up_lease(slow, token)
    assert waited == 0, f"no other writer held the lease, yet waited_ms = {waited}"

    holder = take_lease(spark, table, "race holder", 0)
    outcome = {}

    def wait_for_it():
        outcome["lease"] = acquire_waited_ms(spark, table, "race waiter", 30)

    waiter = threading.Thread(target=wait_for_it)
    started = time.monotonic()
    waiter.start()
    time.sleep(2.0)
    give_up_lease(spark, holder)
    held_ms = (time.monotonic() - started) * 1000  # an upper bound of the time the waiter saw it held
    waiter.join(timeout=60)
    assert "lease" in outcome, "the waiter did not get the lease once the holder gave it up"
    token, waited = outcome["lease"]
    give_up_lease(spark, token)
    # from its first look (after its statement was planned) to its first look after the release,
    # at most one poll (0.1 s) late
    assert 1000 <= waited <= held_ms + 300, f"held {held_ms:.0f} ms by another writer, waited_ms = {waited}"
