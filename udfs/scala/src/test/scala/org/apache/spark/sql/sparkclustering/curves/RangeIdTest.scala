package org.apache.spark.sql.sparkclustering
package curves

import org.junit.Assert._
import org.junit.Test

import org.apache.spark.sql.catalyst.expressions.{CreateArray, Expression, Literal}
import org.apache.spark.sql.types._

/** range_id(value, boundaries) = 0 for NULL, else 1 + the number of boundaries <= value in Spark's
 *  ordering: hand-counted cases, evaluated by the expression's interpreted path. */
class RangeIdTest {

  private def rangeId(value: Expression, boundaries: Expression*): Int = {
    val dt = if (boundaries.nonEmpty) boundaries.head.dataType else value.dataType
    val array = if (boundaries.isEmpty) Literal.create(Seq(), ArrayType(dt)) else CreateArray(boundaries)
    RangeId(value, array).eval(null).asInstanceOf[Int]
  }

  @Test def countsTheBoundariesAtOrBelowTheValue(): Unit = {
    val b = Seq(1, 2, 2, 2, 3).map(Literal(_))
    assertEquals(1, rangeId(Literal(0), b: _*))
    assertEquals(2, rangeId(Literal(1), b: _*))
    assertEquals(5, rangeId(Literal(2), b: _*)) // every duplicate counts
    assertEquals(6, rangeId(Literal(9), b: _*))
    assertEquals(1, rangeId(Literal(5))) // no boundaries: one range
    assertEquals(0, rangeId(Literal(null, IntegerType), b: _*))
    assertEquals(2, rangeId(Literal(Long.MinValue), Literal(Long.MinValue), Literal(Long.MaxValue)))
  }

  @Test def doublesStringsAndDatesInSparksOrder(): Unit = {
    // NaN above +Infinity and equal to NaN; -0.0 = 0.0
    assertEquals(3, rangeId(Literal(Double.NaN), Literal(1.0), Literal(Double.NaN)))
    assertEquals(2, rangeId(Literal(Double.PositiveInfinity), Literal(1.0), Literal(Double.NaN)))
    assertEquals(2, rangeId(Literal(-0.0), Literal(0.0)))
    assertEquals(2, rangeId(Literal(0.0f), Literal(-0.0f)))
    // strings by UTF-8 bytes: U+FF5E (EF ..) below U+1F600 (F0 ..), unlike UTF-16
    assertEquals(2, rangeId(Literal("abcdefghijklmnopB"), Literal("abcdefghijklmnopA"), Literal("abcdefghijklmnopC")))
    assertEquals(1, rangeId(Literal("\uff5e"), Literal("\ud83d\ude00")))
    assertEquals(2, rangeId(Literal("\ud83d\ude00"), Literal("\uff5e")))
    assertEquals(1, rangeId(Literal(""), Literal("a")))
    // dates: days since 1970-01-01
    assertEquals(3, rangeId(Literal(10958, DateType), Literal(10957, DateType), Literal(10958, DateType)))
  }

  @Test def nullBoundariesFail(): Unit = {
    def message(f: => Any): String = try { f; "" } catch { case e: RuntimeException => e.getMessage }
    assertTrue(message(rangeId(Literal(1), Literal(1), Literal(null, IntegerType), Literal(3)))
      .contains("range_id: boundaries[1] (0-based) is NULL"))
    assertTrue(message(RangeId(Literal(1), Literal(null, ArrayType(IntegerType))).eval(null))
      .contains("range_id: the boundaries array is NULL"))
  }

  @Test def upperBoundIsSearchsortedRight(): Unit = {
    val ordering = implicitly[Ordering[Int]].asInstanceOf[Ordering[Any]]
    val bounds = Array[AnyRef](Int.box(1), Int.box(3), Int.box(3), Int.box(5))
    // numpy.searchsorted([1, 3, 3, 5], v, side="right") for v = 0..6
    assertEquals(Seq(0, 1, 1, 3, 3, 4, 4), (0 to 6).map(v => RangeIdSupport.upperBound(bounds, v, ordering)))
  }

  @Test def aDecimalIsSearchedAsItsUnscaledLongRoundedDown(): Unit = {
    // At the type's scale the unscaled long itself; at a finer scale rounded down, so that a
    // boundary b at the type's scale is <= the value exactly when it is <= the rounded value.
    assertEquals(12345L, RangeIdSupport.unscaledFloor(Decimal(BigDecimal("123.45")), 2))
    assertEquals(-12345L, RangeIdSupport.unscaledFloor(Decimal(BigDecimal("-123.45")), 2))
    assertEquals(12345L, RangeIdSupport.unscaledFloor(Decimal(BigDecimal("123.459")), 2))
    assertEquals(-12346L, RangeIdSupport.unscaledFloor(Decimal(BigDecimal("-123.451")), 2))
    assertEquals(12300L, RangeIdSupport.unscaledFloor(Decimal(BigDecimal("123")), 2))
    val boundaries = Literal.create(Seq(Decimal(BigDecimal("-1.50")), Decimal(BigDecimal("2.25"))), ArrayType(DecimalType(7, 2)))
    assertArrayEquals(Array(-150L, 225L), RangeIdSupport.toUnscaledLongs(boundaries.eval(), DecimalType(7, 2)))
  }
}
