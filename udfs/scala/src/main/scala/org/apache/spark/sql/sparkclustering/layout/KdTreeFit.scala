package org.apache.spark.sql.sparkclustering
package layout

import scala.collection.mutable

/**
 * The k-d tree fit of `cluster_method: auto` (macros/layouts/_kdtree_layout.sql), in one pass on
 * the driver: the same trees the SQL fit cuts a level per query, with no Spark job per level.
 *
 * The sampled rows are cut in two, and each part again, until every part is one file: node i of
 * n files has children 2i (n / 2 files) and 2i + 1 (the rest). A node is cut on one column at its
 * rank (n / 2) / n of that column's ids: the lower half is every row whose id is at most the id at
 * that rank (ties stay together), and the cut recorded is the lower half's largest value (as the
 * SQL literal the rows carry), so rows quantized on their own later fall on the same side. The
 * column: 'widest', the one whose ids span most in the node; 'workload', the one where the fewest
 * workload boxes meet the halves' min/max (weighted by count, summed over both halves), on a tie
 * the widest. A row is in the lower half of a cut when its value is NULL or at most the cut.
 */
private[layout] object KdTreeFit {

  /** One clustering column of the fit rows: values (Spark's internal form), ids, SQL literals. */
  final class Column(val values: Array[Any], val ids: Array[Long], val literals: Array[String],
      val ordering: Ordering[Any])

  /** A workload box, `count` times: per column, whether it filters on it and its bounds (null = open). */
  final class Box(val count: Long, val filters: Array[Boolean], val lo: Array[Any], val hi: Array[Any])

  /** A node's cut: the column (index) and its value and literal (null: only NULLs go low). */
  final case class Cut(column: Int, value: Any, literal: String)

  /** Files below each node of a tree over `files` files. */
  def shape(files: Int): Map[Int, Int] = {
    val out = mutable.LinkedHashMap(1 -> files)
    var level = Seq(1)
    while (level.nonEmpty) {
      level = level.filter(out(_) > 1).flatMap { node =>
        out(2 * node) = out(node) / 2
        out(2 * node + 1) = out(node) - out(node) / 2
        Seq(2 * node, 2 * node + 1)
      }
    }
    out.toMap
  }

  /** The cuts of one tree per entry of `splits` ('widest' or 'workload'), fit on `columns`' rows. */
  def fit(columns: IndexedSeq[Column], boxes: Seq[Box], files: Int, splits: Seq[String]): Seq[Map[Int, Cut]] = {
    val rows = if (columns.isEmpty) 0 else columns.head.ids.length
    val tree = shape(files)
    splits.map { split =>
      val cuts = mutable.Map.empty[Int, Cut]
      val node = Array.fill(rows)(1)
      var level = Seq(1).filter(tree(_) > 1)
      while (level.nonEmpty) {
        val inLevel = level.toSet
        val members = (0 until rows).filter(r => inLevel(node(r))).groupBy(node(_))
        level.foreach { n =>
          val cut = members.get(n) match {
            case Some(rowsOfNode) => bestCut(columns, boxes, rowsOfNode.toArray, tree(n) / 2, tree(n), split == "workload")
            case None => Cut(0, null, null) // the sample left the node empty: every row on one side
          }
          cuts(n) = cut
        }
        members.foreach { case (n, rowsOfNode) =>
          val cut = cuts(n)
          rowsOfNode.foreach(r => node(r) = if (lower(columns(cut.column), r, cut)) 2 * n else 2 * n + 1)
        }
        level = level.flatMap(n => Seq(2 * n, 2 * n + 1)).filter(tree(_) > 1)
      }
      cuts.toMap
    }
  }

  private def lower(column: Column, row: Int, cut: Cut): Boolean = {
    val v = column.values(row)
    v == null || (cut.value != null && column.ordering.lteq(v, cut.value))
  }

  /** The node's cut on each column, the best by the split's rule (the first column on a full tie). */
  private def bestCut(columns: IndexedSeq[Column], boxes: Seq[Box], rows: Array[Int], lowFiles: Int, allFiles: Int,
      byWorkload: Boolean): Cut = {
    var best: (Long, Double, Cut) = null
    val rank = (rows.length.toLong * lowFiles / allFiles).toInt
    columns.indices.foreach { c =>
      val ids = rows.map(columns(c).ids(_))
      val sorted = ids.sorted
      val low = if (rank >= 1) { val threshold = sorted(rank - 1); ids.map(_ <= threshold) } else ids.map(_ => false)
      val width = (sorted.last - sorted.head).toDouble
      val lowRows = rows.indices.filter(low(_)).map(rows(_))
      val highRows = rows.indices.filterNot(low(_)).map(rows(_))
      val hits = if (!byWorkload) 0L else Seq(lowRows, highRows).filter(_.nonEmpty).map(h => boxHits(columns, boxes, h)).sum
      // the lower half's largest value on the cut column (NULLs left out; all NULL: only NULLs go low)
      val cutColumn = columns(c)
      var top = -1
      lowRows.foreach { r =>
        val v = cutColumn.values(r)
        if (v != null && (top < 0 || cutColumn.ordering.gt(v, cutColumn.values(top)))) top = r
      }
      val cut = if (top < 0) Cut(c, null, null) else Cut(c, cutColumn.values(top), cutColumn.literals(top))
      if (best == null || hits < best._1 || (hits == best._1 && width > best._2)) best = (hits, width, cut)
    }
    best._3
  }

  /** The boxes (times their count) that meet the min/max of `rows` on every column they filter. */
  private def boxHits(columns: IndexedSeq[Column], boxes: Seq[Box], rows: Seq[Int]): Long = {
    val min = new Array[Any](columns.length)
    val max = new Array[Any](columns.length)
    columns.indices.foreach { c =>
      val column = columns(c)
      rows.foreach { r =>
        val v = column.values(r)
        if (v != null) {
          if (min(c) == null || column.ordering.lt(v, min(c))) min(c) = v
          if (max(c) == null || column.ordering.gt(v, max(c))) max(c) = v
        }
      }
    }
    boxesMeeting(columns.map(_.ordering), boxes, min, max)
  }

  /** The boxes (times their count) that meet a file's `min`/`max` (null: no value but NULL) on every
   *  column they filter, as _box_conditions' file test does: a bound meets a file whose range reaches
   *  it; a filter open at both ends (IS NOT NULL) meets a file with a value. */
  private[layout] def boxesMeeting(orderings: IndexedSeq[Ordering[Any]], boxes: Seq[Box], min: Array[Any],
      max: Array[Any]): Long =
    boxes.iterator.filter { box =>
      orderings.indices.forall { c =>
        val o = orderings(c)
        !box.filters(c) || (
          (box.lo(c) == null || (max(c) != null && o.gteq(max(c), box.lo(c)))) &&
            (box.hi(c) == null || (min(c) != null && o.lteq(min(c), box.hi(c)))) &&
            (box.lo(c) != null || box.hi(c) != null || min(c) != null))
      }
    }.map(_.count).sum
}
