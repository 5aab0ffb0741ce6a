package org.apache.spark.sql.sparkclustering
package commit

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types.{BooleanType, LongType, StringType}

/** `select * from table_data_files('db.t')`: the table's data files, whatever its kind (TableRewrite):
 *  path (as `_metadata.file_path` reports it), size, modification time, the version listed (Delta
 *  log version, Iceberg snapshot id; null for a plain table) repeated on every row, the file's
 *  statistics as the format's log keeps them (`log_stats`: Delta's add.stats JSON, else null),
 *  whether rows of it are deleted by a deletion vector / delete file, and whether the table's last
 *  clustered_table build wrote it (`from_build`). A format's from its metadata, no data file read. */
private[sparkclustering] case class TableDataFiles(tableName: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("file_path", StringType, nullable = false)(),
    AttributeReference("file_size", LongType, nullable = false)(),
    AttributeReference("modification_time", LongType, nullable = false)(),
    AttributeReference("table_version", LongType, nullable = true)(),
    AttributeReference("log_stats", StringType, nullable = true)(),
    AttributeReference("has_row_deletes", BooleanType, nullable = false)(),
    AttributeReference("from_build", BooleanType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val listed = TableRewrite.forTable(spark, tableName).dataFiles(spark, tableName)
    val version = listed.version.map(Long.box).orNull
    listed.files.map(f => Row(f.path, f.size, f.modificationTime, version, f.logStats.orNull, f.hasRowDeletes,
      f.fromBuild))
  }
}

/** `select * from table_file_rows('db.t', version, array(path, ...), 'view')`: the temporary view
 *  `view` of the session holds the rows of exactly those data files of the table (paths as
 *  table_data_files lists them) at `version` ('' as the table is now; a plain table has no
 *  versions), read by the table's kind without opening any other file (TableRewrite.rowsOfFiles);
 *  one row (view_name, files). The view keeps its plan: every query on it reads the same files. */
private[sparkclustering] case class TableFileRows(tableName: String, version: Option[Long], paths: Seq[String],
    viewName: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("view_name", StringType, nullable = false)(),
    AttributeReference("files", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    if (!viewName.matches("[A-Za-z_][A-Za-z0-9_]*")) {
      throw SparkClusteringErrors.invalidArgument("table_file_rows", s"view '$viewName' must be a plain name " +
        "([A-Za-z_][A-Za-z0-9_]*): it is a temporary view of the session")
    }
    val files = paths.distinct
    if (files.isEmpty) throw SparkClusteringErrors.invalidArgument("table_file_rows", "files must name one file or more")
    TableRewrite.forTable(spark, tableName).rowsOfFiles(spark, tableName, version, files).createOrReplaceTempView(viewName)
    Seq(Row(viewName, files.size.toLong))
  }
}

/** `select * from table_committed_rows('db.t', version)`: one row, `row_count`, the rows the table
 *  holds at `version` by its format's own counts when that version replaced all of its data
 *  (TableRewrite.committedRows); null when they cannot be taken from the metadata (then count them
 *  by a query), and always for a plain table. */
private[sparkclustering] case class TableCommittedRows(tableName: String, version: Long) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(AttributeReference("row_count", LongType, nullable = true)())

  override def run(spark: SparkSession): Seq[Row] =
    Seq(Row(TableRewrite.forTable(spark, tableName).committedRows(spark, tableName, version).map(Long.box).orNull))
}

/** `select * from table_rewrite_commit('db.t', lease_token, 'db.t__sc_recluster', staging_dir,
 *  file_prefix, read_version, validated_rows, validated_bytes, 'a,b', array('<size>:<mtime>:<path>', ...))`:
 *  one row (status, files_added, files_removed, bytes_added, bytes_removed). status `committed`,
 *  `aborted: <why>` or `rolled back: <why>` (the table as it was then). The commit of the table's
 *  kind (PlainTableRewrite, FormatTableRewrite) says what it checks; every kind drops the staging
 *  table. */
private[sparkclustering] case class TableRewriteCommit(request: RewriteRequest) extends LeafRunnableCommand {

  override val output: Seq[Attribute] = Seq(
    AttributeReference("status", StringType, nullable = false)(),
    AttributeReference("files_added", LongType, nullable = false)(),
    AttributeReference("files_removed", LongType, nullable = false)(),
    AttributeReference("bytes_added", LongType, nullable = false)(),
    AttributeReference("bytes_removed", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val rewrite = TableRewrite.forTable(spark, request.tableName)
    TableRewrite.stagingTableIdent(spark, request.stagingTable)  // a bad name fails before anything is done
    val outcome = rewrite.commit(spark, request)
    Seq(Row(outcome.status, outcome.filesAdded, outcome.filesRemoved, outcome.bytesAdded, outcome.bytesRemoved))
  }
}

/** `select * from table_rewrite_recover('db.t', lease_token, 'db.t__sc_recluster')`: what interrupted
 *  rewrites of the table left, finished or undone (TableRewrite.recover), and the leftover staging
 *  table dropped: one row per run (run_id, action). Only the lease holder recovers, so no live
 *  writer's staging is ever touched. */
private[sparkclustering] case class TableRewriteRecover(tableName: String, leaseToken: String, stagingTable: String)
    extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("run_id", StringType, nullable = false)(),
    AttributeReference("action", StringType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    TableLease.check(leaseToken, s"recovery of $tableName")
    TableRewrite.forTable(spark, tableName).recover(spark, tableName, stagingTable).map { case (run, action) =>
      Row(run, action)
    }
  }
}
