package org.apache.spark.sql.sparkclustering
package commit

import org.junit.Test
import org.junit.Assert._

/** The accumulator of observe_row_checksum: what the tasks of a write add and the driver merges is
 *  the checksum of row_checksum.sql (rows, sum, xor), whichever way the rows are split into tasks. */
class RowChecksumAccumulatorTest {

  private val rows: Seq[(Long, Long)] = (0 until 1000).map(i => ((i * 7919L) % 65537L - 30000L, i.toLong * 0x9E3779B97F4A7C15L))

  private def of(part: Seq[(Long, Long)]): RowChecksumAccumulator = {
    val acc = new RowChecksumAccumulator
    part.foreach { case (h, x) => acc.addRow(h, x) }
    acc
  }

  @Test def mergedTasksEqualOneTaskOverEveryRow(): Unit = {
    val whole = of(rows).value
    assertEquals(RowChecksum(1000L, rows.map(_._1).sum, rows.map(_._2).reduce(_ ^ _)), whole)
    for (cut <- Seq(0, 1, 333, 999, 1000)) {
      val driver = new RowChecksumAccumulator
      driver.merge(of(rows.take(cut)))
      driver.merge(of(rows.drop(cut)))
      assertEquals(s"split at $cut", whole, driver.value)
    }
  }

  @Test def aTaskCountedTwiceChangesTheChecksum(): Unit = {
    val driver = new RowChecksumAccumulator
    val task = of(rows.take(10))
    driver.merge(task)
    driver.merge(task)
    driver.merge(of(rows.drop(10)))
    assertNotEquals(of(rows).value, driver.value)
  }

  @Test def aCopyForTheExecutorsStartsAtZero(): Unit = {
    val acc = of(rows)
    val zero = acc.copyAndReset()
    assertTrue(zero.isZero)
    assertEquals(RowChecksum(0L, 0L, 0L), zero.value)
    assertEquals(of(rows).value, acc.value)
    assertFalse(acc.isZero)
  }
}
