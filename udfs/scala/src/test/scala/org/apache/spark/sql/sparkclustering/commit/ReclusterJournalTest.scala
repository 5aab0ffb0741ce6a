package org.apache.spark.sql.sparkclustering
package commit

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.junit.{After, Before, Test}
import org.junit.Assert._

import CommitJournal.{Damaged, Delete, Move, RolledBack, RolledForward}
import org.apache.spark.sql.sparkclustering.snapshot.InFlightCommits
import org.apache.spark.sql.sparkclustering.tables.DataFile
import org.apache.spark.sql.sparkclustering.tables.DataFiles

/** The recluster journal (CommitJournal): its manifest read back as written, and its replay on a
 *  local directory from the states a crash can leave, without a Spark session. */
class ReclusterJournalTest {

  private val conf = new Configuration()
  private var dir: java.nio.file.Path = _
  private var table: Path = _
  private var staging: Path = _

  @Before def createTable(): Unit = {
    dir = Files.createTempDirectory("sc-journal-test")
    table = new Path(dir.toUri)
    staging = new Path(table, CommitJournal.StagingPrefix + "r1")
  }

  @After def removeTable(): Unit =
    Files.walk(dir).sorted(java.util.Comparator.reverseOrder()).forEach(p => Files.delete(p))

  private def local(p: Path) = Paths.get(p.toUri)
  private def write(p: Path, text: String): Path = {
    Files.createDirectories(local(p).getParent)
    Files.write(local(p), text.getBytes(StandardCharsets.UTF_8))
    p
  }
  private def read(p: Path): String = new String(Files.readAllBytes(local(p)), StandardCharsets.UTF_8)
  /** The table's data file names (hidden names, e.g. checksums and the staging directory, left out). */
  private def dataFiles(): Set[String] = {
    val stream = Files.list(dir)
    try stream.toArray.map(_.toString).map(p => p.substring(p.lastIndexOf('/') + 1))
      .filterNot(DataFiles.isHidden).toSet
    finally stream.close()
  }

  @Test def manifestReadsBackAsWritten(): Unit = {
    val steps = Seq(
      Move(new Path(staging, "part 0%.parquet"), new Path(table, "day=2026-01-01/sc-l1-r1-part 0%.parquet"), 123L),
      CommitJournal.Complete(new Path(staging, "x.pending"), new Path(table, "sc-l1-r1-x.parquet"), 7L),
      Delete(new Path(table, "old é.parquet")))
    assertEquals(None, CommitJournal.readManifest(conf, staging))
    CommitJournal.writeManifest(conf, staging, steps)
    assertEquals(Some(steps), CommitJournal.readManifest(conf, staging))
    assertFalse("the temporary manifest is renamed", Files.exists(local(new Path(staging, "_sc_manifest.tmp"))))
  }

  @Test def manifestLinesOfOlderWritersAndDamagedOnes(): Unit = {
    val manifest = new Path(staging, CommitJournal.ManifestName)
    // a move without the size (older writers): size unknown
    write(manifest, s"move\t${new Path(staging, "a").toUri}\t${new Path(table, "a").toUri}\n")
    assertEquals(Some(Seq(Move(new Path(staging, "a"), new Path(table, "a"), -1L))),
      CommitJournal.readManifest(conf, staging))
    write(manifest, "rename\tx\ty\n")
    try {
      CommitJournal.readManifest(conf, staging)
      fail("an unreadable line must not be skipped")
    } catch {
      case e: IllegalStateException => assertTrue(e.getMessage, e.getMessage.contains("unreadable manifest line: rename"))
    }
  }

  /** Two old files replaced by two new ones: the new files staged, the journal published. */
  private def commitInFlight(): Seq[CommitJournal.Step] = {
    write(new Path(table, "old-1.parquet"), "old one")
    write(new Path(table, "old-2.parquet"), "old two")
    val steps = Seq(
      Move(write(new Path(staging, "n1"), "new one"), new Path(table, "sc-l1-r1-n1.parquet"), 7L),
      Move(write(new Path(staging, "n2"), "new two!"), new Path(table, "sc-l1-r1-n2.parquet"), 8L),
      Delete(new Path(table, "old-1.parquet")), Delete(new Path(table, "old-2.parquet")))
    CommitJournal.writeManifest(conf, staging, steps)
    steps
  }

