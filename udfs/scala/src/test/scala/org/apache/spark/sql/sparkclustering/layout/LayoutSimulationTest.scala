package org.apache.spark.sql.sparkclustering
package layout

import org.junit.Assert._
import org.junit.Test

import KdTreeFit.Box
import LayoutSimulation.{ByFile, ByKey}

/** The driver's simulation of `cluster_method: auto`'s candidates on small hand-worked rows. */
class LayoutSimulationTest {

  private val ints = implicitly[Ordering[Int]].asInstanceOf[Ordering[Any]]

  @Test def ntileCutsAsSqlDoes(): Unit = {
    // 10 rows in 4 runs: 3, 3, 2, 2 (ntile: the first n % files runs one row longer), in key order
    assertEquals(Seq(1L, 1, 1, 2, 2, 2, 3, 3, 4, 4), LayoutSimulation.ntile(Array(0L, 1, 2, 3, 4, 5, 6, 7, 8, 9), 4).toSeq)
    // keys out of order; equal keys keep the rows' order
    assertEquals(Seq(2L, 1, 2, 1), LayoutSimulation.ntile(Array(9L, 5, 9, 5), 2).toSeq)
    // fewer rows than files: a row a run
    assertEquals(Seq(3L, 1, 2), LayoutSimulation.ntile(Array(30L, 10, 20), 8).toSeq)
    // as many runs as files, sizes differing by one at most
    val runs = LayoutSimulation.ntile(Array.tabulate(1000)(i => (i * 7919L) % 1000), 64)
    val sizes = runs.groupBy(identity).values.map(_.length)
    assertEquals(64, sizes.size)
    assertTrue(sizes.max - sizes.min <= 1)
  }

  @Test def countsTheBoxesMeetingEachFilesMinMax(): Unit = {
    // two columns; candidate 0 orders by a (files {a 0..3}, {a 4..7}), candidate 1 by b,
    // candidate 2 places rows as given (its own files: rows 0 and 7 alone, the rest together)
    val a = Array[Any](0, 1, 2, 3, 4, 5, 6, 7)
    val b = Array[Any](7, 6, 5, 4, 3, 2, 1, 0)
    val byA = Array(0L, 1, 2, 3, 4, 5, 6, 7)
    val byB = Array(7L, 6, 5, 4, 3, 2, 1, 0)
    val leaves = Array(0L, 1, 1, 1, 1, 1, 1, 2)
    // a <= 1, twice: meets one file of either curve (a's 0..3; b's files hold a 4..7 and 0..3) and two leaves
    val low = new Box(2, Array(true, false), Array(null, null), Array(1, null))
    // a IS NOT NULL (both ends open): every file
    val notNull = new Box(1, Array(true, false), Array(null, null), Array(null, null))
    val scanned = LayoutSimulation.filesScanned(IndexedSeq(a, b), IndexedSeq(ints, ints), IndexedSeq(byA, byB, leaves),
      IndexedSeq(ByKey, ByKey, ByFile), 2, Seq(low, notNull))
    assertEquals(Seq(2L * 1 + 2, 2L * 1 + 2, 2L * 2 + 3), scanned)
  }

  @Test def nullsMeetOnlyOpenBoxesThatAskNoValue(): Unit = {
    // a file of NULLs only: a bounded box misses it, IS NOT NULL misses it
    val a = Array[Any](null, null, 5, 6)
    val bounded = new Box(1, Array(true), Array(0), Array(10))
    val notNull = new Box(1, Array(true), Array(null), Array(null))
    val other = new Box(1, Array(false), Array(null), Array(null)) // filters no clustering column: every file
    val scanned = LayoutSimulation.filesScanned(IndexedSeq(a), IndexedSeq(ints), IndexedSeq(Array(0L, 1, 2, 3)),
      IndexedSeq(ByKey), 2, Seq(bounded, notNull, other))
    assertEquals(Seq(1L + 1 + 2), scanned)
  }
}
