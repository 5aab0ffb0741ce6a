package org.apache.spark.sql.sparkclustering

import java.net.URI
import java.nio.charset.StandardCharsets

import scala.collection.mutable
import scala.util.Try

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path}

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, CatalogTableType, ExternalCatalogUtils}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.{CommandUtils, LeafRunnableCommand}
import org.apache.spark.sql.types.{LongType, StringType}

/**
 * The file-level half of `recluster()`: list a table's data files, commit a rewrite of some of
 * them, and recover from a crash in the middle of a commit. Plain parquet/orc tables have no
 * transaction log, so the commit is a journaled set of renames and deletes:
 *
 *   1. the macro writes the rewritten rows into `<location>/_sc_recluster_<run>/` (a name Spark's
 *      file listing skips, so readers never see staged files) and validates them;
 *   2. `recluster_commit` checks that the caller still holds the table's lease, that the staged
 *      files are the bytes that were validated and that every file it replaces is still as it was
 *      read (size + mtime), and aborts, touching nothing, otherwise;
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
  val DamagedPrefix = "_sc_damaged_"

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

  /** The table's metadata, or None when there is no such table (one metastore read; any other
   *  failure is thrown). */
  def tableIfExists(spark: SparkSession, ident: TableIdentifier): Option[CatalogTable] =
    try Some(classic(spark).sessionState.catalog.getTableMetadata(ident)) catch {
      case _: NoSuchTableException => None
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

  /** Test hook (conf spark.sparkclustering.test.pauseAt), inert unless set. `<step>`: print where we
   *  are and sleep, to be killed (`kill -9`) at that step. `<step>:fail`: throw "injected failure at
   *  <step>" (what the macros' test hook 'fail' raises). `<step>:wait`: set the session conf
   *  spark.sparkclustering.test.reached=<step> and wait (at most 10 minutes) until a test sets
   *  spark.sparkclustering.test.release=<step>, so it can run a concurrent writer at that step. */
  def pausePoint(spark: SparkSession, step: String): Unit = spark.conf.get("spark.sparkclustering.test.pauseAt", "") match {
    case `step` =>
      System.out.println(s"spark_clustering: paused at $step")
      System.out.flush()
      Thread.sleep(600000L)
      throw new IllegalStateException(s"spark_clustering: still alive 10 minutes after pausing at $step")
    case held if held == s"$step:fail" =>
      throw new IllegalStateException(s"spark_clustering: injected failure at $step (test hook)")
    case held if held == s"$step:wait" =>
      spark.conf.set("spark.sparkclustering.test.reached", step)
      val deadline = System.currentTimeMillis() + 600000L
      while (spark.conf.get("spark.sparkclustering.test.release", "") != step) {
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException(s"spark_clustering: nobody released $step within 10 minutes")
        }
        Thread.sleep(20L)
      }
    case _ =>
  }

  // ---- journal ------------------------------------------------------------------------------

  /** A staged file moved into the table; `size` is the staged file's size when it was validated. */
  sealed trait Step
  case class Move(from: Path, to: Path, size: Long) extends Step
  case class Delete(path: Path) extends Step

  private def encode(step: Step): String = step match {
    case Move(from, to, size) => s"move\t${from.toUri}\t${to.toUri}\t$size"
    case Delete(path) => s"delete\t${path.toUri}"
  }

  private def decode(line: String): Step = line.split("\t", -1).toSeq match {
    case Seq("move", from, to, size) => Move(new Path(new URI(from)), new Path(new URI(to)), size.toLong)
    case Seq("move", from, to) => Move(new Path(new URI(from)), new Path(new URI(to)), -1L)
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

  /** Run `f` over `items` on up to 16 threads: the moves (and the deletes) of a commit land close
   *  together, which keeps the window in which a reader's listing sees both old and new files short. */
  private def parallel[T](items: Seq[T])(f: T => Unit): Unit = {
    if (items.size <= 1) items.foreach(f)
    else {
      val pool = java.util.concurrent.Executors.newFixedThreadPool(math.min(16, items.size))
      try {
        val futures = items.map(i => pool.submit(new java.util.concurrent.Callable[Unit] { def call(): Unit = f(i) }))
        futures.foreach(fu => try fu.get() catch { case e: java.util.concurrent.ExecutionException => throw e.getCause })
      } finally pool.shutdown()
    }
  }

  /** Apply the journal; safe to repeat after a crash at any point of an earlier attempt, and never
   *  deletes a replaced file unless every new file is in place. */
  def applySteps(spark: SparkSession, conf: Configuration, staging: Path, steps: Seq[Step]): Outcome = {
    val moves = steps.collect { case m: Move => m }
    val deletes = steps.collect { case d: Delete => d }
    def exists(p: Path) = p.getFileSystem(conf).exists(p)
    def sizeOf(p: Path) = Try(p.getFileSystem(conf).getFileStatus(p).getLen).toOption
    // Where is each new file? staged (to move), in place (moved), or nowhere (removed by someone else).
    val pending = moves.filter(m => exists(m.from))
    val placed = moves.filterNot(pending.contains).filter(m => sizeOf(m.to).exists(s => m.size < 0 || s == m.size))
    val lost = moves.filterNot(m => pending.contains(m) || placed.contains(m))
    val wrongSize = pending.filter(m => m.size >= 0 && !sizeOf(m.from).contains(m.size))
    if (lost.nonEmpty || wrongSize.nonEmpty) {
      val why = (lost.headOption.map(m => s"${lost.size} staged file(s) vanished before being moved in, e.g. ${m.from}") ++
        wrongSize.headOption.map(m => s"${wrongSize.size} staged file(s) changed size since validation, e.g. ${m.from}"))
        .mkString("; ")
      if (deletes.forall(d => exists(d.path))) {
        // nothing replaced is gone yet: undo the moves, the old files hold every row
        parallel(placed)(m => m.to.getFileSystem(conf).delete(m.to, false))
        return RolledBack(why)
      }
      val kept = new Path(staging.getParent, DamagedPrefix + staging.getName.stripPrefix(StagingPrefix))
      staging.getFileSystem(conf).rename(staging, kept)
      return Damaged(why, kept)
    }
    val dirs = pending.map(_.to.getParent).distinct
    dirs.foreach(d => d.getFileSystem(conf).mkdirs(d))
    val movedFirst = new java.util.concurrent.atomic.AtomicBoolean(false)
    parallel(pending) { case Move(from, to, size) =>
      val fs = from.getFileSystem(conf)
      val existing = Try(fs.getFileStatus(to).getLen).toOption
      if (existing.exists(s => size >= 0 && s == size)) {
        // complete already (a rename that copies, on object stores): the staged copy is surplus
        fs.delete(from, false)
      } else {
        // a partial copy from an interrupted move: replace it
        if (existing.isDefined) fs.delete(to, false)
        if (!fs.rename(from, to)) throw new IllegalStateException(s"spark_clustering: could not move $from to $to")
      }
      if (movedFirst.compareAndSet(false, true)) pausePoint(spark, "after_first_move")
    }
    pausePoint(spark, "after_moves")
    val deleted = new java.util.concurrent.atomic.AtomicInteger(0)
    parallel(deletes) { case Delete(path) =>
      val fs = path.getFileSystem(conf)
      if (fs.exists(path) && fs.delete(path, false)) deleted.incrementAndGet()
    }
    pausePoint(spark, "after_deletes")
    RolledForward(pending.size, deleted.get)
  }

  // ---- leases ---------------------------------------------------------------------------------

  /** The lease of a table name: `<database location>/_sc_leases/<table>`. It survives the renames
   *  of clustered_table's swap (which move a managed table's directory). */
  def nameLeaseDir(spark: SparkSession, tableName: String): Path = {
    val session = classic(spark)
    val ident = session.sessionState.sqlParser.parseTableIdentifier(tableName)
    val catalog = session.sessionState.catalog
    val db = ident.database.getOrElse(catalog.getCurrentDatabase)
    new Path(new Path(catalog.getDatabaseMetadata(db).locationUri), s"_sc_leases/${ident.table.toLowerCase}")
  }

  /** The lease of a table's location: `<location>/_sc_lease`, shared by every catalog whose table
   *  points there. */
  def locationLeaseDir(t: CatalogTable): Path = new Path(location(t), "_sc_lease")

  def refreshTable(spark: SparkSession, t: CatalogTable): Unit =
    classic(spark).catalog.refreshTable(t.identifier.unquotedString)
}

