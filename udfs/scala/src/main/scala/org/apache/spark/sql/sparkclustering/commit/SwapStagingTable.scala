package org.apache.spark.sql.sparkclustering
package commit

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, CatalogTableType}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types.{DataType, LongType, StringType}
import org.apache.spark.sql.sparkclustering.tables.CatalogTables

/** `select * from drop_sidecar_table('db.t__sc_backup')`: drop one of the package's own sidecar
 *  tables (`__sc_backup`, `__sc_staging`, `__sc_recluster`) together with its files, which DROP
 *  keeps for an external table (a `location_root` build). One row (location, deleted). */
private[sparkclustering] case class DropSidecarTable(tableName: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("location", StringType, nullable = true)(),
    AttributeReference("deleted", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val (location, deleted) = DropSidecarTable.drop(spark, tableName)
    Seq(Row(location.orNull, deleted))
  }
}

private[sparkclustering] object DropSidecarTable {
  /** Drops the sidecar table and deletes its directory; (its location, 1 if the directory was deleted). */
  def drop(spark: SparkSession, tableName: String): (Option[String], Long) = {
    if (!tableName.matches("(?i).*__sc_(backup|staging|recluster)`?")) {
      throw SparkClusteringErrors.invalidArgument("drop_sidecar_table",
        s"'$tableName' is not a spark_clustering sidecar table (<name>__sc_backup, __sc_staging or __sc_recluster)")
    }
    val session = Sessions.classic(spark)
    val ident = session.sessionState.sqlParser.parseTableIdentifier(tableName)
    // one metastore read each (getTableMetadata, not tableExists + getTableMetadata)
    CatalogTables.tableIfExists(spark, ident) match {
      case None => (None, 0L)
      case Some(t) => (Some(CatalogTables.location(t).toString), dropWithFiles(spark, ident, t))
    }
  }

  private def dropWithFiles(spark: SparkSession, ident: TableIdentifier, t: CatalogTable): Long = {
    val catalog = Sessions.classic(spark).sessionState.catalog
    val loc = CatalogTables.location(t)
    catalog.dropTable(ident, ignoreIfNotExists = true, purge = true)
    val fs = loc.getFileSystem(Sessions.hadoopConf(spark))
    // never the live table's data: its location must not lie inside the sidecar's
    val live = ident.copy(table = ident.table.replaceAll("(?i)__sc_(backup|staging|recluster)$", ""))
    val liveLocation = CatalogTables.tableIfExists(spark, live).map(l => fs.makeQualified(CatalogTables.location(l)).toString)
    val qualified = fs.makeQualified(loc).toString
    val inside = liveLocation.exists(l => l == qualified || l.startsWith(qualified.stripSuffix("/") + "/"))
    if (inside) {
      // a staging table whose location the live table switched to: the switch happened, and the
      // location it replaced (recorded before it) is what is left to delete
      // (never one that holds the live table's files: a table that was located at a directory
      // containing its database's build locations, e.g. the database's own)
      val replaced = t.properties.get(SwapStagingTable.ReplacesLocation).map(new Path(_))
      replaced.filterNot { r =>
        val q = fs.makeQualified(r).toString.stripSuffix("/")
        liveLocation.exists(l => l == q || l.startsWith(q + "/"))
      }.map(r => if (fs.delete(r, true)) 1L else 0L).getOrElse(0L)
    } else if (fs.exists(loc) && fs.delete(loc, true)) 1L else 0L
  }
}

/** `select * from swap_staging_table('db.t', lease_token, what)`: clustered_table's swap in one
 *  call, after checking the lease and before releasing it. An empty token: no lease. One row
 *  (replaced: 1 when a table was replaced, backup_deleted).
 *
 *  A staging table at a build location (EXTERNAL, at `<database>/<t>__sc_build_<run>`: config
 *  cluster_swap, macros/write/_write_plan.sql) replaces a `t` of the same format and columns, with
 *  no partitions, by ONE metastore update: `t` becomes an external table over the staging table's
 *  files, where they were written (no file moves, so on an object store no object is copied), with
 *  the staging table's properties. Readers see the old files or the new ones, and `t` never goes
 *  missing. Then the staging table's metadata and the location `t` had (recorded on the staging
 *  table first, for recovery) are dropped. External, because Spark renames a managed table by
 *  pointing it at the new name's default directory, which would leave its files behind.
 *
 *  Otherwise: rename `t` to `t__sc_backup`, rename the staging table to `t`, drop the backup with its
 *  files: the steps of the SQL path (macros/write/swap_relation.sql) without a round trip each. On
 *  an object store the rename of a managed table copies its directory; the rename of an external
 *  one (a staging table at a build location or at a `location_root`) copies nothing.
 *
 *  A crash between two steps leaves what recover_swap (macros/write/recover_swap.sql) finishes or
 *  rolls back. */
