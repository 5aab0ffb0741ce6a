package org.apache.spark.sql.sparkclustering
package stats

import org.apache.hadoop.fs.FileStatus

import org.apache.spark.sql.types.StructField

/**
 * One place per-file statistics come from. FileStatsStore asks its sources in order (the sidecar
 * the package writes, then the files' footers) and takes, per file, the first answer. Statistics
 * are keyed by the table's field names, bound what a reader under `ctx` reads, and are never
 * tighter than the data (see FileStats).
 */
private[stats] trait FileStatsSource {
  /** Statistics of `files` (aligned with them) of `fields` (the table's recordable columns); None
   *  where this source has nothing for a file. A failure for one file is a None, never a throw. */
  def statsFor(files: IndexedSeq[FileStatus], fields: Seq[StructField], ctx: ReadContext): IndexedSeq[Option[FileStats]]
}
