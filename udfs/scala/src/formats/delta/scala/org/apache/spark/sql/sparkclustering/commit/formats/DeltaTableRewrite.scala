package org.apache.spark.sql.sparkclustering
package commit
package formats

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.delta.{DeltaConcurrentModificationException, DeltaLog, DeltaOperations,
  NoMapping, Snapshot}
import org.apache.spark.sql.delta.actions.{Action, AddCDCFile, AddFile, CommitInfo, RemoveFile}
import org.apache.spark.sql.types.{ArrayType, DataType, MapType, StructType}
import org.apache.spark.sql.sparkclustering.tables.CatalogTables
import org.apache.spark.sql.sparkclustering.tables.DataFile

/** TableRewrite of a Delta Lake table (see FormatTableRewrite): one OPTIMIZE commit, dataChange = false. */
private[commit] object DeltaTableRewrite extends FormatTableRewrite {

  private def deltaLog(spark: SparkSession, t: CatalogTable): DeltaLog = DeltaLog.forTable(spark, t)

  private def latest(log: DeltaLog, t: CatalogTable): Snapshot = log.update(false, None, Some(t))

  /** What `_metadata.file_path` reports for the file. */
  private def filePath(log: DeltaLog, add: AddFile): String =
    DataFile(add.absolutePath(log), add.size, add.modificationTime).filePath

  /** The snapshot's files by the path `_metadata.file_path` reports. */
  private def filesByPath(log: DeltaLog, snapshot: Snapshot): Map[String, AddFile] =
    snapshot.allFiles.collect().map(a => filePath(log, a) -> a).toMap

  override val kind: TableKind = TableKind.Delta

  override def dataFiles(spark: SparkSession, tableName: String): TableFiles = {
    val t = CatalogTables.table(spark, tableName)
    val log = deltaLog(spark, t)
    val snapshot = latest(log, t)
    val built = builtFiles(log, t, snapshot)
    TableFiles(Some(snapshot.version), snapshot.allFiles.collect().toSeq.map(a =>
      TableDataFile(filePath(log, a), a.size, a.modificationTime, Option(a.stats), a.deletionVector != null,
        built.contains(a.path))))
  }

  /** Delta's own read of a list of files (what its OPTIMIZE reads a bin with): a scan of exactly
   *  those AddFiles of the version, their deletion vectors applied; a filter on `_metadata.file_path`
   *  would list and open every file of the table. */
  override def rowsOfFiles(spark: SparkSession, tableName: String, version: Option[Long], paths: Seq[String]): DataFrame = {
    val t = CatalogTables.table(spark, tableName)
    val log = deltaLog(spark, t)
    val snapshot = version.map(v => DeltaLogCalls.snapshotAt(log, v, t)).getOrElse(latest(log, t))
    val byPath = filesByPath(log, snapshot)
    val missing = paths.filterNot(byPath.contains)
    if (missing.nonEmpty) throw TableRewrite.notDataFiles(tableName, s" at version ${snapshot.version}", missing)
    log.createDataFrame(snapshot, paths.map(byPath).toList, isStreaming = false)
  }

  /** Paths (as the log writes them) the commit of the table's last build added: its version is in
   *  the table's properties. None when that commit's log entry is gone (cleaned up after the log
   *  retention): the build's files then count as new files. */
  private def builtFiles(log: DeltaLog, t: CatalogTable, snapshot: Snapshot): Set[String] = {
    snapshot.metadata.configuration.get(FormatTableRewrite.BuildVersion).flatMap(v => scala.util.Try(v.toLong).toOption)
      .filter(v => v >= 0 && v <= snapshot.version)
      .map { v =>
        scala.util.Try(DeltaLogCalls.changes(log, v, t).toSeq.flatMap { case (_, actions) =>
          actions.collect { case a: AddFile => a.path } }.toSet).getOrElse(Set.empty[String])
      }.getOrElse(Set.empty)
  }

  /** `delta:<table id>:<version>` of the last commit that added or removed files: a commit of table
   *  properties (recluster's own, after its rewrite) or an append of zero rows keeps it. */
  override def dataToken(spark: SparkSession, tableName: String): String = {
    val t = CatalogTables.table(spark, tableName)
    val log = deltaLog(spark, t)
    val snapshot = latest(log, t)
    val version = TableState.lastDataChange[Long](snapshot.version,
      Iterator.iterate(snapshot.version - 1)(_ - 1).takeWhile(_ >= 0),
      v => scala.util.Try(DeltaLogCalls.changes(log, v, t).toSeq.flatMap(_._2).exists {
        case _: AddFile | _: RemoveFile | _: AddCDCFile => true
        case _ => false
      }).toOption)
    s"delta:${snapshot.metadata.id}:$version"
  }

  /** Operations that replace all of a table's data in one commit (Delta's names for them). */
  private val WholeTableWrites = Set("CREATE TABLE AS SELECT", "REPLACE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT")

  override def committedRows(spark: SparkSession, tableName: String, version: Long): Option[Long] = {
    val t = CatalogTables.table(spark, tableName)
    val log = deltaLog(spark, t)
    scala.util.Try(DeltaLogCalls.changes(log, version, t).toSeq.flatMap(_._2)).toOption.flatMap { actions =>
      val adds = actions.collect { case a: AddFile => a }
      val wholeTable = actions.exists {
        case c: CommitInfo => WholeTableWrites.contains(c.operation)
        case _ => false
      }
      // after such a commit the table holds exactly the files it added
      val counts = adds.map(a => if (a.deletionVector == null) a.numLogicalRecords else None)
      if (!wholeTable || counts.exists(_.isEmpty)) None else Some(counts.flatten.sum)
    }
  }

  /** Types equal up to nullability (a CTAS declares every column nullable). */
  private def sameType(a: DataType, b: DataType): Boolean = (a, b) match {
    case (x: StructType, y: StructType) => x.length == y.length && x.fields.zip(y.fields).forall { case (f, g) =>
      f.name == g.name && sameType(f.dataType, g.dataType) }
    case (ArrayType(x, _), ArrayType(y, _)) => sameType(x, y)
    case (MapType(k1, v1, _), MapType(k2, v2, _)) => sameType(k1, k2) && sameType(v1, v2)
    case _ => a == b
  }

  override def commitStaged(spark: SparkSession, tableName: String, stagingTable: String, stagingDir: Path,
      readVersion: Long, validatedRows: Long, replaced: Seq[String], clusterBy: Seq[String]): RewriteOutcome = {
    val t = CatalogTables.table(spark, tableName)
    val log = deltaLog(spark, t)
    val stagingLog = DeltaLog.forTable(spark, stagingDir)
    val staged = stagingLog.update(false, None, None)
    val txn = log.startTransaction(Some(t), None)
    val snapshot = txn.snapshot

    val target = snapshot.metadata
    if (target.columnMappingMode != NoMapping) {
      throw SparkClusteringErrors.invalidArgument("recluster", s"$tableName uses Delta column mapping " +
        s"(delta.columnMapping.mode = ${target.columnMappingMode.name}): its files name columns by physical " +
        "names the staging table does not share; recluster it with OPTIMIZE, or rebuild it with dbt run --full-refresh")
    }
    if (!sameType(target.schema, staged.metadata.schema) || target.partitionColumns != staged.metadata.partitionColumns) {
      return RewriteOutcome.aborted(s"the table's schema or partitioning changed since the recluster read it " +
        s"(${target.schema.simpleString} vs ${staged.metadata.schema.simpleString}); nothing was changed")
    }

    // The replaced files must be as they were read: the same AddFile (path, deletion vector) at the
    // version the rows were read from and now; later changes are the transaction's conflicts.
    val read = filesByPath(log, DeltaLogCalls.snapshotAt(log, readVersion, t))
    val current = filesByPath(log, snapshot)
    val changed = replaced.filterNot(p => read.get(p).exists(r => current.get(p).exists(c =>
      c.deletionVector == r.deletionVector && c.size == r.size)))
    if (changed.nonEmpty) {
      return RewriteOutcome.aborted(s"${changed.size} file(s) it rewrote were deleted or updated since version " +
        s"$readVersion it read (a concurrent write), e.g. ${changed.head}; nothing was changed, the next recluster " +
        "starts over")
    }
    val removed = replaced.map(current)
    val rows = removed.map(a => a.numLogicalRecords.getOrElse(-1L)).sum
    if (rows != validatedRows) {
      return RewriteOutcome.aborted(s"the files it rewrote hold $rows rows by the Delta log, the rewrite " +
        s"validated $validatedRows; nothing was changed")
    }
    txn.trackFilesRead(removed)

    // the staged files stay where they are: their paths, relative to the table, gain the staging dir
    val dir = stagingDir.getName
    val now = System.currentTimeMillis()
    val added = staged.allFiles.collect().toSeq.map(a => a.copy(path = s"$dir/${a.path}", dataChange = false))
    val actions: Seq[Action] = removed.map(_.removeWithTimestamp(now, false)) ++ added
    TestPausePoints.at(spark, "before_format_commit")
    try {
      txn.commit(actions, DeltaOperations.Optimize(Seq.empty, clusterBy))
    } catch {
      case e: DeltaConcurrentModificationException =>
        return RewriteOutcome.aborted(s"Delta refused the commit: ${e.getClass.getSimpleName}: " +
          s"${e.getMessage.split("\n").head}; nothing was changed, the next recluster starts over")
    }
    RewriteOutcome("committed", added.size.toLong, removed.size.toLong, added.map(_.size).sum,
      removed.map(_.size).sum)
  }

  override def stagingMetadata(stagingDir: Path): Path = new Path(stagingDir, "_delta_log")

  override def stagingParent(spark: SparkSession, tableName: String): Path =
    CatalogTables.location(CatalogTables.table(spark, tableName))
}