private[sparkclustering] case class SwapStagingTable(tableName: String, token: String, what: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("replaced", LongType, nullable = false)(),
    AttributeReference("backup_deleted", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val f = "swap_staging_table"
    val session = Sessions.classic(spark)
    val target = session.sessionState.sqlParser.parseTableIdentifier(tableName)
    val staging = target.copy(table = target.table + "__sc_staging")
    val backup = target.copy(table = target.table + "__sc_backup")
    if (token.nonEmpty) TableLease.check(token, what)
    val staged = CatalogTables.tableIfExists(spark, staging).getOrElse(
      throw SparkClusteringErrors.invalidArgument(f, s"$staging does not exist"))
    // recover_swap promotes only a validated staging table; so does the swap
    if (!staged.properties.get("spark_clustering.validated").contains("true")) {
      throw SparkClusteringErrors.invalidArgument(f, s"$staging is not validated (tblproperty spark_clustering.validated)")
    }
    val existing = CatalogTables.tableIfExists(spark, target)
    if (existing.exists(_.tableType == CatalogTableType.VIEW)) {
      throw SparkClusteringErrors.invalidArgument(f, s"$target is a view; drop it first")
    }
    val atBuildLocation = SwapStagingTable.isAtBuildLocation(staged, target)
    val switchable = existing.filter(e => atBuildLocation && SwapStagingTable.sameShape(e, staged))
    val deleted = switchable match {
      case Some(e) => switchLocation(session, e, staged)
      case None =>
        existing.foreach { _ =>
          rename(session, target, backup)
          TestPausePoints.at(spark, "clustered_table.after_backup")
        }
        rename(session, staging, target)
        TestPausePoints.at(spark, "clustered_table.after_promote")
        if (existing.isDefined) DropSidecarTable.drop(spark, backup.unquotedString)._2 else 0L
    }
    if (atBuildLocation) SwapStagingTable.deleteOtherBuilds(spark, staged, target)
    if (token.nonEmpty) TableLease.release(token)
    Seq(Row(if (existing.isDefined) 1L else 0L, deleted))
  }

  /** Points `e` at the staging table's location in one metastore update, then drops the staging
   *  table's metadata and the location `e` had. 1 if that location was deleted. */
  private def switchLocation(session: SparkLine.ClassicSession, e: CatalogTable,
                             staged: CatalogTable): Long = {
    val catalog = session.sessionState.catalog
    val replaced = CatalogTables.location(e)
    // recorded first, so that recovery after a crash right after the switch deletes it
    catalog.alterTable(staged.copy(properties = staged.properties + (SwapStagingTable.ReplacesLocation -> replaced.toString)))
    forget(session, e.identifier)
    catalog.alterTable(e.copy(
      tableType = CatalogTableType.EXTERNAL,
      storage = staged.storage,
      properties = staged.properties,
      comment = staged.comment,
      stats = None))
    if (e.stats.isDefined) catalog.alterTableStats(e.identifier, None)
    TestPausePoints.at(session, "clustered_table.after_promote")
    DropSidecarTable.drop(session, TableIdentifier(staged.identifier.table, staged.identifier.database).unquotedString)._2
  }

  /** What ALTER TABLE ... RENAME TO does, less its cache lookup (which resolves the table and lists
   *  its files): drop cached data of the old name (a cached plan of `db.t` would otherwise answer
   *  for the table that takes the name and the location next), forget its relation, rename. */
  private def rename(session: SparkLine.ClassicSession, from: TableIdentifier, to: TableIdentifier): Unit = {
    forget(session, from)
    val catalog = session.sessionState.catalog
    val before = catalog.getTableMetadata(from)
    catalog.renameTable(from, to)
    SwapStagingTable.movePartitions(session, before, to)
  }

  private def forget(session: SparkLine.ClassicSession, ident: TableIdentifier): Unit = {
    SparkLine.uncache(session, ident)
    session.sessionState.catalog.refreshTable(ident)
  }
}

