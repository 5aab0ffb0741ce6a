package org.apache.spark.sql.sparkclustering

import java.net.URI
import java.nio.charset.StandardCharsets
import java.security.MessageDigest

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path}

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, ExternalCatalogUtils}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types.{LongType, StringType}

/**
 * The file-level half of `recluster()`: list a table's data files, commit a rewrite of some of
 * them, and recover from a crash in the middle of a commit. Plain parquet/orc tables have no
 * transaction log, so the commit is a journaled set of renames and deletes:
 *
 *   1. the macro writes the rewritten rows into `<location>/_sc_recluster_<run>/` (a name Spark's
 *      file listing skips, so readers never see staged files) and validates them;
 *   2. `recluster_commit` re-lists the table and aborts, touching nothing, if the listing differs
 *      from the one the macro planned on (a concurrent write);
 *   3. it writes the journal `_sc_recluster_<run>/_sc_manifest` (moves + deletes) by an atomic
 *      rename, moves every staged file into the table, deletes the replaced files and finally
 *      removes the staging directory, whose disappearance marks the commit complete.
 *
 * `recluster_recover` rolls a staging directory forward when its manifest exists (every step is
 * idempotent) and deletes it otherwise, so a crash at any step leaves the old or the new rows.
 */
object ReclusterFiles {

  val StagingPrefix = "_sc_recluster_"
  val ManifestName = "_sc_manifest"

  /** Spark's own rule (InMemoryFileIndex): these names are not data. */
  def isHidden(name: String): Boolean =
    (name.startsWith("_") && !name.contains("=")) || name.startsWith(".")

  case class DataFile(path: Path, size: Long, modificationTime: Long) {
    /** Exactly what `_metadata.file_path` reports, so SQL can join on it: the URL-encoded URI,
     *  without the empty authority Hadoop writes for local files (`file:/x`, not `file:///x`). */
    def filePath: String = {
      val uri = path.toUri
      val text = uri.toString
      if (uri.getAuthority == null || uri.getAuthority.isEmpty) text.replaceFirst("^([A-Za-z][A-Za-z0-9+.-]*):///", "$1:/")
      else text
    }
  }

  private[sparkclustering] def classic(spark: SparkSession): org.apache.spark.sql.classic.SparkSession =
    spark.asInstanceOf[org.apache.spark.sql.classic.SparkSession]

  def table(spark: SparkSession, name: String): CatalogTable = {
    val session = classic(spark)
    val ident: TableIdentifier = session.sessionState.sqlParser.parseTableIdentifier(name)
    session.sessionState.catalog.getTableMetadata(ident)
  }

  def hadoopConf(spark: SparkSession): Configuration = classic(spark).sessionState.newHadoopConf()

  def location(t: CatalogTable): Path = new Path(t.location)

  /** Partition directory (relative, e.g. `day=2026-01-01`) -> its location, for partitioned tables. */
  def partitionLocations(spark: SparkSession, t: CatalogTable): Map[String, Path] = {
    if (t.partitionColumnNames.isEmpty) Map("" -> location(t))
    else {
      val catalog = classic(spark).sessionState.catalog
      catalog.listPartitions(t.identifier).map { p =>
        t.partitionColumnNames.map(c => ExternalCatalogUtils.getPartitionPathString(c, p.spec(c)))
          .mkString("/") -> new Path(p.location)
      }.toMap
    }
  }

  /** Every file below `root` that Spark would read (recursive, hidden names skipped), with its
   *  directory relative to `root` ("" for root itself, else e.g. `day=1`). */
  def visibleFiles(conf: Configuration, root: Path): Seq[(FileStatus, String)] = {
    val fs = root.getFileSystem(conf)
    val found = mutable.ArrayBuffer[(FileStatus, String)]()
    def walk(dir: Path, rel: String): Unit =
      fs.listStatus(dir).filterNot(s => isHidden(s.getPath.getName)).foreach { s =>
        if (s.isDirectory) walk(s.getPath, if (rel.isEmpty) s.getPath.getName else s"$rel/${s.getPath.getName}")
        else found += ((s, rel))
      }
    if (fs.exists(root)) walk(root, "")
    found.toSeq
  }

  /** Every data file Spark reads for the table: its location and every partition's location. */
  def dataFiles(spark: SparkSession, t: CatalogTable): Seq[DataFile] = {
    val conf = hadoopConf(spark)
    val roots = (Seq(location(t)) ++ partitionLocations(spark, t).values).distinct
    val seen = mutable.LinkedHashMap[String, DataFile]()
    roots.foreach { root =>
      val qualified = root.getFileSystem(conf).makeQualified(root)
      visibleFiles(conf, qualified).foreach { case (status, _) =>
        seen.getOrElseUpdate(status.getPath.toString,
          DataFile(status.getPath, status.getLen, status.getModificationTime))
      }
    }
    seen.values.toSeq
  }

