package org.apache.spark.sql.sparkclustering

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types.{BooleanType, LongType, StringType}

/** `select * from format_data_files('db.t', 'delta' | 'iceberg')`: the current snapshot's data files
 *  (path as the table's file metadata column reports it, size, modification time), its version
 *  (Delta log version, Iceberg snapshot id) repeated on every row, the file's statistics as the log
 *  keeps them (`log_stats`: Delta's add.stats JSON, null on Iceberg), whether rows of it are
 *  deleted by a deletion vector / delete file, and whether the table's last clustered_table build
 *  wrote it (`from_build`); from the format's metadata, no data file read. */
case class FormatDataFiles(tableName: String, format: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("file_path", StringType, nullable = false)(),
    AttributeReference("file_size", LongType, nullable = false)(),
    AttributeReference("modification_time", LongType, nullable = false)(),
    AttributeReference("table_version", LongType, nullable = false)(),
    AttributeReference("log_stats", StringType, nullable = true)(),
    AttributeReference("has_row_deletes", BooleanType, nullable = false)(),
    AttributeReference("from_build", BooleanType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val (version, files) = FormatTableRewrite.forFormat(format).dataFiles(spark, tableName)
    files.map(f => Row(f.path, f.size, f.modificationTime, version, f.logStats.orNull, f.hasRowDeletes, f.fromBuild))
  }
}

/** `select * from format_committed_rows('db.t', 'delta' | 'iceberg', version)`: one row, `row_count`,
 *  the rows the table holds at `version` by the format's own counts when that version replaced all
 *  of its data (FormatTableRewrite.committedRows), null when they cannot be taken from the metadata
 *  (then count them by a query). */
case class FormatCommittedRows(tableName: String, format: String, version: Long) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(AttributeReference("row_count", LongType, nullable = true)())

  override def run(spark: SparkSession): Seq[Row] =
    Seq(Row(FormatTableRewrite.forFormat(format).committedRows(spark, tableName, version).map(Long.box).orNull))
}

/** `select * from format_rewrite_commit('db.t', format, lease_token, 'db.t__sc_recluster', staging_dir,
 *  read_version, validated_rows, 'a,b', array(path, ...))`: one row (status, files_added, files_removed,
 *  bytes_added, bytes_removed), like recluster_commit. status `committed`, or `aborted: <why>` when
 *  the replaced files changed or the format refused the commit (its conflict named): the table is
 *  unchanged then. Either way the staging table is dropped from the catalog and its own metadata
 *  deleted; its data files are part of the table (committed) or orphans for VACUUM /
 *  remove_orphan_files (aborted). */
case class FormatRewriteCommit(tableName: String, format: String, leaseToken: String, stagingTable: String,
    stagingDir: String, readVersion: Long, validatedRows: Long, clusterBy: Seq[String], replaced: Seq[String])
    extends LeafRunnableCommand {

  override val output: Seq[Attribute] = ReclusterCommit.outputAttributes()

  override def run(spark: SparkSession): Seq[Row] = {
    val dir = new Path(stagingDir)
    if (!dir.getName.matches(FormatTableRewrite.StagingDirName)) {
      throw SparkClusteringErrors.invalidArgument("format_rewrite_commit",
        s"staging directory '$stagingDir' must be named sc-l<level>-<run id>")
    }
    val rewrite = FormatTableRewrite.forFormat(format)
    TableLease.check(leaseToken, s"recluster of $tableName")
    val outcome = try {
      rewrite.commit(spark, tableName, stagingTable, dir, readVersion, validatedRows, replaced, clusterBy)
    } finally {
      FormatRewriteCommit.dropStaging(spark, rewrite, stagingTable, dir)
    }
    Seq(Row(outcome.status, outcome.filesAdded, outcome.filesRemoved, outcome.bytesAdded, outcome.bytesRemoved))
  }
}

object FormatRewriteCommit {
  /** The staging table leaves the catalog (an external table: its files stay) and its own
   *  metadata is deleted; the data files are the table's now, or orphans. */
  def dropStaging(spark: SparkSession, rewrite: FormatTableRewrite, stagingTable: String, dir: Path): Unit = {
    val session = ReclusterFiles.classic(spark)
    val ident = session.sessionState.sqlParser.parseTableIdentifier(stagingTable)
    if (session.sessionState.catalog.tableExists(ident)) spark.sql(s"DROP TABLE IF EXISTS ${ident.quotedString}")
    val metadata = rewrite.stagingMetadata(dir)
    metadata.getFileSystem(ReclusterFiles.hadoopConf(spark)).delete(metadata, true)
  }
}

/** `select * from format_rewrite_recover('db.t', format, lease_token, 'db.t__sc_recluster')`: what an
 *  interrupted format recluster left: its staging table and staging metadata go (one row per
 *  staging directory: run, action). Under the lease, so no live run's staging is touched. */
case class FormatRewriteRecover(tableName: String, format: String, leaseToken: String, stagingTable: String)
    extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("run_id", StringType, nullable = false)(),
    AttributeReference("action", StringType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    TableLease.check(leaseToken, s"recovery of $tableName")
    val rewrite = FormatTableRewrite.forFormat(format)
    val dirs = rewrite.stagingDirs(spark, tableName)
    val session = ReclusterFiles.classic(spark)
    val ident = session.sessionState.sqlParser.parseTableIdentifier(stagingTable)
    if (dirs.isEmpty && session.sessionState.catalog.tableExists(ident)) {
      spark.sql(s"DROP TABLE IF EXISTS ${ident.quotedString}")
    }
    dirs.map { dir =>
      FormatRewriteCommit.dropStaging(spark, rewrite, stagingTable, dir)
      Row(dir.getName, "staging table and metadata removed (its data files are the table's if it committed, " +
        "otherwise orphans for VACUUM / remove_orphan_files)")
    }
  }
}
