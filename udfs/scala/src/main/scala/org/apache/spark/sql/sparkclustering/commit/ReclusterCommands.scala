package org.apache.spark.sql.sparkclustering

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types.{LongType, StringType}

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

  override val output: Seq[Attribute] = ReclusterCommit.outputAttributes()

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
    // readers find the journal of a file's run by the run in its name (InFlightCommits)
    val run = staging.getName.stripPrefix(StagingPrefix)
    if (!isRunPrefix(filePrefix, run)) {
      throw SparkClusteringErrors.invalidArgument("recluster_commit",
        s"file prefix '$filePrefix' must be sc-l<level>-$run (the run of the staging directory $stagingDir)")
    }
    val expected = replaced.map { entry =>
      entry.split(":", 3) match {
        case Array(size, mtime, path) => (path, size.toLong, mtime.toLong)
        case _ => throw SparkClusteringErrors.invalidArgument("recluster_commit",
          s"replaced file '$entry' must be '<size>:<modification time>:<path>'")
      }
    }

    def abort(why: String): Seq[Row] = {
      PendingUploads.rollBack(conf, fs.makeQualified(staging.getParent), staging.getName.stripPrefix(StagingPrefix))
      fs.delete(staging, true)
      Seq(Row(s"aborted: $why", 0L, 0L, 0L, 0L))
    }

    TableLease.check(leaseToken, s"recluster of $tableName")
    val root = fs.makeQualified(location(t))
    if (fs.makeQualified(staging.getParent) != root) {
      return abort(s"the table's location changed to $root since the recluster staged its files; nothing was changed")
    }
    val runId = staging.getName.stripPrefix(StagingPrefix)
    // written as pending uploads to their final names (on S3A), or staged to be moved
    val uploads = PendingUploads.readList(conf, staging)
    if (uploads.isEmpty && !fs.exists(staging)) return Seq(Row("aborted: the staged files are gone (removed by " +
      "another process); nothing was changed", 0L, 0L, 0L, 0L))
    val staged = if (uploads.isDefined) Seq.empty
      else visibleFiles(conf, staging).map { case (status, rel) => (status.getPath, rel, status.getLen) }
    val stagedBytes = uploads.map(_.map(_.size).sum).getOrElse(staged.map(_._3).sum)
    val stagedFiles = uploads.map(_.size).getOrElse(staged.size)
    if (stagedBytes != validatedBytes) {
      return abort(s"the staged files ($stagedFiles files, $stagedBytes bytes) are not the ones validated " +
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
    val completes = uploads.getOrElse(Nil).map { u =>
      val rel = u.destination.getParent.toString.stripPrefix(root.toString).stripPrefix("/")
      if (!partitions.get(rel).exists(d => fs.makeQualified(d) == fs.makeQualified(u.destination.getParent))) {
        return abort(s"a pending upload lands at ${u.destination}, outside the table's partitions; nothing was changed")
      }
      Complete(u.pending, u.destination, u.size)
    }
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
    val steps = moves ++ completes ++ deletes
    writeManifest(conf, staging, steps)
    pausePoint(spark, "after_manifest")
    // A writer that stalled here past its lease (not renewed while it stood still) may have been
    // taken over: the new holder's recovery rolls this journal forward, and its own next rewrite
    // may follow. Applying the journal beside it raced it (a staged file renamed from under us).
    try TableLease.check(leaseToken, s"recluster of $tableName") catch {
      case e: RuntimeException => throw SparkClusteringErrors.leaseLostAfterJournal(s"recluster of $tableName",
        e.getMessage, staging.toString)
    }
    val outcome = applySteps(spark, conf, staging, steps,
      (SparkClusteringConf.CommitDeleteDelaySeconds.get(spark) * 1000).toLong)
    outcome match {
      case _: RolledForward =>
        fs.delete(staging, true)
        if (completes.nonEmpty) PendingUploads.cleanUp(conf, root, runId)
        refreshTable(spark, t)
        Seq(Row("committed", (moves.size + completes.size).toLong, deletes.size.toLong, stagedBytes,
          expected.map(_._2).sum))
      case RolledBack(why) =>
        if (completes.nonEmpty) PendingUploads.rollBack(conf, root, runId)
        fs.delete(staging, true)
        refreshTable(spark, t)
        Seq(Row(s"rolled back: $why; nothing was changed", 0L, 0L, 0L, 0L))
      case d: Damaged =>
        refreshTable(spark, t)
        throw SparkClusteringErrors.invalidArgument("recluster_commit", d.describe)
    }
  }
}

object ReclusterCommit {
  /** The row a commit returns (recluster_commit, format_rewrite_commit): status, files_added,
   *  files_removed, bytes_added, bytes_removed; new attributes per command. */
  def outputAttributes(): Seq[Attribute] = Seq(
    AttributeReference("status", StringType, nullable = false)(),
    AttributeReference("files_added", LongType, nullable = false)(),
    AttributeReference("files_removed", LongType, nullable = false)(),
    AttributeReference("bytes_added", LongType, nullable = false)(),
    AttributeReference("bytes_removed", LongType, nullable = false)())
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
      val dirRoot = dir.getParent
      val action = readManifest(conf, dir) match {
        case Some(steps) =>
          val outcome = applySteps(spark, conf, dir, steps)
          outcome match {
            case _: RolledForward => PendingUploads.cleanUp(conf, dirRoot, runId)
            case _: RolledBack => PendingUploads.rollBack(conf, dirRoot, runId)
            case _ =>
          }
          if (!outcome.isInstanceOf[Damaged]) dir.getFileSystem(conf).delete(dir, true)
          outcome.describe
        case None =>
          PendingUploads.rollBack(conf, dirRoot, runId)
          dir.getFileSystem(conf).delete(dir, true)
          "rolled back (staged files deleted)"
      }
      Row(runId, action)
    }
    // a pending write (S3A) killed before it listed its files leaves only its uploads
    val known = staging.map(_.getName.stripPrefix(StagingPrefix)).toSet
    val orphans = found.map(_.getName).filter(_.startsWith(PendingUploads.MagicPrefix))
        .map(_.stripPrefix(PendingUploads.MagicPrefix)).filterNot(known.contains).map { runId =>
      PendingUploads.rollBack(conf, fs.makeQualified(root), runId)
      Row(runId, "rolled back (pending uploads aborted)")
    }
    // journals kept after damage are reported on every recovery until someone deletes them
    val damaged = found.filter(_.getName.startsWith(DamagedPrefix)).map { dir =>
      Row(dir.getName.stripPrefix(DamagedPrefix), s"damaged commit kept for inspection at $dir " +
        "(files were removed behind spark_clustering's back); delete that directory once inspected")
    }
    val strays = PendingUploads.abortStray(conf, fs.makeQualified(root))
    val aborted = if (strays == 0) Nil else Seq(Row("", s"aborted $strays upload(s) in progress of killed runs"))
    if (rows.nonEmpty || orphans.nonEmpty) refreshTable(spark, t)
    rows ++ orphans ++ aborted ++ damaged
  }
}
