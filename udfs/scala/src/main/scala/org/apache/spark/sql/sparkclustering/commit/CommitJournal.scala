package org.apache.spark.sql.sparkclustering
package commit

import java.net.URI
import java.nio.charset.StandardCharsets

import scala.util.Try

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.sql.SparkSession

/**
 * The commit journal of a plain parquet/orc table's rewrite (PlainTableRewrite): such a table has
 * no transaction log, so the commit is a journaled set of renames and deletes:
 *
 *   1. the macro writes the rewritten rows into `<location>/_sc_recluster_<run>/` (a name Spark's
 *      file listing skips, so readers never see staged files) and validates them;
 *   2. `table_rewrite_commit` checks that the caller still holds the table's lease, that the staged
 *      files are the bytes that were validated and that every file it replaces is still as it was
 *      read (size + mtime), and aborts, touching nothing, otherwise;
 *   3. it writes the journal `_sc_recluster_<run>/_sc_manifest` (moves + deletes) by an atomic
 *      rename, moves every staged file into the table, deletes the replaced files and finally
 *      removes the staging directory, whose disappearance marks the commit complete.
 *
 * `table_rewrite_recover` rolls a staging directory forward when its manifest exists (every step is
 * idempotent) and deletes it otherwise, so a crash at any step leaves the old or the new rows.
 *
 * On S3A a move would copy every object, so there the files are not staged but written as pending
 * uploads to their final names (PendingUploads), and the journal's `complete` steps publish them
 * with one request each; the rest is the same.
 */