/** `select * from recluster_data_files('db.t')`: path (as `_metadata.file_path`), size, mtime and
 *  of every data file of the table. */
case class ReclusterDataFiles(tableName: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("file_path", StringType, nullable = false)(),
    AttributeReference("file_size", LongType, nullable = false)(),
    AttributeReference("modification_time", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    ReclusterFiles.dataFiles(spark, ReclusterFiles.table(spark, tableName))
      .map(f => Row(f.filePath, f.size, f.modificationTime))
  }
}

/** `select * from recluster_commit('db.t', lease_token, staging_dir, file_prefix, validated_bytes,
 *  array('<size>:<mtime>:<path>', ...))`: one row (status, files_added, files_removed, bytes_added,
 *  bytes_removed). status is `committed`, `aborted: <why>` (the staged files are deleted, the table
 *  is as it was) or `rolled back: <why>`.
 *
 *  It proves what it commits: the caller holds the table's lease (checked here, before the commit
 *  point), the staged files are exactly the bytes that were validated, and every replaced file is
 *  still there with the size and modification time the recluster read (files appended meanwhile
 *  do not conflict: they are neither read nor replaced). */
case class ReclusterCommit(tableName: String, leaseToken: String, stagingDir: String, filePrefix: String,
    validatedBytes: Long, replaced: Seq[String]) extends LeafRunnableCommand {

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
    val staging = new Path(stagingDir)
    val fs = staging.getFileSystem(conf)
    if (!staging.getName.startsWith(StagingPrefix) || !staging.getName.matches("[A-Za-z0-9_]+")) {
      throw SparkClusteringErrors.invalidArgument("recluster_commit",
        s"staging directory '$stagingDir' must be named ${StagingPrefix}<run id>")
    }
    val expected = replaced.map { entry =>
      entry.split(":", 3) match {
        case Array(size, mtime, path) => (path, size.toLong, mtime.toLong)
        case _ => throw SparkClusteringErrors.invalidArgument("recluster_commit",
          s"replaced file '$entry' must be '<size>:<modification time>:<path>'")
      }
    }

    def abort(why: String): Seq[Row] = {
      fs.delete(staging, true)
      Seq(Row(s"aborted: $why", 0L, 0L, 0L, 0L))
    }

    TableLease.check(leaseToken, s"recluster of $tableName")
    val root = fs.makeQualified(location(t))
    if (fs.makeQualified(staging.getParent) != root) {
      return abort(s"the table's location changed to $root since the recluster staged its files; nothing was changed")
    }
    if (!fs.exists(staging)) return Seq(Row("aborted: the staged files are gone (removed by another process); " +
      "nothing was changed", 0L, 0L, 0L, 0L))
    val staged = visibleFiles(conf, staging).map { case (status, rel) => (status.getPath, rel, status.getLen) }
    val stagedBytes = staged.map(_._3).sum
    if (stagedBytes != validatedBytes) {
      return abort(s"the staged files (${staged.size} files, $stagedBytes bytes) are not the ones validated " +
        s"($validatedBytes bytes); nothing was changed")
    }
    val current = dataFiles(spark, t).map(f => f.filePath -> f).toMap
    val changed = expected.filterNot { case (path, size, mtime) =>
      current.get(path).exists(f => f.size == size && f.modificationTime == mtime)
    }
    if (changed.nonEmpty) {
      return abort(s"${changed.size} file(s) it rewrote changed or vanished since the recluster read them " +
        s"(a concurrent write), e.g. ${changed.head._1}; nothing was changed, the next recluster starts over")
    }

    // Staged files keep their partition directory; they land in the partition's own location.
    val partitions = partitionLocations(spark, t)
    val moves = staged.sortBy(_._1.toString).zipWithIndex.map { case ((from, rel, size), i) =>
      val dir = partitions.getOrElse(rel, throw new IllegalStateException(
        s"spark_clustering: staged partition '$rel' is not a partition of $tableName"))
      val name = from.getName
      val suffix = name.indexOf('.') match { case -1 => "" case k => name.substring(k) }
      Move(from, new Path(dir, f"$filePrefix-$i%05d$suffix"), size)
    }
    val deletes = expected.map { case (path, _, _) => Delete(current(path).path) }

    pausePoint(spark, "before_manifest")
    TableLease.check(leaseToken, s"recluster of $tableName")
    writeManifest(conf, staging, moves ++ deletes)
    pausePoint(spark, "after_manifest")
    val outcome = applySteps(spark, conf, staging, moves ++ deletes)
    outcome match {
      case _: RolledForward =>
        fs.delete(staging, true)
        refreshTable(spark, t)
        Seq(Row("committed", moves.size.toLong, deletes.size.toLong, stagedBytes,
          expected.map(_._2).sum))
      case RolledBack(why) =>
        fs.delete(staging, true)
        refreshTable(spark, t)
        Seq(Row(s"rolled back: $why; nothing was changed", 0L, 0L, 0L, 0L))
      case d: Damaged =>
        refreshTable(spark, t)
        throw SparkClusteringErrors.invalidArgument("recluster_commit", d.describe)
    }
  }
}

