package org.apache.spark.sql.sparkclustering
package layout

import KdTreeFit.Box

/**
 * The simulation of `cluster_method: auto` (macros/layouts/_choose_layout.sql) on the driver: for
 * each candidate layout, the files it would write from the search's rows and the workload boxes
 * that meet each file's min/max, summed. The SQL simulation does the same in one query, one task
 * that sorts every row once per candidate through an interpreted window (0.9-1.4 s at 64 files
 * and 25 candidates, 2.8 s in a cold JVM); here the rows' keys are computed by Spark and collected,
 * and each candidate is one sort of longs.
 *
 * A candidate gives each row either a key (a curve's: the files are its rows cut in key order into
 * `files` runs as SQL's ntile cuts them, the first runs a row longer) or the file itself (a k-d
 * tree's leaf).
 */
private[layout] object LayoutSimulation {

  /** How a candidate's column places a row: by a key cut in `files` runs, or as its file. */
  sealed trait Placement
  case object ByKey extends Placement
  case object ByFile extends Placement

  /** For each candidate (its rows' keys or files, `placements` saying which), the boxes meeting
   *  each of its files, summed over the files. `values`: per clustering column, the rows' values;
   *  `orderings` theirs. */
  def filesScanned(values: IndexedSeq[Array[Any]], orderings: IndexedSeq[Ordering[Any]], candidates: IndexedSeq[Array[Long]],
      placements: IndexedSeq[Placement], files: Int, boxes: Seq[Box]): IndexedSeq[Long] =
    candidates.indices.map { i =>
      val file = placements(i) match {
        case ByKey => ntile(candidates(i), files)
        case ByFile => candidates(i)
      }
      val rowsOfFile = file.indices.groupBy(file(_))
      rowsOfFile.valuesIterator.map { rows =>
        val min = new Array[Any](values.length)
        val max = new Array[Any](values.length)
        values.indices.foreach { c =>
          val column = values(c)
          val o = orderings(c)
          rows.foreach { r =>
            val v = column(r)
            if (v != null) {
              if (min(c) == null || o.lt(v, min(c))) min(c) = v
              if (max(c) == null || o.gt(v, max(c))) max(c) = v
            }
          }
        }
        KdTreeFit.boxesMeeting(orderings, boxes, min, max)
      }.sum
    }

  /** Each row's run (1..files) in `keys` order, cut as SQL's ntile(files) cuts: every run n / files
   *  rows, the first n % files one more. Equal keys keep the rows' order. */
  def ntile(keys: Array[Long], files: Int): Array[Long] = {
    val n = keys.length
    val order = (0 until n).sortBy(keys(_)) // a stable sort: ties in row order
    val size = n / files
    val longer = n % files
    val out = new Array[Long](n)
    var rank = 0
    order.foreach { r =>
      // the first `longer` runs hold size + 1 rows each
      out(r) = if (rank < longer * (size + 1)) rank / (size + 1) + 1 else longer + (rank - longer * (size + 1)) / math.max(size, 1) + 1
      rank += 1
    }
    out
  }
}