  /** sha-256 of the sorted `path<TAB>size` lines; "empty" for a table without files. */
  def fingerprint(files: Seq[DataFile]): String = {
    if (files.isEmpty) "empty"
    else {
      val lines = files.map(f => s"${f.filePath}\t${f.size}").sorted.mkString("\n")
      MessageDigest.getInstance("SHA-256").digest(lines.getBytes(StandardCharsets.UTF_8))
        .map("%02x".format(_)).mkString
    }
  }

  def stagingDir(t: CatalogTable, runId: String): Path = {
    if (!runId.matches("[A-Za-z0-9_]+")) {
      throw SparkClusteringErrors.invalidArgument("recluster_commit",
        s"run id '$runId' must match [A-Za-z0-9_]+")
    }
    new Path(location(t), StagingPrefix + runId)
  }

  /** A test hook: print where we are and wait to be killed (`kill -9`) at the named step. */
  def pausePoint(pauseAt: String, step: String): Unit = {
    if (pauseAt == step) {
      System.out.println(s"spark_clustering: paused at $step")
      System.out.flush()
      Thread.sleep(600000L)
      throw new IllegalStateException(s"spark_clustering: still alive 10 minutes after pausing at $step")
    }
  }

  // ---- journal ------------------------------------------------------------------------------

  sealed trait Step
  case class Move(from: Path, to: Path) extends Step
  case class Delete(path: Path) extends Step

  private def encode(step: Step): String = step match {
    case Move(from, to) => s"move\t${from.toUri}\t${to.toUri}"
    case Delete(path) => s"delete\t${path.toUri}"
  }

  private def decode(line: String): Step = line.split("\t", -1).toSeq match {
    case Seq("move", from, to) => Move(new Path(new URI(from)), new Path(new URI(to)))
    case Seq("delete", path) => Delete(new Path(new URI(path)))
    case _ => throw new IllegalStateException(s"spark_clustering: unreadable manifest line: $line")
  }

  def writeManifest(conf: Configuration, staging: Path, steps: Seq[Step]): Unit = {
    val fs = staging.getFileSystem(conf)
    val tmp = new Path(staging, ManifestName + ".tmp")
    val out = fs.create(tmp, true)
    try out.write(steps.map(encode).mkString("", "\n", "\n").getBytes(StandardCharsets.UTF_8))
    finally out.close()
    // The rename is the commit point: before it the run rolls back, after it forward.
    if (!fs.rename(tmp, new Path(staging, ManifestName))) {
      throw new IllegalStateException(s"spark_clustering: could not publish the manifest in $staging")
    }
  }

  def readManifest(conf: Configuration, staging: Path): Option[Seq[Step]] = {
    val path = new Path(staging, ManifestName)
    val fs = path.getFileSystem(conf)
    if (!fs.exists(path)) None
    else {
      val in = fs.open(path)
      try {
        val text = new String(in.readAllBytes(), StandardCharsets.UTF_8)
        Some(text.split("\n").toSeq.filter(_.nonEmpty).map(decode))
      } finally in.close()
    }
  }

  case class Applied(moved: Int, deleted: Int)

  /** Apply the journal; safe to repeat after a crash at any point of an earlier attempt. */
  def applySteps(conf: Configuration, steps: Seq[Step], pauseAt: String): Applied = {
    var moved = 0
    var deleted = 0
    val moves = steps.collect { case m: Move => m }
    val deletes = steps.collect { case d: Delete => d }
    moves.foreach { case Move(from, to) =>
      val fs = from.getFileSystem(conf)
      if (fs.exists(from)) {
        fs.mkdirs(to.getParent)
        // A destination without its source cannot exist (names are unique per run), so an
        // existing destination is a partial copy on a non-atomic store: replace it.
        if (fs.exists(to)) fs.delete(to, false)
        if (!fs.rename(from, to)) {
          throw new IllegalStateException(s"spark_clustering: could not move $from to $to")
        }
        moved += 1
        if (moved == 1) pausePoint(pauseAt, "after_first_move")
      } else if (!fs.exists(to)) {
        throw new IllegalStateException(
          s"spark_clustering: neither the staged file $from nor its destination $to exists")
      }
    }
    pausePoint(pauseAt, "after_moves")
    deletes.foreach { case Delete(path) =>
      val fs = path.getFileSystem(conf)
      if (fs.exists(path) && fs.delete(path, false)) deleted += 1
    }
    pausePoint(pauseAt, "after_deletes")
    Applied(moved, deleted)
  }

  def refreshTable(spark: SparkSession, t: CatalogTable): Unit =
    classic(spark).catalog.refreshTable(t.identifier.unquotedString)
}

/** `select * from recluster_data_files('db.t')`: path (as `_metadata.file_path`), size, mtime and
 *  the listing's fingerprint (the same on every row) of every data file of the table. */
case class ReclusterDataFiles(tableName: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("file_path", StringType, nullable = false)(),
    AttributeReference("file_size", LongType, nullable = false)(),
    AttributeReference("modification_time", LongType, nullable = false)(),
    AttributeReference("fingerprint", StringType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val files = ReclusterFiles.dataFiles(spark, ReclusterFiles.table(spark, tableName))
    val fp = ReclusterFiles.fingerprint(files)
    files.map(f => Row(f.filePath, f.size, f.modificationTime, fp))
  }
}

