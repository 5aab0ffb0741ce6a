package org.apache.spark.sql.sparkclustering
package commit
package formats

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.SparkSession

/**
 * `recluster()` on a table with its own transaction log (Delta Lake, Iceberg): the rewritten rows
 * are written by the format's writer into a staging table of the same format whose location is a
 * directory of the target table (`<table>/sc-l<level>-<run>/` for Delta, `<table>/data/sc-l<level>-<run>/`
 * for Iceberg), validated there with SQL, and then committed to the target by the format's own
 * rewrite transaction, which takes the staged data files over where they are: nothing is copied.
 *
 *  - Delta: one commit of RemoveFile + AddFile actions with dataChange = false (an OPTIMIZE commit),
 *    the replaced files tracked as read, so a concurrent delete/update of one of them is the format's
 *    conflict, while appends commit alongside.
 *  - Iceberg: RewriteFiles of exactly the replaced files, validated from the snapshot the rows were
 *    read at (so a concurrent delete of a replaced file, or new row deletes against it, fail it).
 *
 * The staging table's own metadata (Delta `_delta_log`, Iceberg `metadata/`) is removed after the
 * commit, and by recovery after a crash. Staged data files of a commit that never happened are
 * files no snapshot references: the format's VACUUM / remove_orphan_files deletes them, as it
 * does for any failed write.
 */
private[commit] trait FormatTableRewrite extends TableRewrite {

  /** The format's name (TableKind), in errors. */
  def kind: TableKind

  /** Commit the staging table's files in place of `replaced` (paths as `dataFiles` lists them, read
   *  at `readVersion`), after checking that those files still hold `validatedRows` rows. */
  def commitStaged(spark: SparkSession, tableName: String, stagingTable: String, stagingDir: Path, readVersion: Long,
      validatedRows: Long, replaced: Seq[String], clusterBy: Seq[String]): RewriteOutcome

  /** The staging table's own metadata under its directory, removed once the files are committed. */
  def stagingMetadata(stagingDir: Path): Path

  /** The directory staging directories are made in: the table's (Delta), its data/ (Iceberg). */
  def stagingParent(spark: SparkSession, tableName: String): Path

  /** The version of the last commit that changed the table's data files, as a token (TableState). */
  def dataToken(spark: SparkSession, tableName: String): String

  /** The format's commit is atomic: what recovery has to do is a staging directory left behind. */
  override def state(spark: SparkSession, tableName: String): TableState =
    TableState(dataToken(spark, tableName), stagingDirs(spark, tableName).nonEmpty)

  /** Staging directories of interrupted runs under the table, with their metadata still there. */
  private def stagingDirs(spark: SparkSession, tableName: String): Seq[Path] = {
    val root = stagingParent(spark, tableName)
    val fs = root.getFileSystem(Sessions.hadoopConf(spark))
    if (!fs.exists(root)) Seq.empty
    else fs.listStatus(root).toSeq.filter(s => s.isDirectory && s.getPath.getName.matches(FormatTableRewrite.StagingDirName))
      .map(_.getPath).filter(p => fs.exists(stagingMetadata(p)))
  }

  /** status `committed`, or `aborted: <why>` when the replaced files changed or the format refused
   *  the commit (its conflict named): the table is unchanged then. Either way the staging table is
   *  dropped from the catalog and its own metadata deleted; its data files are part of the table
   *  (committed) or orphans for VACUUM / remove_orphan_files (aborted). */
  override def commit(spark: SparkSession, request: RewriteRequest): RewriteOutcome = {
    val dir = new Path(request.stagingDir)
    if (!dir.getName.matches(FormatTableRewrite.StagingDirName)) {
      throw SparkClusteringErrors.invalidArgument("table_rewrite_commit",
        s"staging directory '${request.stagingDir}' must be named sc-l<level>-<run id>")
    }
    val readVersion = request.required(request.readVersion, "read_version", kind)
    val validatedRows = request.required(request.validatedRows, "validated_rows", kind)
    TableLease.check(request.leaseToken, s"recluster of ${request.tableName}")
    try {
      commitStaged(spark, request.tableName, request.stagingTable, dir, readVersion, validatedRows,
        request.replaced.map(_.path), request.clusterBy)
    } finally {
      dropStaging(spark, request.stagingTable, dir)
      releaseRows(spark, request.tableName)
    }
  }

  /** What an interrupted run left: its staging table and staging metadata go (one row per staging
   *  directory). */
  override def recover(spark: SparkSession, tableName: String, stagingTable: String): Seq[(String, String)] = {
    releaseRows(spark, tableName)
    val dirs = stagingDirs(spark, tableName)
    if (dirs.isEmpty) TableRewrite.dropStagingTable(spark, stagingTable)
    dirs.map { dir =>
      dropStaging(spark, stagingTable, dir)
      (dir.getName, "staging table and metadata removed (its data files are the table's if it committed, " +
        "otherwise orphans for VACUUM / remove_orphan_files)")
    }
  }

  /** The staging table leaves the catalog (an external table: its files stay) and its own
   *  metadata is deleted; the data files are the table's now, or orphans. */
  private def dropStaging(spark: SparkSession, stagingTable: String, dir: Path): Unit = {
    TableRewrite.dropStagingTable(spark, stagingTable)
    val metadata = stagingMetadata(dir)
    metadata.getFileSystem(Sessions.hadoopConf(spark)).delete(metadata, true)
  }
}

private[commit] object FormatTableRewrite {
  /** The table property in which clustered_table records the version its build committed (Delta
   *  log version, Iceberg snapshot id): the files that version added are one clustered run, which
   *  recluster() leaves alone while appends are clustered into it (instead of taking the whole
   *  table for new files). */
  val BuildVersion = "spark_clustering.build_version"

  /** A staging directory's name: `sc-l<level>-<run id>`, the level and run of the files in it. */
  val StagingDirName: String = CommitJournal.RunPrefixPattern
}
