package org.apache.spark.sql.sparkclustering
package commit

import org.junit.Assert._
import org.junit.Test

/** The pure parts of table_state: a plain table's listing token and the walk back a format's log to
 *  the last commit that changed files. */
class TableStateTest {

  private val files = Seq(("file:/w/t/a.parquet", 10L, 1L), ("file:/w/t/b.parquet", 20L, 2L))

  @Test def aListingTokenIsTheSameInAnyOrderAndCountsTheFiles(): Unit = {
    val token = TableState.listingToken("file:/w/t", files)
    assertEquals(token, TableState.listingToken("file:/w/t", files.reverse))
    assertTrue(token, token.startsWith("files:2:"))
  }

  @Test def anyChangeOfAFileOrTheLocationChangesTheToken(): Unit = {
    val token = TableState.listingToken("file:/w/t", files)
    val changed = Seq(
      TableState.listingToken("file:/w/t", files :+ (("file:/w/t/c.parquet", 1L, 3L))), // an append
      TableState.listingToken("file:/w/t", files.take(1)), // a delete
      TableState.listingToken("file:/w/t", Seq(files.head, files(1).copy(_2 = 21L))), // rewritten in place
      TableState.listingToken("file:/w/t", Seq(files.head, files(1).copy(_3 = 3L))), // touched
      TableState.listingToken("file:/w/t2", files)) // the same names elsewhere (a rebuild swapped in)
    changed.foreach(other => assertNotEquals(token, other))
    assertEquals(changed.size, changed.distinct.size)
  }

  /** versions 0..current; `changes` the versions whose commit added or removed files, `unreadable`
   *  those whose log entry is gone. */
  private def last(current: Long, changes: Set[Long], unreadable: Set[Long] = Set.empty): Long =
    TableState.lastDataChange[Long](current, Iterator.iterate(current - 1)(_ - 1).takeWhile(_ >= 0),
      v => if (unreadable.contains(v)) None else Some(changes.contains(v)))

  @Test def commitsWithoutFilesKeepTheLastDataVersion(): Unit = {
    // 3: the rewrite, 4: its table properties, 5: an append of no rows
    assertEquals(3L, last(5, Set(0, 1, 3)))
    assertEquals(5L, last(5, Set(0, 5)))
    // a later data commit moves it
    assertEquals(6L, last(6, Set(0, 3, 6)))
  }

  @Test def anUnreadableEntryOrALongRunWithoutFilesGivesTheCurrentVersion(): Unit = {
    assertEquals(5L, last(5, Set(0, 3), unreadable = Set(4)))
    val current = TableState.MaxCommitsBack + 10L
    assertEquals(current, last(current, Set(0)))
    assertEquals(current - TableState.MaxCommitsBack + 1, last(current, Set(0, current - TableState.MaxCommitsBack + 1)))
  }

  @Test def aHistoryWithoutAnyFileIsItsFirstCommit(): Unit = {
    assertEquals(0L, last(2, Set.empty))
    assertEquals(0L, last(0, Set.empty))
  }
}