/** `select * from recluster_recover('db.t', lease_token, 'db.t__sc_recluster')`: finish (manifest
 *  present) or roll back (absent) every interrupted commit of the table, including the directory
 *  of a leftover staging table (e.g. under the table's previous location). One row per staging directory (run_id, action). Only the lease holder recovers, so no
 *  live writer's staging is ever touched. */
case class ReclusterRecover(tableName: String, leaseToken: String, stagingTable: String)
    extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("run_id", StringType, nullable = false)(),
    AttributeReference("action", StringType, nullable = false)())

  import ReclusterFiles._

  override def run(spark: SparkSession): Seq[Row] = {
    TableLease.check(leaseToken, s"recovery of $tableName")
    val t = table(spark, tableName)
    val conf = hadoopConf(spark)
    val root = location(t)
    val fs = root.getFileSystem(conf)
    val found = if (!fs.exists(root)) Seq.empty else fs.listStatus(root).toSeq.filter(_.isDirectory).map(_.getPath)
    // the leftover staging table of an interrupted run points at its staging directory, which may
    // lie under a previous location of the table
    val session = classic(spark)
    val catalog = session.sessionState.catalog
    val extra = Option(stagingTable).filter(_.nonEmpty).map(session.sessionState.sqlParser.parseTableIdentifier)
      .filter(catalog.tableExists).map(ident => location(catalog.getTableMetadata(ident)))
      .filter(p => p.getName.startsWith(StagingPrefix) && p.getFileSystem(conf).exists(p))
    val staging = (found.filter(_.getName.startsWith(StagingPrefix)) ++ extra)
      .map(p => p.getFileSystem(conf).makeQualified(p)).distinct.sortBy(_.getName)
    val rows = staging.map { dir =>
      val runId = dir.getName.stripPrefix(StagingPrefix)
      val action = readManifest(conf, dir) match {
        case Some(steps) =>
          val outcome = applySteps(spark, conf, dir, steps)
          if (!outcome.isInstanceOf[Damaged]) dir.getFileSystem(conf).delete(dir, true)
          outcome.describe
        case None =>
          dir.getFileSystem(conf).delete(dir, true)
          "rolled back (staged files deleted)"
      }
      Row(runId, action)
    }
    // journals kept after damage are reported on every recovery until someone deletes them
    val damaged = found.filter(_.getName.startsWith(DamagedPrefix)).map { dir =>
      Row(dir.getName.stripPrefix(DamagedPrefix), s"damaged commit kept for inspection at $dir " +
        "(files were removed behind spark_clustering's back); delete that directory once inspected")
    }
    if (rows.nonEmpty) refreshTable(spark, t)
    rows ++ damaged
  }
}

