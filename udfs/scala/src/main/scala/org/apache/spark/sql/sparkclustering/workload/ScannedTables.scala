package org.apache.spark.sql.sparkclustering
package workload

import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.connector.catalog.CatalogManager
import org.apache.spark.sql.execution.datasources.FileIndex
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

/**
 * Where a scanned table keeps its clustering property (ObservedWorkload.ClusterByProperty), read
 * from what planning already holds, with no catalog or storage call: the catalog entry of a plain
 * table; a Delta table's log metadata, through its file index (Delta's catalog entry has no
 * properties); an Iceberg table's own properties, on its v2 relation.
 */
private[sparkclustering] object ScannedTables {

  /** The property of a file-source scan's table. */
  def clusterBy(table: CatalogTable, index: FileIndex): Option[String] =
    table.properties.get(ObservedWorkload.ClusterByProperty).orElse {
      if (table.provider.exists(_.equalsIgnoreCase("delta"))) deltaConfiguration.flatMap(_(index).get(ObservedWorkload.ClusterByProperty))
      else None
    }

  /** (database, table, property) of a v2 scan of a table of the session catalog (Iceberg's
   *  SparkSessionCatalog); None for other catalogs, whose tables the package does not cluster. */
  def ofV2(relation: DataSourceV2Relation): Option[(Option[String], String, Option[String])] =
    for {
      ident <- relation.identifier
      if relation.catalog.exists(_.name == CatalogManager.SESSION_CATALOG_NAME)
    } yield (ident.namespace.lastOption, ident.name,
      Option(relation.table.properties).flatMap(p => Option(p.get(ObservedWorkload.ClusterByProperty))))

  /** A Delta file index's table configuration (DeltaScanProperties, compiled where the Spark line has
   *  a Delta release); None when this jar or this session has no Delta. */
  private lazy val deltaConfiguration: Option[FileIndex => Map[String, String]] =
    try Some(Class.forName(getClass.getName.stripSuffix("ScannedTables$") + "DeltaScanProperties$")
      .getField("MODULE$").get(null).asInstanceOf[FileIndex => Map[String, String]])
    catch { case _: ClassNotFoundException | _: LinkageError => None }
}