private[sparkclustering] object CommitJournal {

  val StagingPrefix = "_sc_recluster_"
  val ManifestName = "_sc_manifest"
  val DamagedPrefix = "_sc_damaged_"

  /** `sc-l<level>-<run>`: how the files a recluster commit puts in place begin (and a format
   *  rewrite's staging directory is named), the level and run of the rewrite; readers find a file's
   *  run, and so the run's journal, by it (InFlightCommits). Group 1: the run. */
  val RunPrefixPattern = "sc-l[0-9]+-([A-Za-z0-9_]+)"
  private val RunPrefix = RunPrefixPattern.r

  /** Whether `prefix` is `sc-l<level>-<run>` of the run `run`. */
  def isRunPrefix(prefix: String, run: String): Boolean = RunPrefix.unapplySeq(prefix).contains(List(run))

  /** A staged file moved into the table; `size` is the staged file's size when it was validated. */
  sealed trait Step
  case class Move(from: Path, to: Path, size: Long) extends Step
  /** A pending upload (described by its `.pending` file) completed at `to`, of `size` bytes. */
  case class Complete(pending: Path, to: Path, size: Long) extends Step
  case class Delete(path: Path) extends Step

  private def encode(step: Step): String = step match {
    case Move(from, to, size) => s"move\t${from.toUri}\t${to.toUri}\t$size"
    case Complete(pending, to, size) => s"complete\t${pending.toUri}\t${to.toUri}\t$size"
    case Delete(path) => s"delete\t${path.toUri}"
  }

  private def decode(line: String): Step = line.split("\t", -1).toSeq match {
    case Seq("move", from, to, size) => Move(new Path(new URI(from)), new Path(new URI(to)), size.toLong)
    case Seq("move", from, to) => Move(new Path(new URI(from)), new Path(new URI(to)), -1L)
    case Seq("complete", pending, to, size) => Complete(new Path(new URI(pending)), new Path(new URI(to)), size.toLong)
    case Seq("delete", path) => Delete(new Path(new URI(path)))
    case _ => throw new IllegalStateException(s"spark_clustering: unreadable manifest line: $line")
  }

  def writeManifest(conf: Configuration, staging: Path, steps: Seq[Step]): Unit = {
    val fs = staging.getFileSystem(conf)
    val bytes = steps.map(encode).mkString("", "\n", "\n").getBytes(StandardCharsets.UTF_8)
    if (ObjectStore.is(fs)) {
      // an object appears whole when its upload completes: that PUT is the commit point (a rename
      // would be a copy)
      val out = fs.create(new Path(staging, ManifestName), true)
      try out.write(bytes) finally out.close()
      return
    }
    val tmp = new Path(staging, ManifestName + ".tmp")
    val out = fs.create(tmp, true)
    try out.write(bytes)
    finally out.close()
    // The rename is the commit point: before it the run rolls back, after it forward.
    if (!fs.rename(tmp, new Path(staging, ManifestName))) {
      throw new IllegalStateException(s"spark_clustering: could not publish the manifest in $staging")
    }
  }

  def readManifest(conf: Configuration, staging: Path): Option[Seq[Step]] =
    readLines(conf, new Path(staging, ManifestName)).map(_.map(decode))

  /** The non-empty lines of a small text file, or None when there is none. Opened directly, not
   *  checked first: on S3 `exists` of a missing object costs a HEAD and a LIST. */
  def readLines(conf: Configuration, path: Path): Option[Seq[String]] = {
    val fs = path.getFileSystem(conf)
    val in = try fs.open(path) catch { case _: java.io.FileNotFoundException => return None }
    try Some(new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n").toSeq.filter(_.nonEmpty))
    finally in.close()
  }

  /** What applying a journal did: rolled forward (moved, deleted), rolled back (a staged file was
   *  gone before its move and nothing was deleted yet: the table is as before), or damaged (files
   *  were removed behind the package's back after deletes had begun: nothing more is touched). */
  sealed trait Outcome { def describe: String }
  case class RolledForward(moved: Int, deleted: Int) extends Outcome {
    def describe: String = s"rolled forward ($moved files moved, $deleted deleted)"
  }
  case class RolledBack(why: String) extends Outcome {
    def describe: String = s"rolled back ($why; the replaced files were kept, the table is as before)"
  }
  case class Damaged(why: String, keptAt: Path) extends Outcome {
    def describe: String = s"damaged ($why); the journal is kept at $keptAt for inspection: the table holds " +
      "the rows of every file still present. Delete that directory once inspected."
  }

  /** Apply the journal; safe to repeat after a crash at any point of an earlier attempt, and never
   *  deletes a replaced file unless every new file is in place. `deleteDelayMillis`: how long the
   *  replaced files stay after the new ones are in place (SparkClusteringConf.CommitDeleteDelaySeconds). */
  def applySteps(spark: SparkSession, conf: Configuration, staging: Path, steps: Seq[Step],
      deleteDelayMillis: Long = 0L): Outcome = {
    val moves = steps.collect { case m: Move => m }
    val completes = steps.collect { case c: Complete => c }
    val deletes = steps.collect { case d: Delete => d }
    def exists(p: Path) = p.getFileSystem(conf).exists(p)
    def sizeOf(p: Path) = Try(p.getFileSystem(conf).getFileStatus(p).getLen).toOption
    // Each pending upload: completed (its object is in place), still pending (its `.pending` file is
    // there), or nowhere. Completing one twice is harmless: the first is kept.
    val completed = completes.filter(c => sizeOf(c.to).contains(c.size))
    val toComplete = completes.filterNot(completed.contains).filter(c => exists(c.pending))
    val unpublished = completes.filterNot(c => completed.contains(c) || toComplete.contains(c))
    def undo(why: String): Option[Outcome] = {
      if (deletes.forall(d => exists(d.path))) {
        // nothing replaced is gone yet: undo what was published, the old files hold every row
        Parallel.foreach(moves.filter(m => !exists(m.from)) ++ completes) { step =>
          val to = step match { case m: Move => m.to case c: Complete => c.to case _ => null }
          if (to != null && exists(to)) to.getFileSystem(conf).delete(to, false)
        }
        Parallel.foreach(toComplete)(c => Try(PendingUploads.abort(c.pending.getFileSystem(conf), c.pending)))
        Some(RolledBack(why))
      } else None
    }
    // Where is each new file? staged (to move), in place (moved), or nowhere (removed by someone else).
    val pending = moves.filter(m => exists(m.from))
    val placed = moves.filterNot(pending.contains).filter(m => sizeOf(m.to).exists(s => m.size < 0 || s == m.size))
    val lost = moves.filterNot(m => pending.contains(m) || placed.contains(m))
    val wrongSize = pending.filter(m => m.size >= 0 && !sizeOf(m.from).contains(m.size))
    def damaged(why: String): Outcome = {
      val kept = new Path(staging.getParent, DamagedPrefix + staging.getName.stripPrefix(StagingPrefix))
      staging.getFileSystem(conf).rename(staging, kept)
      Damaged(why, kept)
    }
    if (lost.nonEmpty || wrongSize.nonEmpty || unpublished.nonEmpty) {
      val why = (lost.headOption.map(m => s"${lost.size} staged file(s) vanished before being moved in, e.g. ${m.from}") ++
        wrongSize.headOption.map(m => s"${wrongSize.size} staged file(s) changed size since validation, e.g. ${m.from}") ++
        unpublished.headOption.map(c => s"${unpublished.size} pending upload(s) vanished before being completed, e.g. ${c.to}"))
        .mkString("; ")
      return undo(why).getOrElse(damaged(why))
    }
    // One request per pending upload; one whose upload is gone (aborted by someone else, e.g. a
    // bucket lifecycle rule) is reported after the others, before any replaced file is deleted.
    val failed = new java.util.concurrent.ConcurrentLinkedQueue[String]()
    val completedFirst = new java.util.concurrent.atomic.AtomicBoolean(false)
    Parallel.foreach(toComplete) { c =>
      val fs = c.pending.getFileSystem(conf)
      try PendingUploads.complete(fs, c.pending) catch {
        case e: java.io.IOException if !sizeOf(c.to).contains(c.size) => failed.add(s"${c.to}: ${e.getMessage}")
      }
      if (completedFirst.compareAndSet(false, true)) TestPausePoints.at(spark, "after_first_move")
    }
    if (!failed.isEmpty) {
      val why = s"${failed.size} pending upload(s) could not be completed, e.g. ${failed.peek()}"
      return undo(why).getOrElse(damaged(why))
    }
    val dirs = pending.map(_.to.getParent).distinct
    dirs.foreach(d => d.getFileSystem(conf).mkdirs(d))
    val movedFirst = new java.util.concurrent.atomic.AtomicBoolean(false)
    Parallel.foreach(pending) { case Move(from, to, size) =>
      val fs = from.getFileSystem(conf)
      val existing = Try(fs.getFileStatus(to).getLen).toOption
      if (existing.exists(s => size >= 0 && s == size)) {
        // complete already (a rename that copies, on object stores): the staged copy is surplus
        fs.delete(from, false)
      } else {
        // a partial copy from an interrupted move: replace it
        if (existing.isDefined) fs.delete(to, false)
        val renamed = try fs.rename(from, to) catch { case _: java.io.FileNotFoundException => false }
        // another run applying the same journal (a recovery) may have moved it just now
        def movedByOther = !fs.exists(from) && Try(fs.getFileStatus(to).getLen).toOption.exists(s => size < 0 || s == size)
        if (!renamed && !movedByOther) throw new IllegalStateException(s"spark_clustering: could not move $from to $to")
      }
      if (movedFirst.compareAndSet(false, true)) TestPausePoints.at(spark, "after_first_move")
    }
    TestPausePoints.at(spark, "after_moves")
    // scans planned meanwhile by readers with the extension read the new files (InFlightCommits);
    // the delay lets scans planned before the commit finish reading the old ones
    if (deleteDelayMillis > 0 && deletes.nonEmpty) Thread.sleep(deleteDelayMillis)
    val deleted = new java.util.concurrent.atomic.AtomicInteger(0)
    val (stored, local) = deletes.partition(d => ObjectStore.is(d.path.getFileSystem(conf)))
    Parallel.foreach(local) { case Delete(path) =>
      val fs = path.getFileSystem(conf)
      if (fs.exists(path) && fs.delete(path, false)) deleted.incrementAndGet()
    }
    // On an object store one request deletes a page of objects (S3: up to 250 with S3A's default),
    // and an object already gone is no error: a window of one request instead of a HEAD and a
    // DELETE per file
    stored.groupBy(_.path.getParent).foreach { case (dir, inDir) =>
      deleted.addAndGet(SparkLine.deleteAll(dir.getFileSystem(conf), dir, inDir.map(_.path)))
    }
    TestPausePoints.at(spark, "after_deletes")
    RolledForward(pending.size + toComplete.size, deleted.get)
  }
}
