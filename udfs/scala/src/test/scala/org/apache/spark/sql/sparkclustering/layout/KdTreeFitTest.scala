package org.apache.spark.sql.sparkclustering
package layout

import org.junit.Assert._
import org.junit.Test

import KdTreeFit.{Box, Column, Cut}

/** The k-d tree fit of `cluster_method: auto` on small hand-worked samples. */
class KdTreeFitTest {

  private val ints = implicitly[Ordering[Int]].asInstanceOf[Ordering[Any]]

  /** An INT column whose ids are its values; NULL's id is Long.MinValue, as KdTreeFitRows gives it. */
  private def column(values: Any*): Column = new Column(values.toArray,
    values.map(v => if (v == null) Long.MinValue else v.asInstanceOf[Int].toLong).toArray,
    values.map(v => if (v == null) null else v.toString).toArray, ints)

  @Test def shapeSplitsFilesInHalves(): Unit = {
    // 5 files: 2 low (one each), 3 high (1 + 2)
    assertEquals(Map(1 -> 5, 2 -> 2, 3 -> 3, 4 -> 1, 5 -> 1, 6 -> 1, 7 -> 2, 14 -> 1, 15 -> 1), KdTreeFit.shape(5))
    assertEquals(Map(1 -> 1), KdTreeFit.shape(1))
  }

  @Test def cutsAtTheMedianOfEachNode(): Unit = {
    val cuts = KdTreeFit.fit(IndexedSeq(column(80, 10, 70, 20, 60, 30, 50, 40)), Nil, 4, Seq("widest")).head
    assertEquals(Map(1 -> Cut(0, 40, "40"), 2 -> Cut(0, 20, "20"), 3 -> Cut(0, 60, "60")), cuts)
  }

  @Test def tiesStayTogether(): Unit = {
    // rank 3 of 6 falls inside the run of 1s: all four 1s go low
    val cuts = KdTreeFit.fit(IndexedSeq(column(1, 3, 1, 2, 1, 1)), Nil, 2, Seq("widest")).head
    assertEquals(Map(1 -> Cut(0, 1, "1")), cuts)
    // every row alike: all low, and the high node is empty (its cut sends every row one way)
    val alike = KdTreeFit.fit(IndexedSeq(column(5, 5, 5, 5)), Nil, 4, Seq("widest")).head
    assertEquals(Cut(0, 5, "5"), alike(1))
    assertEquals(Cut(0, null, null), alike(3))
  }

  @Test def nullsGoLow(): Unit = {
    // ids: MIN, MIN, 5, 6, 7, 8; rank 3 -> NULLs and 5 low, the cut is the largest value low
    val cuts = KdTreeFit.fit(IndexedSeq(column(7, null, 5, 8, null, 6)), Nil, 2, Seq("widest")).head
    assertEquals(Map(1 -> Cut(0, 5, "5")), cuts)
    // the low half of a node that is all NULL: only NULLs go low (no value, no literal)
    val nulls = KdTreeFit.fit(IndexedSeq(column(null, null, null, 4)), Nil, 2, Seq("widest")).head
    assertEquals(Map(1 -> Cut(0, null, null)), nulls)
    // 4 files over 2 NULLs and 6 values: node 2 holds the NULLs and 1, 2 (ranks of 8: 4 low)
    val four = KdTreeFit.fit(IndexedSeq(column(null, 1, 2, 3, 4, 5, 6, null)), Nil, 4, Seq("widest")).head
    assertEquals(Map(1 -> Cut(0, 2, "2"), 2 -> Cut(0, null, null), 3 -> Cut(0, 4, "4")), four)
  }

  @Test def widestOrFewestWorkloadBoxes(): Unit = {
    // a spans 0..98, b 0..7; halves by a each hold b values on both sides of 3
    val a = column(0, 14, 28, 42, 56, 70, 84, 98)
    val b = column(0, 3, 6, 1, 4, 7, 2, 5)
    // a box filtering b <= 3, ten times: cut on a, it meets both halves (20); on b, the low one (10)
    val box = new Box(10, Array(false, true), Array(null, null), Array(null, 3))
    val Seq(widest, workload) = KdTreeFit.fit(IndexedSeq(a, b), Seq(box), 2, Seq("widest", "workload"))
    assertEquals(Cut(0, 42, "42"), widest(1))
    assertEquals(Cut(1, 3, "3"), workload(1))
    // without boxes 'workload' ties on every column and takes the widest
    assertEquals(Cut(0, 42, "42"), KdTreeFit.fit(IndexedSeq(a, b), Nil, 2, Seq("workload")).head(1))
  }
}