  @Test def replayRollsForwardFromACrashBetweenMovesAndIsIdempotent(): Unit = {
    val steps = commitInFlight()
    // the crash: n1 moved in, n2 half copied (a rename that copies, interrupted)
    Files.move(local(new Path(staging, "n1")), local(new Path(table, "sc-l1-r1-n1.parquet")))
    write(new Path(table, "sc-l1-r1-n2.parquet"), "new")
    assertEquals(RolledForward(1, 2), CommitJournal.applySteps(null, conf, staging, steps))
    assertEquals(Set("sc-l1-r1-n1.parquet", "sc-l1-r1-n2.parquet"), dataFiles())
    assertEquals("new two!", read(new Path(table, "sc-l1-r1-n2.parquet")))
    // a second replay (a recovery after a crash at the end) changes nothing
    assertEquals(RolledForward(0, 0), CommitJournal.applySteps(null, conf, staging, steps))
    assertEquals(Set("sc-l1-r1-n1.parquet", "sc-l1-r1-n2.parquet"), dataFiles())
    assertEquals("new one", read(new Path(table, "sc-l1-r1-n1.parquet")))
  }

  @Test def replayRollsBackWhenAStagedFileVanishedBeforeAnyDelete(): Unit = {
    val steps = commitInFlight()
    Files.move(local(new Path(staging, "n1")), local(new Path(table, "sc-l1-r1-n1.parquet")))
    Files.delete(local(new Path(staging, "n2"))) // removed behind the package's back
    val outcome = CommitJournal.applySteps(null, conf, staging, steps)
    assertTrue(outcome.toString, outcome.isInstanceOf[RolledBack])
    assertTrue(outcome.describe, outcome.describe.contains("1 staged file(s) vanished"))
    // the old rows, whole: the new file that was in place is taken out again
    assertEquals(Set("old-1.parquet", "old-2.parquet"), dataFiles())
  }

  @Test def replayRollsBackAStagedFileThatChangedSize(): Unit = {
    val steps = commitInFlight()
    write(new Path(staging, "n2"), "new two, longer")
    val outcome = CommitJournal.applySteps(null, conf, staging, steps)
    assertTrue(outcome.describe, outcome.describe.contains("changed size since validation"))
    assertEquals(Set("old-1.parquet", "old-2.parquet"), dataFiles())
  }

  @Test def replayStopsOnADamagedCommitAndKeepsItsJournal(): Unit = {
    val steps = commitInFlight()
    Files.move(local(new Path(staging, "n1")), local(new Path(table, "sc-l1-r1-n1.parquet")))
    Files.delete(local(new Path(staging, "n2")))
    Files.delete(local(new Path(table, "old-1.parquet"))) // deletes had begun: no way back
    CommitJournal.applySteps(null, conf, staging, steps) match {
      case Damaged(_, keptAt) =>
        assertEquals(CommitJournal.DamagedPrefix + "r1", keptAt.getName)
        assertTrue(Files.exists(local(new Path(keptAt, CommitJournal.ManifestName))))
        assertFalse(Files.exists(local(staging)))
      case other => fail(s"not damaged: $other")
    }
    // nothing more is touched
    assertEquals(Set("sc-l1-r1-n1.parquet", "old-2.parquet"), dataFiles())
  }

  @Test def namesOfRunsAndHiddenFiles(): Unit = {
    assertEquals(Some("abc_12"), InFlightCommits.runOf("sc-l2-abc_12-part-00000.parquet"))
    assertEquals(None, InFlightCommits.runOf("part-00000-sc-l2-abc.parquet"))
    assertEquals(None, InFlightCommits.runOf("sc-lx-abc-part.parquet"))
    assertTrue(CommitJournal.isRunPrefix("sc-l3-run1", "run1"))
    assertFalse(CommitJournal.isRunPrefix("sc-l3-run1", "run"))
    assertFalse(CommitJournal.isRunPrefix("sc-l3-run1-x", "run1"))
    Seq("_SUCCESS", "_sc_recluster_r1", ".part.crc", "part-0.parquet._COPYING_").foreach(n =>
      assertTrue(n, DataFiles.isHidden(n)))
    Seq("part-0.parquet", "_day=1", "sc-l1-r1-x.parquet").foreach(n => assertFalse(n, DataFiles.isHidden(n)))
  }

  @Test def filePathIsWhatSparkReportsAsMetadataFilePath(): Unit = {
    assertEquals("file:/tmp/t/a%20b.parquet",
      DataFile(new Path("file:///tmp/t/a b.parquet"), 1L, 0L).filePath)
    assertEquals("s3a://bucket/t/x.parquet", DataFile(new Path("s3a://bucket/t/x.parquet"), 1L, 0L).filePath)
  }
}