/** `select * from recluster_commit('db.t', run_id, file_prefix, expected_fingerprint,
 *  array(replaced file paths), pause_at)`: one row (status, files_added, files_removed,
 *  bytes_added, bytes_removed). status is `committed` or `aborted: <why>`; an abort deletes the
 *  staged files and leaves the table as it was. */
case class ReclusterCommit(tableName: String, runId: String, filePrefix: String,
    expectedFingerprint: String, replaced: Seq[String], pauseAt: String) extends LeafRunnableCommand {

  override val output: Seq[Attribute] = Seq(
    AttributeReference("status", StringType, nullable = false)(),
    AttributeReference("files_added", LongType, nullable = false)(),
    AttributeReference("files_removed", LongType, nullable = false)(),
    AttributeReference("bytes_added", LongType, nullable = false)(),
    AttributeReference("bytes_removed", LongType, nullable = false)())

  import ReclusterFiles._

  override def run(spark: SparkSession): Seq[Row] = {
    if (!filePrefix.matches("[A-Za-z0-9_-]+")) {
      throw SparkClusteringErrors.invalidArgument("recluster_commit",
        s"file prefix '$filePrefix' must match [A-Za-z0-9_-]+")
    }
    val t = table(spark, tableName)
    val conf = hadoopConf(spark)
    val staging = stagingDir(t, runId)
    val fs = staging.getFileSystem(conf)

    def abort(why: String): Seq[Row] = {
      fs.delete(staging, true)
      Seq(Row(s"aborted: $why", 0L, 0L, 0L, 0L))
    }

    if (!fs.exists(staging)) return Seq(Row("aborted: nothing staged", 0L, 0L, 0L, 0L))
    val current = dataFiles(spark, t)
    if (fingerprint(current) != expectedFingerprint) {
      return abort("the table's files changed since the recluster read them (a concurrent write); " +
        "nothing was changed, the next recluster will start over")
    }
    val byPath = current.map(f => f.filePath -> f).toMap
    val missing = replaced.filterNot(byPath.contains)
    if (missing.nonEmpty) {
      return abort(s"${missing.size} file(s) to replace are not data files of the table, e.g. ${missing.head}")
    }

    // Staged files keep their partition directory; they land in the partition's own location.
    val partitions = partitionLocations(spark, t)
    val staged = visibleFiles(conf, staging).map { case (status, rel) => (status.getPath, rel, status.getLen) }
    val moves = staged.sortBy(_._1.toString).zipWithIndex.map { case ((from, rel, _), i) =>
      val dir = partitions.getOrElse(rel, throw new IllegalStateException(
        s"spark_clustering: staged partition '$rel' is not a partition of $tableName"))
      val name = from.getName
      val suffix = name.indexOf('.') match { case -1 => "" case k => name.substring(k) }
      Move(from, new Path(dir, f"$filePrefix-$i%05d$suffix"))
    }
    val deletes = replaced.map(p => Delete(byPath(p).path))

    pausePoint(pauseAt, "before_manifest")
    writeManifest(conf, staging, moves.toSeq ++ deletes)
    pausePoint(pauseAt, "after_manifest")
    applySteps(conf, moves.toSeq ++ deletes, pauseAt)
    fs.delete(staging, true)
    refreshTable(spark, t)
    Seq(Row("committed", moves.size.toLong, deletes.size.toLong, staged.map(_._3).sum,
      replaced.map(p => byPath(p).size).sum))
  }
}

/** `select * from recluster_recover('db.t')`: finish (manifest present) or roll back (absent)
 *  every interrupted commit of the table; one row per staging directory (run_id, action). */
case class ReclusterRecover(tableName: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("run_id", StringType, nullable = false)(),
    AttributeReference("action", StringType, nullable = false)())

  import ReclusterFiles._

  override def run(spark: SparkSession): Seq[Row] = {
    val t = table(spark, tableName)
    val conf = hadoopConf(spark)
    val root = location(t)
    val fs = root.getFileSystem(conf)
    if (!fs.exists(root)) return Seq.empty
    val rows = fs.listStatus(root).filter(s => s.isDirectory && s.getPath.getName.startsWith(StagingPrefix))
      .sortBy(_.getPath.getName).map { s =>
        val runId = s.getPath.getName.stripPrefix(StagingPrefix)
        val action = readManifest(conf, s.getPath) match {
          case Some(steps) =>
            val applied = applySteps(conf, steps, pauseAt = "")
            s"rolled forward (${applied.moved} files moved, ${applied.deleted} deleted)"
          case None => "rolled back (staged files deleted)"
        }
        fs.delete(s.getPath, true)
        Row(runId, action)
      }.toSeq
    if (rows.nonEmpty) refreshTable(spark, t)
    rows
  }
}