private[sparkclustering] object SwapStagingTable {
  /** After the rename of partitioned table `before` to `to`: every partition whose location lies
   *  under `before`'s location, at the same place under the renamed table's. The Hive metastore
   *  does this itself when it moves a managed table's directory; Spark's in-memory catalog (a Spark
   *  Connect server's default) moves the directory and leaves the partitions where it was, so the
   *  renamed table read no rows. Nothing to do on the Hive metastore. */
  def movePartitions(session: SparkLine.ClassicSession, before: CatalogTable, to: TableIdentifier): Unit = {
    if (before.partitionColumnNames.isEmpty) return
    val catalog = session.sessionState.catalog
    val (from, moved) = (CatalogTables.location(before), CatalogTables.location(catalog.getTableMetadata(to)))
    if (from == moved) return
    val under = from.toString.stripSuffix("/") + "/"
    val stale = catalog.listPartitions(to).flatMap { p =>
      p.storage.locationUri.map(u => new Path(u).toString).filter(_.startsWith(under)).map { old =>
        p.copy(storage = p.storage.copy(locationUri = Some(new Path(moved, old.substring(under.length)).toUri)))
      }
    }
    if (stale.nonEmpty) catalog.alterPartitions(to, stale)
  }

  /** On a staging table at a build location: the location of the table it replaced by a switch. */
  val ReplacesLocation = "spark_clustering.replaces_location"

  /** The directory name of a build location of table `t`: `<t>__sc_build_<run>`. */
  def buildDirPrefix(table: String): String = table.toLowerCase + "__sc_build_"

  /** `<prefix><run>`, the run the first 8 characters of a dbt invocation id: not another table
   *  whose name happens to start with the prefix. */
  def isBuildDirOf(name: String, prefix: String): Boolean = {
    val lower = name.toLowerCase
    lower.startsWith(prefix) && lower.substring(prefix.length).matches("[0-9a-f-]{1,36}")
  }

  def isAtBuildLocation(staged: CatalogTable, target: TableIdentifier): Boolean =
    staged.tableType == CatalogTableType.EXTERNAL &&
      isBuildDirOf(CatalogTables.location(staged).getName, buildDirPrefix(target.table))

  /** Build locations of `t` other than the live one: left by a build that died before its staging
   *  table was registered. The table's name lease (held by the swap) keeps other builds out. */
  def deleteOtherBuilds(spark: SparkSession, staged: CatalogTable, target: TableIdentifier): Unit = {
    val live = CatalogTables.location(staged)
    val fs = live.getFileSystem(Sessions.hadoopConf(spark))
    // a listing filtered by name, not a glob: a table name may hold glob characters (`*`, `[`, `{`)
    val prefix = buildDirPrefix(target.table)
    val builds = fs.listStatus(live.getParent, new org.apache.hadoop.fs.PathFilter {
      def accept(p: Path): Boolean = isBuildDirOf(p.getName, prefix)
    })
    builds.map(_.getPath).filter(p => fs.makeQualified(p) != fs.makeQualified(live)).foreach(p => fs.delete(p, true))
  }

  /** A table that the staging table can replace by a switch of its location alone: same format,
   *  columns and types, neither partitioned (each partition has its own location) nor bucketed. */
  def sameShape(e: CatalogTable, staged: CatalogTable): Boolean =
    (e.tableType == CatalogTableType.MANAGED || e.tableType == CatalogTableType.EXTERNAL) &&
      e.provider.map(_.toLowerCase) == staged.provider.map(_.toLowerCase) &&
      e.partitionColumnNames.isEmpty && staged.partitionColumnNames.isEmpty &&
      e.bucketSpec.isEmpty && staged.bucketSpec.isEmpty &&
      e.schema.length == staged.schema.length &&
      e.schema.zip(staged.schema).forall { case (a, b) =>
        a.name == b.name && DataType.equalsIgnoreNullability(a.dataType, b.dataType) }
}