/** `select * from table_lease_acquire('db.t', owner, wait_seconds, scope)`: take the table's lease
 *  (scope 'name': the table name only, for a rebuild that replaces the table; 'table': the name and
 *  the table's location, for a rewrite of its files). One row (lease_token, waited_ms). */
case class TableLeaseAcquire(tableName: String, owner: String, waitSeconds: Double, scope: String)
    extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("lease_token", StringType, nullable = false)(),
    AttributeReference("waited_ms", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val dirs = scope match {
      case "name" => Seq(ReclusterFiles.nameLeaseDir(spark, tableName))
      case "table" => Seq(ReclusterFiles.nameLeaseDir(spark, tableName),
        ReclusterFiles.locationLeaseDir(ReclusterFiles.table(spark, tableName)))
      case other => throw SparkClusteringErrors.invalidArgument("table_lease_acquire",
        s"scope '$other' must be 'name' or 'table'")
    }
    val (token, waited) = TableLease.acquire(spark, ReclusterFiles.hadoopConf(spark), dirs, owner,
      (waitSeconds * 1000).toLong, s"table $tableName")
    Seq(Row(token, waited))
  }
}

/** `select * from table_lease_check(lease_token, what)`: fails (nothing done) unless the token still
 *  holds its leases with half a ttl left; a writer calls it right before its commit point. */
