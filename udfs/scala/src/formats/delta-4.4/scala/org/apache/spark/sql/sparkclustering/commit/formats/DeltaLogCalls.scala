package org.apache.spark.sql.sparkclustering
package commit
package formats

import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.delta.{DeltaLog, Snapshot}
import org.apache.spark.sql.delta.actions.Action

/** The DeltaLog calls whose signatures differ between Delta releases (this file: Delta 4.x, for
 *  Spark 4.0 to 4.2; formats/delta-3.3/ has Delta 3.3's, for Spark 3.5). */
private[formats] object DeltaLogCalls {
  /** The actions of one commit. */
  def changes(log: DeltaLog, version: Long, t: CatalogTable): Iterator[(Long, Seq[Action])] =
    log.getChanges(version, version, Some(t), false)

  def snapshotAt(log: DeltaLog, version: Long, t: CatalogTable): Snapshot = log.getSnapshotAt(version, None, Some(t), false)
}
