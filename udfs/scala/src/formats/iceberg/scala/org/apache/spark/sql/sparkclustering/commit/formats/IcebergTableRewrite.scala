package org.apache.spark.sql.sparkclustering
package commit
package formats

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.Path
import org.apache.iceberg.{DataFile, DataFiles, FileScanTask, Table}
import org.apache.iceberg.exceptions.{CommitFailedException, ValidationException}
import org.apache.iceberg.spark.{ScanTaskSetManager, Spark3Util, SparkTableCache}

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.connector.catalog.{CatalogManager, SupportsRead, TableCapability}
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/** TableRewrite of an Iceberg table (see FormatTableRewrite): RewriteFiles validated from the snapshot read. */
private[commit] object IcebergTableRewrite extends FormatTableRewrite {

  private def load(spark: SparkSession, name: String): Table = {
    // `schema.table` named in the session catalog: given two parts, Iceberg first tries `schema` as
    // a catalog and logs CATALOG_NOT_FOUND with a stack trace before it looks there
    val parts = spark.sessionState.sqlParser.parseMultipartIdentifier(name)
    val qualified = if (parts.length <= 2) CatalogManager.SESSION_CATALOG_NAME +: parts else parts
    val table = Spark3Util.loadIcebergTable(spark, qualified.map(p => s"`${p.replace("`", "``")}`").mkString("."))
    table.refresh()
    table
  }

  /** The snapshot's scan tasks; `columnStats` keeps the files' column statistics (a scan drops them
   *  by default), which a commit puts into the new manifests. */
  private def tasks(table: Table, snapshotId: Long, columnStats: Boolean = true): Seq[FileScanTask] = {
    val scan = table.newScan().useSnapshot(snapshotId)
    val planned = (if (columnStats) scan.includeColumnStats() else scan).planFiles()
    try planned.asScala.toList finally planned.close() // strict: a Scala 2.12 Seq would be read after the close
  }

  override val kind: TableKind = TableKind.Iceberg

  override def dataFiles(spark: SparkSession, tableName: String): TableFiles = {
    val table = load(spark, tableName)
    Option(table.currentSnapshot()) match {
      case None => TableFiles(Some(-1L), Seq.empty)
      case Some(snapshot) =>
        // the files the build's snapshot added carry its sequence number (table format v2 on; v1
        // numbers every file 0, so no file is told apart there)
        val builtSequence = Option(table.properties().get(FormatTableRewrite.BuildVersion))
          .flatMap(v => scala.util.Try(v.toLong).toOption).flatMap(id => Option(table.snapshot(id)))
          .map(_.sequenceNumber()).filter(_ > 0)
        // Iceberg keeps no file mtime: the snapshot's commit time stands in (a rewritten file is a new file)
        TableFiles(Some(snapshot.snapshotId()), tasks(table, snapshot.snapshotId()).map { t =>
          val fromBuild = builtSequence.exists(s => Option(t.file().fileSequenceNumber()).exists(_.longValue == s))
          TableDataFile(t.file().location(), t.file().fileSizeInBytes(), snapshot.timestampMillis(), None,
            !t.deletes().isEmpty, fromBuild)
        })
    }
  }

  /** Iceberg's own read of a list of files (what its rewrite_data_files reads a file group with):
   *  the files' scan tasks of the snapshot, staged under a task set id, read by the table source as
   *  that set, their delete files applied. A filter on `_file` would open every file of the table
   *  (Iceberg prunes no file on it). The staged set lives in the driver until releaseRows; a table
   *  name keeps one at most (the lease lets one recluster at a time read it), so a run that stopped
   *  before its commit leaves one set until the next. */
  override def rowsOfFiles(spark: SparkSession, tableName: String, version: Option[Long], paths: Seq[String]): DataFrame = {
    val table = load(spark, tableName)
    val snapshotId = version.orElse(Option(table.currentSnapshot()).map(_.snapshotId())).getOrElse(
      throw TableRewrite.notDataFiles(tableName, " (it has no snapshot)", paths))
    val byPath = tasks(table, snapshotId, columnStats = false).map(t => t.file().location() -> t).toMap
    val missing = paths.filterNot(byPath.contains)
    if (missing.nonEmpty) throw TableRewrite.notDataFiles(tableName, s" at snapshot $snapshotId", missing)
    releaseRows(spark, tableName)
    val setId = s"spark_clustering_rows_${java.util.UUID.randomUUID()}"
    SparkTableCache.get().add(setId, table)
    ScanTaskSetManager.get().stageTasks(table, setId, paths.map(byPath).asJava)
    StagedRows.put(tableName, (table, setId))
    // the option is how Iceberg 1.11 and the Spark 3.5 runtime find the set; 1.12 on Spark 4.1 by the id alone
    val read = spark.read.format("iceberg").option("scan-task-set-id", setId).load(setId)
    // The same read, its table equal by the set's id and named by no catalog: Iceberg 1.12's staged
    // table has no equals and Spark 4.1 loads it again for each query of a view, so a query cached
    // over the view (the sampling pass) would never be used by the next (the quantiles, the cuts).
    val relation = read.queryExecution.analyzed.collectFirst { case r: DataSourceV2Relation => r }.getOrElse(
      throw new IllegalStateException(s"the staged read of $tableName is not a table scan"))
    SparkLine.dataFrame(spark, relation.copy(table = new StagedRowsTable(relation.table.asInstanceOf[SupportsRead], setId),
      catalog = None, identifier = None))
  }

  /** By the set recorded when it was staged: no table load, so a commit or recovery of a table that
   *  staged nothing costs nothing here. */
  override def releaseRows(spark: SparkSession, tableName: String): Unit =
    Option(StagedRows.remove(tableName)).foreach { case (table, setId) =>
      ScanTaskSetManager.get().removeTasks(table, setId)
      SparkTableCache.get().remove(setId)
    }

  /** Table name (as the functions are given it) -> the table and id of its staged set. */
  private val StagedRows = new java.util.concurrent.ConcurrentHashMap[String, (Table, String)]()

  /** A snapshot summary's counts of files it added or removed (a key is absent when its count is 0). */
  private val FileChanges = Seq("added-data-files", "deleted-data-files", "added-delete-files", "removed-delete-files")

  /** `iceberg:<snapshot id>` of the last snapshot that added or removed data or delete files (by its
   *  summary, in the table's metadata: no manifest read), `iceberg:none` before the first. */
  override def dataToken(spark: SparkSession, tableName: String): String = {
    val table = load(spark, tableName)
    Option(table.currentSnapshot()) match {
      case None => "iceberg:none"
      case Some(current) =>
        val older = Iterator.iterate(Option(current.parentId()).flatMap(id => Option(table.snapshot(id.longValue))))(
          _.flatMap(s => Option(s.parentId()).flatMap(id => Option(table.snapshot(id.longValue))))).takeWhile(_.isDefined).map(_.get)
        val changed = TableState.lastDataChange[org.apache.iceberg.Snapshot](current, older, s =>
          Option(s.summary()).map(_.asScala).map(m => FileChanges.exists(k =>
            m.get(k).exists(v => scala.util.Try(v.toLong).getOrElse(1L) != 0L))))
        s"iceberg:${changed.snapshotId()}"
    }
  }

  override def committedRows(spark: SparkSession, tableName: String, version: Long): Option[Long] = {
    val table = load(spark, tableName)
    Option(table.snapshot(version)).flatMap { snapshot =>
      val summary = Option(snapshot.summary()).map(_.asScala).getOrElse(Map.empty[String, String])
      def count(key: String): Option[Long] = summary.get(key).flatMap(v => scala.util.Try(v.toLong).toOption)
      // total-records: the record counts of the snapshot's live data files, whatever its operation;
      // the table's rows only while no delete file removes some of them
      val noDeletes = Seq("total-delete-files", "total-position-deletes", "total-equality-deletes")
        .forall(k => count(k).contains(0L))
      if (noDeletes) count("total-records") else None
    }
  }

  override def commitStaged(spark: SparkSession, tableName: String, stagingTable: String, stagingDir: Path,
      readVersion: Long, validatedRows: Long, replaced: Seq[String], clusterBy: Seq[String]): RewriteOutcome = {
    val table = load(spark, tableName)
    val staging = load(spark, stagingTable)
    if (!table.schema().sameSchema(staging.schema()) || !table.spec().compatibleWith(staging.spec())) {
      throw SparkClusteringErrors.invalidArgument("recluster", s"the Iceberg table $tableName has column ids or a " +
        s"partition spec a new table of its columns does not have (schema ${table.schema().asStruct()}, spec " +
        s"${table.spec()}): its schema or partitioning evolved. Rebuild it with dbt run --full-refresh, or recluster " +
        "it with rewrite_data_files")
    }
    val read = Option(table.snapshot(readVersion)).getOrElse(
      return RewriteOutcome.aborted(s"snapshot $readVersion it read is gone (expired); nothing was changed"))
    val byPath = tasks(table, readVersion).map(t => t.file().location() -> t).toMap
    val missing = replaced.filterNot(byPath.contains)
    if (missing.nonEmpty) {
      return RewriteOutcome.aborted(s"${missing.size} file(s) it rewrote are not in snapshot $readVersion, " +
        s"e.g. ${missing.head}; nothing was changed")
    }
    val removed = replaced.map(byPath)
    if (removed.exists(!_.deletes().isEmpty)) {
      return RewriteOutcome.aborted("files it rewrote have row-level delete files (merge-on-read); nothing " +
        "was changed. Compact them with rewrite_position_delete_files or rewrite_data_files first")
    }
    val rows = removed.map(_.file().recordCount()).sum
    if (rows != validatedRows) {
      return RewriteOutcome.aborted(s"the files it rewrote hold $rows rows by the manifests, the rewrite " +
        s"validated $validatedRows; nothing was changed")
    }
    val stagedSnapshot = Option(staging.currentSnapshot()).getOrElse(
      return RewriteOutcome.aborted(s"the staging table $stagingTable has no snapshot; nothing was changed"))
    // the staging table has one snapshot, its CTAS: its files are the staged ones
    val added: Seq[DataFile] = tasks(staging, stagedSnapshot.snapshotId()).map(_.file())
      .map(f => DataFiles.builder(table.spec()).copy(f).build())

    val rewrite = table.newRewrite()
      .validateFromSnapshot(readVersion)
      // equality deletes committed after the read still apply to the rewritten rows
      .dataSequenceNumber(read.sequenceNumber())
      .set("spark_clustering.recluster", stagingDir.getName)
      .set("spark_clustering.cluster_by", clusterBy.mkString(","))
    removed.foreach(t => rewrite.deleteFile(t.file()))
    added.foreach(f => rewrite.addFile(f))
    TestPausePoints.at(spark, "before_format_commit")
    try rewrite.commit() catch {
      case e @ (_: ValidationException | _: CommitFailedException) =>
        return RewriteOutcome.aborted(s"Iceberg refused the commit: ${e.getClass.getSimpleName}: " +
          s"${e.getMessage.split("\n").head}; nothing was changed, the next recluster starts over")
    }
    RewriteOutcome("committed", added.size.toLong, removed.size.toLong, added.map(_.fileSizeInBytes()).sum,
      removed.map(_.file().fileSizeInBytes()).sum)
  }

  override def stagingMetadata(stagingDir: Path): Path = new Path(stagingDir, "metadata")

  override def stagingParent(spark: SparkSession, tableName: String): Path =
    new Path(load(spark, tableName).location(), "data")
}

/** A staged read of Iceberg (one task set), equal to another by the set's id (see rowsOfFiles). */
private[formats] final class StagedRowsTable(staged: SupportsRead, val setId: String) extends SupportsRead {
  override def name(): String = staged.name()
  @annotation.nowarn("cat=deprecation")
  override def schema(): StructType = staged.schema()
  override def capabilities(): java.util.Set[TableCapability] = staged.capabilities()
  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = staged.newScanBuilder(options)
  override def equals(other: Any): Boolean = other match {
    case that: StagedRowsTable => that.setId == setId
    case _ => false
  }
  override def hashCode(): Int = setId.hashCode
}