case class TableLeaseCheck(token: String, what: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(AttributeReference("held", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    TableLease.check(token, what)
    Seq(Row(1L))
  }
}

/** `select * from table_lease_release(token_or_owner_prefix, by_owner)`: give up one lease (by
 *  token) or every lease of this driver whose owner starts with the prefix. One row (released). */
case class TableLeaseRelease(key: String, byOwner: Boolean) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(AttributeReference("released", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] =
    Seq(Row(if (byOwner) TableLease.releaseOwned(key).toLong else if (TableLease.release(key)) 1L else 0L))
}

/** `select * from drop_sidecar_table('db.t__sc_backup')`: drop one of the package's own sidecar
 *  tables (`__sc_backup`, `__sc_staging`, `__sc_recluster`) together with its files, which DROP
 *  keeps for an external table (a `location_root` build). One row (location, deleted). */
case class DropSidecarTable(tableName: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("location", StringType, nullable = true)(),
    AttributeReference("deleted", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val (location, deleted) = DropSidecarTable.drop(spark, tableName)
    Seq(Row(location.orNull, deleted))
  }
}

object DropSidecarTable {
  /** Drops the sidecar table and deletes its directory; (its location, 1 if the directory was deleted). */
  def drop(spark: SparkSession, tableName: String): (Option[String], Long) = {
    if (!tableName.matches("(?i).*__sc_(backup|staging|recluster)`?")) {
      throw SparkClusteringErrors.invalidArgument("drop_sidecar_table",
        s"'$tableName' is not a spark_clustering sidecar table (<name>__sc_backup, __sc_staging or __sc_recluster)")
    }
    val session = ReclusterFiles.classic(spark)
    val ident = session.sessionState.sqlParser.parseTableIdentifier(tableName)
    // one metastore read each (getTableMetadata, not tableExists + getTableMetadata)
    ReclusterFiles.tableIfExists(spark, ident) match {
      case None => (None, 0L)
      case Some(t) => (Some(ReclusterFiles.location(t).toString), dropWithFiles(spark, ident, t))
    }
  }

  private def dropWithFiles(spark: SparkSession, ident: TableIdentifier, t: CatalogTable): Long = {
    val catalog = ReclusterFiles.classic(spark).sessionState.catalog
    val loc = ReclusterFiles.location(t)
    catalog.dropTable(ident, ignoreIfNotExists = true, purge = true)
    val fs = loc.getFileSystem(ReclusterFiles.hadoopConf(spark))
    // never the live table's data: its location must not lie inside the sidecar's
    val live = ident.copy(table = ident.table.replaceAll("(?i)__sc_(backup|staging|recluster)$", ""))
    val liveLocation = ReclusterFiles.tableIfExists(spark, live).map(l => fs.makeQualified(ReclusterFiles.location(l)).toString)
    val qualified = fs.makeQualified(loc).toString
    val inside = liveLocation.exists(l => l == qualified || l.startsWith(qualified.stripSuffix("/") + "/"))
    if (!inside && fs.exists(loc) && fs.delete(loc, true)) 1L else 0L
  }
}

/** `select * from swap_staging_table('db.t', lease_token, what)`: clustered_table's swap in one
 *  call, the steps and order of the SQL path (macros/write/swap_relation.sql) without a round trip
 *  each: check the lease, rename `db.t` to `db.t__sc_backup`, rename the validated
 *  `db.t__sc_staging` to `db.t`, drop the backup with its files, release the lease. A crash
 *  between two steps leaves what the SQL path leaves, and recover_swap finishes or rolls it back.
 *  An empty token: no lease. One row (replaced: 1 when a table was replaced, backup_deleted). */
case class SwapStagingTable(tableName: String, token: String, what: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("replaced", LongType, nullable = false)(),
    AttributeReference("backup_deleted", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val f = "swap_staging_table"
    val session = ReclusterFiles.classic(spark)
    val target = session.sessionState.sqlParser.parseTableIdentifier(tableName)
    val staging = target.copy(table = target.table + "__sc_staging")
    val backup = target.copy(table = target.table + "__sc_backup")
    if (token.nonEmpty) TableLease.check(token, what)
    val staged = ReclusterFiles.tableIfExists(spark, staging).getOrElse(
      throw SparkClusteringErrors.invalidArgument(f, s"$staging does not exist"))
    // recover_swap promotes only a validated staging table; so does the swap
    if (!staged.properties.get("spark_clustering.validated").contains("true")) {
      throw SparkClusteringErrors.invalidArgument(f, s"$staging is not validated (tblproperty spark_clustering.validated)")
    }
    val existing = ReclusterFiles.tableIfExists(spark, target)
    if (existing.exists(_.tableType == CatalogTableType.VIEW)) {
      throw SparkClusteringErrors.invalidArgument(f, s"$target is a view; drop it first")
    }
    existing.foreach { _ =>
      rename(session, target, backup)
      ReclusterFiles.pausePoint(spark, "clustered_table.after_backup")
    }
    rename(session, staging, target)
    ReclusterFiles.pausePoint(spark, "clustered_table.after_promote")
    val deleted = if (existing.isDefined) DropSidecarTable.drop(spark, backup.unquotedString)._2 else 0L
    if (token.nonEmpty) TableLease.release(token)
    Seq(Row(if (existing.isDefined) 1L else 0L, deleted))
  }

  /** What ALTER TABLE ... RENAME TO does, less its cache lookup (which resolves the table and lists
   *  its files): drop cached data of the old name (a cached plan of `db.t` would otherwise answer
   *  for the table that takes the name and the location next), forget its relation, rename. */
  private def rename(session: org.apache.spark.sql.classic.SparkSession, from: TableIdentifier, to: TableIdentifier): Unit = {
    CommandUtils.uncacheTableOrView(session, from)
    session.sessionState.catalog.refreshTable(from)
    session.sessionState.catalog.renameTable(from, to)
  }
}
