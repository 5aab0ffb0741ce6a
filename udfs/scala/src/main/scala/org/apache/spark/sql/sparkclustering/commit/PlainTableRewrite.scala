package org.apache.spark.sql.sparkclustering
package commit

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.sparkclustering.tables.DataFiles
import org.apache.spark.sql.sparkclustering.tables.CatalogTables

/**
 * TableRewrite of a plain parquet/orc table (see CommitJournal for the journal): the files Spark
 * lists for it, and a commit that proves what it commits: the caller holds the table's lease
 * (checked before the commit point), the staged files are exactly the bytes that were validated,
 * and every replaced file is still there with the size and modification time the recluster read
 * (files appended meanwhile do not conflict: they are neither read nor replaced).
 *
 * The staging directory is `<location>/_sc_recluster_<run>` and the files it puts in place are named
 * `sc-l<level>-<run>-<n>`; on S3A the files are pending uploads to those names instead
 * (recluster_stage_pending), completed by the journal.
 */
private[commit] object PlainTableRewrite extends TableRewrite {

  import CommitJournal._

  override def dataFiles(spark: SparkSession, tableName: String): TableFiles =
    TableFiles(None, DataFiles.of(spark, CatalogTables.table(spark, tableName))
      .map(f => TableDataFile(f.filePath, f.size, f.modificationTime)))

  override def state(spark: SparkSession, tableName: String): TableState = TableState.plain(spark, tableName)

  /** Filtered on the file metadata column (by its own name, whatever the table's columns are): Spark
   *  lists only the files whose path the filter keeps, so no other file is opened. A plain table has
   *  no versions: the files are read as they are (under the lease, they do not change). Not listed
   *  again here: a path gone since the listing reads no rows, and the commit, which checks every
   *  replaced file as it was read, aborts. */
  override def rowsOfFiles(spark: SparkSession, tableName: String, version: Option[Long], paths: Seq[String]): DataFrame = {
    val rows = spark.table(CatalogTables.table(spark, tableName).identifier.quotedString)
    rows.where(rows.metadataColumn("_metadata").getField("file_path").isin(paths: _*))
  }

  /** A plain table has no versions, nor counts of its own. */
  override def committedRows(spark: SparkSession, tableName: String, version: Long): Option[Long] = None

  /** status `committed`, `aborted: <why>` (the staged files are deleted, the table is as it was) or
   *  `rolled back: <why>`; then the staging table leaves the catalog (its directory is gone by then).
   *  A commit that stops with an error keeps it: recovery finds the staging directory by it. */
  override def commit(spark: SparkSession, request: RewriteRequest): RewriteOutcome = {
    val outcome = commitJournaled(spark, request)
    TableRewrite.dropStagingTable(spark, request.stagingTable)
    outcome
  }

  private def commitJournaled(spark: SparkSession, request: RewriteRequest): RewriteOutcome = {
    import request.{filePrefix, leaseToken, stagingDir, tableName}
    if (!filePrefix.matches("[A-Za-z0-9_-]+")) {
      throw SparkClusteringErrors.invalidArgument("table_rewrite_commit",
        s"file prefix '$filePrefix' must match [A-Za-z0-9_-]+")
    }
    val validatedBytes = request.required(request.validatedBytes, "validated_bytes", TableKind.Plain)
    val t = CatalogTables.table(spark, tableName)
    val conf = Sessions.hadoopConf(spark)
    val staging = new Path(stagingDir)
    val fs = staging.getFileSystem(conf)
    if (!staging.getName.startsWith(StagingPrefix) || !staging.getName.matches("[A-Za-z0-9_]+")) {
      throw SparkClusteringErrors.invalidArgument("table_rewrite_commit",
        s"staging directory '$stagingDir' must be named ${StagingPrefix}<run id>")
    }
    // readers find the journal of a file's run by the run in its name (InFlightCommits)
    val runId = staging.getName.stripPrefix(StagingPrefix)
    if (!isRunPrefix(filePrefix, runId)) {
      throw SparkClusteringErrors.invalidArgument("table_rewrite_commit",
        s"file prefix '$filePrefix' must be sc-l<level>-$runId (the run of the staging directory $stagingDir)")
    }
    val expected = request.replaced

    def abort(why: String): RewriteOutcome = {
      PendingUploads.rollBack(conf, fs.makeQualified(staging.getParent), runId)
      fs.delete(staging, true)
      RewriteOutcome.aborted(why)
    }

    TableLease.check(leaseToken, s"recluster of $tableName")
    val root = fs.makeQualified(CatalogTables.location(t))
    if (fs.makeQualified(staging.getParent) != root) {
      return abort(s"the table's location changed to $root since the recluster staged its files; nothing was changed")
    }
    // written as pending uploads to their final names (on S3A), or staged to be moved
    val uploads = PendingUploads.readList(conf, staging)
    if (uploads.isEmpty && !fs.exists(staging)) {
      return RewriteOutcome.aborted("the staged files are gone (removed by another process); nothing was changed")
    }
    val staged = if (uploads.isDefined) Seq.empty
      else DataFiles.visible(conf, staging).map { case (status, rel) => (status.getPath, rel, status.getLen) }
    val stagedBytes = uploads.map(_.map(_.size).sum).getOrElse(staged.map(_._3).sum)
    val stagedFiles = uploads.map(_.size).getOrElse(staged.size)
    if (stagedBytes != validatedBytes) {
      return abort(s"the staged files ($stagedFiles files, $stagedBytes bytes) are not the ones validated " +
        s"($validatedBytes bytes); nothing was changed")
    }
    val current = DataFiles.of(spark, t).map(f => f.filePath -> f).toMap
    val changed = expected.filterNot(r => current.get(r.path).exists(f => f.size == r.size && f.modificationTime == r.modificationTime))
    if (changed.nonEmpty) {
      return abort(s"${changed.size} file(s) it rewrote changed or vanished since the recluster read them " +
        s"(a concurrent write), e.g. ${changed.head.path}; nothing was changed, the next recluster starts over")
    }

    // Staged files keep their partition directory; they land in the partition's own location.
    val partitions = CatalogTables.partitionLocations(spark, t)
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
    val deletes = expected.map(r => Delete(current(r.path).path))

    TestPausePoints.at(spark, "before_manifest")
    TableLease.check(leaseToken, s"recluster of $tableName")
    val steps = moves ++ completes ++ deletes
    writeManifest(conf, staging, steps)
    TestPausePoints.at(spark, "after_manifest")
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
        CatalogTables.refresh(spark, t)
        RewriteOutcome("committed", (moves.size + completes.size).toLong, deletes.size.toLong, stagedBytes,
          expected.map(_.size).sum)
      case RolledBack(why) =>
        if (completes.nonEmpty) PendingUploads.rollBack(conf, root, runId)
        fs.delete(staging, true)
        CatalogTables.refresh(spark, t)
        RewriteOutcome(s"rolled back: $why; nothing was changed", 0L, 0L, 0L, 0L)
      case d: Damaged =>
        CatalogTables.refresh(spark, t)
        throw SparkClusteringErrors.invalidArgument("table_rewrite_commit", d.describe)
    }
  }

  /** Finish (manifest present) or roll back (absent) every interrupted commit of the table,
   *  including the directory of a leftover staging table (e.g. under the table's previous
   *  location), then drop that staging table with its files. */
  override def recover(spark: SparkSession, tableName: String, stagingTable: String): Seq[(String, String)] = {
    val t = CatalogTables.table(spark, tableName)
    val conf = Sessions.hadoopConf(spark)
    val root = CatalogTables.location(t)
    val fs = root.getFileSystem(conf)
    val found = if (!fs.exists(root)) Seq.empty else fs.listStatus(root).toSeq.filter(_.isDirectory).map(_.getPath)
    // the leftover staging table of an interrupted run points at its staging directory, which may
    // lie under a previous location of the table
    val catalog = Sessions.classic(spark).sessionState.catalog
    val extra = TableRewrite.stagingTableIdent(spark, stagingTable)
      .filter(catalog.tableExists).map(ident => CatalogTables.location(catalog.getTableMetadata(ident)))
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
      (runId, action)
    }
    // a pending write (S3A) killed before it listed its files leaves only its uploads
    val known = staging.map(_.getName.stripPrefix(StagingPrefix)).toSet
    val orphans = found.map(_.getName).filter(_.startsWith(PendingUploads.MagicPrefix))
        .map(_.stripPrefix(PendingUploads.MagicPrefix)).filterNot(known.contains).map { runId =>
      PendingUploads.rollBack(conf, fs.makeQualified(root), runId)
      (runId, "rolled back (pending uploads aborted)")
    }
    // journals kept after damage are reported on every recovery until someone deletes them
    val damaged = found.filter(_.getName.startsWith(DamagedPrefix)).map { dir =>
      (dir.getName.stripPrefix(DamagedPrefix), s"damaged commit kept for inspection at $dir " +
        "(files were removed behind spark_clustering's back); delete that directory once inspected")
    }
    val strays = PendingUploads.abortStray(conf, fs.makeQualified(root))
    val aborted = if (strays == 0) Nil else Seq(("", s"aborted $strays upload(s) in progress of killed runs"))
    if (rows.nonEmpty || orphans.nonEmpty) CatalogTables.refresh(spark, t)
    // its directory was recovered above (or is gone): what is left of it goes with it
    if (stagingTable.nonEmpty) DropSidecarTable.drop(spark, stagingTable)
    rows ++ orphans ++ aborted ++ damaged
  }
}
