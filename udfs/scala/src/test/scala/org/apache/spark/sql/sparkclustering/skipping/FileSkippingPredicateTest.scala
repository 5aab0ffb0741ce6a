package org.apache.spark.sql.sparkclustering
package skipping

import scala.util.Random

import org.junit.Assert._
import org.junit.Test

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import FileSkippingPredicate.Possible
import org.apache.spark.sql.sparkclustering.stats.ColumnStats
import org.apache.spark.sql.sparkclustering.stats.FileStats

/** The min/max evaluator of data skipping: SQL's three-valued logic over a file's statistics. The
 *  expected facts are worked out by hand from SQL's semantics; the random check takes Spark's own
 *  evaluation of each row as the truth. */
class FileSkippingPredicateTest {

  private val i = AttributeReference("i", IntegerType)()
  private val d = AttributeReference("d", DoubleType)()
  private val s = AttributeReference("s", StringType)()
  private val b = AttributeReference("b", BooleanType)()
  private val dt = AttributeReference("dt", DateType)()
  private val dec = AttributeReference("dec", DecimalType(10, 2))()

  // the two facts: can some row be TRUE, can some row be FALSE
  private val T = Possible(canBeTrue = true, canBeFalse = false)
  private val F = Possible(canBeTrue = false, canBeFalse = true)
  private val TF = Possible(canBeTrue = true, canBeFalse = true)
  private val Neither = Possible(canBeTrue = false, canBeFalse = false) // every row NULL

  private val NullBool = Literal(null, BooleanType)
  private val NullInt = Literal(null, IntegerType)

  private def file(column: String, min: Any, max: Any, nulls: Long = 0, rows: Long = 10): FileStats =
    FileStats(Some(rows), Map(column -> ColumnStats(Option(min), Option(max), Some(nulls))))

  private def str(v: String) = UTF8String.fromString(v)

  private def check(stats: FileStats, cases: (Expression, Possible)*): Unit = cases.foreach { case (e, want) =>
    assertEquals(s"${e.sql} on $stats", want, FileSkippingPredicate.eval(e, stats))
  }

  @Test def kleeneTruthTablesOfNotAndOr(): Unit = {
    // SQL's AND / OR / NOT over TRUE, FALSE, NULL (U), written out
    val value = Map('T' -> Literal(true), 'F' -> Literal(false), 'U' -> NullBool)
    val fact = Map('T' -> T, 'F' -> F, 'U' -> Neither)
    val and = Seq("TTT", "TFF", "TUU", "FTF", "FFF", "FUF", "UTU", "UFF", "UUU")
    val or = Seq("TTT", "TFT", "TUT", "FTT", "FFF", "FUU", "UTT", "UFU", "UUU")
    val stats = FileStats.Unknown
    and.foreach(r => check(stats, And(value(r(0)), value(r(1))) -> fact(r(2))))
    or.foreach(r => check(stats, Or(value(r(0)), value(r(1))) -> fact(r(2))))
    Seq("TF", "FT", "UU").foreach(r => check(stats, Not(value(r(0))) -> fact(r(1))))
  }

  @Test def unknownCombinedWithAColumnTest(): Unit = {
    // i > 15 over [10, 20] can be either; with NULL: TRUE AND NULL is NULL, so never TRUE
    check(file("i", 10, 20),
      GreaterThan(i, Literal(15)) -> TF,
      And(GreaterThan(i, Literal(15)), NullBool) -> F,
      Or(GreaterThan(i, Literal(15)), NullBool) -> T,
      Not(Or(GreaterThan(i, Literal(15)), NullBool)) -> F,
      Not(And(GreaterThan(i, Literal(15)), NullBool)) -> T)
  }

  @Test def comparisonsAtTheBoundsOfARange(): Unit = {
    check(file("i", 10, 20),
      LessThan(i, Literal(10)) -> F, LessThan(i, Literal(11)) -> TF, LessThan(i, Literal(21)) -> T,
      LessThanOrEqual(i, Literal(9)) -> F, LessThanOrEqual(i, Literal(10)) -> TF, LessThanOrEqual(i, Literal(20)) -> T,
      GreaterThan(i, Literal(20)) -> F, GreaterThan(i, Literal(19)) -> TF, GreaterThan(i, Literal(9)) -> T,
      GreaterThanOrEqual(i, Literal(21)) -> F, GreaterThanOrEqual(i, Literal(20)) -> TF,
      GreaterThanOrEqual(i, Literal(10)) -> T,
      EqualTo(i, Literal(9)) -> F, EqualTo(i, Literal(10)) -> TF, EqualTo(i, Literal(20)) -> TF,
      EqualTo(i, Literal(21)) -> F,
      // the literal on the left: 10 > i is i < 10
      GreaterThan(Literal(10), i) -> F, LessThanOrEqual(Literal(20), i) -> TF, EqualTo(Literal(21), i) -> F,
      EqualNullSafe(i, Literal(15)) -> TF, EqualNullSafe(i, Literal(25)) -> F,
      // comparing with NULL is NULL for every row; <=> NULL is FALSE for a value
      EqualTo(i, NullInt) -> Neither, LessThan(NullInt, i) -> Neither, EqualNullSafe(i, NullInt) -> F)
  }

  @Test def oneValueFilesAreExact(): Unit = {
    check(file("i", 15, 15),
      EqualTo(i, Literal(15)) -> T, Not(EqualTo(i, Literal(15))) -> F,
      LessThan(i, Literal(16)) -> T, GreaterThan(i, Literal(15)) -> F,
      In(i, Seq(Literal(15), NullInt)) -> T, Not(In(i, Seq(Literal(15), NullInt))) -> F)
  }

  @Test def nullCountsAndIsNull(): Unit = {
    val someNulls = file("i", 10, 20, nulls = 3)
    check(someNulls,
      IsNull(i) -> TF, IsNotNull(i) -> TF,
      LessThan(i, Literal(10)) -> F, // values: FALSE; NULLs: NULL
      Not(LessThan(i, Literal(10))) -> T, // values: TRUE; NULLs: NULL
      EqualNullSafe(i, NullInt) -> TF)
    // every row NULL (no bounds): a comparison is NULL everywhere, and so is its NOT
    val allNull = FileStats(Some(4), Map("i" -> ColumnStats(None, None, Some(4))))
    check(allNull,
      EqualTo(i, Literal(5)) -> Neither, Not(EqualTo(i, Literal(5))) -> Neither,
      IsNull(i) -> T, IsNotNull(i) -> F, EqualNullSafe(i, NullInt) -> T, EqualNullSafe(i, Literal(5)) -> F)
    // no NULLs: IS NULL is never TRUE
    check(file("i", 10, 20), IsNull(i) -> F, IsNotNull(i) -> T)
    // an unknown NULL count: maybe NULLs
    check(FileStats(Some(10), Map("i" -> ColumnStats(Some(10), Some(20), None))), IsNull(i) -> TF,
      LessThan(i, Literal(10)) -> F)
    // unknown bounds keep what they cannot decide
    check(FileStats(Some(10), Map("i" -> ColumnStats(None, Some(20), Some(0)))),
      GreaterThan(i, Literal(20)) -> F, LessThan(i, Literal(-1000)) -> TF)
    // a column without statistics can be anything
    check(FileStats(Some(10), Map.empty), EqualTo(i, Literal(5)) -> TF, IsNull(i) -> TF)
  }

  @Test def inLists(): Unit = {
    check(file("i", 10, 20),
      In(i, Seq(Literal(1), Literal(30))) -> F, In(i, Seq(Literal(1), Literal(15))) -> TF,
      In(i, Seq(Literal(10))) -> TF, In(i, Seq()) -> F,
      // a value matching no listed one is NULL, not FALSE, when a NULL is listed: NOT of it too
      In(i, Seq(Literal(1), NullInt)) -> Neither, Not(In(i, Seq(Literal(1), NullInt))) -> Neither,
      Not(In(i, Seq(Literal(1), Literal(30)))) -> T,
      InSet(i, Set(1, 30)) -> F, InSet(i, Set(1, 15)) -> TF, Not(InSet(i, Set(1, 30))) -> T)
    // every value of [10, 11] is listed: never FALSE
    check(file("i", 10, 11), In(i, Seq(Literal(10), Literal(11))) -> TF)
    check(file("i", 11, 11), In(i, Seq(Literal(10), Literal(11))) -> T)
  }

  @Test def stringPrefixes(): Unit = {
    val fruit = file("s", str("apple"), str("banana"))
    def startsWith(p: String) = StartsWith(s, Literal(p))
    check(fruit,
      startsWith("") -> TF, startsWith("a") -> TF, startsWith("ap") -> TF, startsWith("b") -> TF,
      startsWith("banana") -> TF, startsWith("apz") -> TF, // "apz..." lies between apple and banana
      startsWith("0") -> F, startsWith("c") -> F, startsWith("bananas") -> F, startsWith("aa") -> F)
    // byte order, not UTF-16's: U+FF5E is EF BD 9E, U+1F600 is F0 9F 98 80 (a surrogate pair, D83D..,
    // below U+FF5E in UTF-16). Strings starting with U+FF5E lie inside [a, U+1F600].
    check(file("s", str("a"), str("\ud83d\ude00")), startsWith("\uff5e") -> TF,
      GreaterThanOrEqual(s, Literal("\uff5e")) -> TF)
    check(file("s", str("a"), str("\uff5e")), startsWith("\ud83d\ude00") -> F,
      GreaterThanOrEqual(s, Literal("\ud83d\ude00")) -> F)
    // a LIKE the optimizer has not made a startswith is not understood: the file is kept
    check(fruit, Like(s, Literal("c%"), '\\') -> TF)
  }

  @Test def stringComparisons(): Unit = {
    check(file("s", str("b"), str("c")),
      LessThan(s, Literal("b")) -> F, LessThanOrEqual(s, Literal("b")) -> TF, GreaterThan(s, Literal("c")) -> F,
      EqualTo(s, Literal("bz")) -> TF, EqualTo(s, Literal("ca")) -> F, EqualTo(s, Literal("")) -> F)
  }

  @Test def doublesOrderNaNLastAndNegativeZeroAsZero(): Unit = {
    val nan = Double.NaN
    // NaN is the largest double and NaN = NaN in Spark
    check(file("d", 1.0, nan),
      GreaterThan(d, Literal(1e300)) -> TF, EqualTo(d, Literal(nan)) -> TF, LessThan(d, Literal(nan)) -> TF)
    check(file("d", 1.0, 2.0),
      EqualTo(d, Literal(nan)) -> F, GreaterThanOrEqual(d, Literal(nan)) -> F, LessThan(d, Literal(nan)) -> T,
      Not(LessThan(d, Literal(nan))) -> F, GreaterThan(d, Literal(Double.PositiveInfinity)) -> F)
    check(file("d", nan, nan),
      EqualTo(d, Literal(nan)) -> T, GreaterThan(d, Literal(Double.PositiveInfinity)) -> T, LessThan(d, Literal(0.0)) -> F)
    // -0.0 = 0.0: no value of [-1, 0] is above -0.0
    check(file("d", -1.0, 0.0),
      GreaterThan(d, Literal(-0.0)) -> F, GreaterThanOrEqual(d, Literal(-0.0)) -> TF, EqualTo(d, Literal(-0.0)) -> TF)
    check(file("d", -0.0, -0.0), EqualTo(d, Literal(0.0)) -> T, LessThan(d, Literal(0.0)) -> F)
    val f = AttributeReference("f", FloatType)()
    check(file("f", 1.0f, 2.0f), EqualTo(f, Literal(Float.NaN)) -> F, LessThan(f, Literal(Float.NaN)) -> T)
  }

  @Test def booleanColumnsDecimalsAndDates(): Unit = {
    check(file("b", false, false), b -> F, Not(b) -> T, EqualTo(b, Literal(true)) -> F)
    check(file("b", false, true), b -> TF)
    val d150 = Decimal(BigDecimal("1.50"), 10, 2)
    check(file("dec", d150, Decimal(BigDecimal("2.50"), 10, 2)),
      GreaterThan(dec, Literal(Decimal(BigDecimal("2.50"), 10, 2), DecimalType(10, 2))) -> F,
      LessThan(dec, Literal(Decimal(BigDecimal("1.51"), 10, 2), DecimalType(10, 2))) -> TF)
    // dates are days since 1970-01-01: 10957 = 2000-01-01
    check(file("dt", 10957, 10958),
      LessThan(dt, Literal(10957, DateType)) -> F, LessThanOrEqual(dt, Literal(10957, DateType)) -> TF)
  }

  @Test def orderPreservingCasts(): Unit = {
    val asDouble = Cast(i, DoubleType, Some("UTC"))
    check(file("i", 10, 20),
      GreaterThan(asDouble, Literal(20.5)) -> F, GreaterThan(asDouble, Literal(19.5)) -> TF,
      // the bounds cannot rule 15.5 out: kept (sound, not exact)
      EqualTo(asDouble, Literal(15.5)) -> TF,
      // a cast to string is not order-preserving: not understood, kept
      EqualTo(Cast(i, StringType, Some("UTC")), Literal("99")) -> TF)
    // a date as a timestamp (UTC): 2000-01-01 is 946684800 s after the epoch
    val ts = Cast(dt, TimestampType, Some("UTC"))
    check(file("dt", 10957, 10958),
      LessThan(ts, Literal(946684800000000L, TimestampType)) -> F,
      LessThanOrEqual(ts, Literal(946684800000000L, TimestampType)) -> TF)
  }

  @Test def compileSkipsOnlyProvenFiles(): Unit = {
    val keep = FileSkippingPredicate.compile(Seq(GreaterThan(i, Literal(15)), IsNotNull(i)), a => Some(a.name))
    assertTrue(keep(file("i", 10, 20)))
    assertFalse(keep(file("i", 0, 15)))
    assertFalse("every row NULL", keep(FileStats(Some(3), Map("i" -> ColumnStats(None, None, Some(3))))))
    assertFalse("no rows", keep(FileStats(Some(0), Map.empty)))
    assertTrue("no statistics", keep(FileStats.Unknown))
    // a column the reader cannot map to statistics is unknown
    val unmapped = FileSkippingPredicate.compile(Seq(GreaterThan(i, Literal(15))), _ => None)
    assertTrue(unmapped(file("i", 0, 15)))
  }

  @Test def usableFiltersAreDeterministicColumnTests(): Unit = {
    val test = GreaterThan(i, Literal(1))
    val random = GreaterThan(Rand(Literal(1L)), Literal(0.5))
    assertEquals(Seq(test, IsNull(s)), FileSkippingPredicate.usable(Seq(And(test, And(random, IsNull(s))))))
    assertEquals(Seq(), FileSkippingPredicate.usable(Seq(Literal(true), EqualTo(Rand(Literal(2L)), i))))
  }

  /** Random predicates over random small files, against Spark's own evaluation of every row:
   *  a file with a row where the predicate is TRUE (FALSE) is never said to have none; on a file
   *  whose rows are all alike, with exact statistics, the facts are exactly Spark's answer. */
  @Test def soundAndExactAgainstSparksEvaluation(): Unit = {
    val rng = new Random(49)
    def decimal(v: String) = Decimal(BigDecimal(v), 10, 2)
    // per column a few values, NULL and the values where orderings differ (NaN, -0.0, UTF-8 vs UTF-16)
    val domains: Seq[(AttributeReference, IndexedSeq[Any])] = Seq(
      i -> IndexedSeq(null, -2, -1, 0, 1, 2),
      d -> IndexedSeq(null, -1.0, -0.0, 0.0, 1.0, Double.PositiveInfinity, Double.NaN),
      AttributeReference("f", FloatType)() -> IndexedSeq(null, -1.5f, -0.0f, 0.0f, 2.5f, Float.NaN),
      s -> IndexedSeq(null, "", "a", "ab", "b", "\uff5e", "\ud83d\ude00").map(v => if (v == null) null else str(v)),
      b -> IndexedSeq(null, false, true),
      dec -> IndexedSeq(null, decimal("-1.50"), decimal("0.00"), decimal("2.50")),
      dt -> IndexedSeq(null, -1, 0, 10957, 19782))
    var exact = 0
    var skippable = 0
    for ((column, values) <- domains) {
      val ordering = org.apache.spark.sql.catalyst.types.PhysicalDataType.ordering(column.dataType)
      def lit() = Literal(values(rng.nextInt(values.length)), column.dataType)
      def leaf(): Expression = rng.nextInt(12) match {
        case 0 => EqualTo(column, lit())
        case 1 => LessThan(column, lit())
        case 2 => LessThanOrEqual(lit(), column)
        case 3 => GreaterThan(column, lit())
        case 4 => GreaterThanOrEqual(column, lit())
        case 5 => EqualNullSafe(column, lit())
        case 6 => In(column, Seq.fill(1 + rng.nextInt(3))(lit()))
        case 7 => IsNull(column)
        case 8 => IsNotNull(column)
        case 9 => Seq(Literal(true), Literal(false), NullBool)(rng.nextInt(3))
        case 10 => EqualTo(lit(), column)
        case _ => column.dataType match {
          // a NULL prefix is not a form the evaluator reads (kept, not exact; the optimizer folds it)
          case StringType => StartsWith(column, Literal(values(1 + rng.nextInt(values.length - 1)), StringType))
          case BooleanType => column
          case _ => LessThan(lit(), column)
        }
      }
      def predicate(depth: Int): Expression =
        if (depth == 0 || rng.nextInt(3) == 0) leaf()
        else rng.nextInt(3) match {
          case 0 => Not(predicate(depth - 1))
          case 1 => And(predicate(depth - 1), predicate(depth - 1))
          case _ => Or(predicate(depth - 1), predicate(depth - 1))
        }
      for (_ <- 0 until 1500) {
        val rows = Seq.fill(1 + rng.nextInt(4))(values(rng.nextInt(values.length)))
        val nonNull = rows.filter(_ != null)
        val stats = FileStats(Some(rows.size), Map(column.name -> ColumnStats(
          nonNull.reduceOption((x, y) => if (ordering.lteq(x, y)) x else y),
          nonNull.reduceOption((x, y) => if (ordering.gteq(x, y)) x else y),
          Some(rows.size - nonNull.size.toLong))))
        val p = predicate(3)
        val bound = BindReferences.bindReference(p, Seq(column))
        val answers = rows.map(v => bound.eval(InternalRow(v)))
        val truth = Possible(answers.contains(true), answers.contains(false))
        val got = FileSkippingPredicate.eval(p, stats)
        val where = s"${p.sql} on rows ${rows.mkString(", ")}"
        assertTrue(s"says no row is TRUE: $where", got.canBeTrue || !truth.canBeTrue)
        assertTrue(s"says no row is FALSE: $where", got.canBeFalse || !truth.canBeFalse)
        if (rows.distinct.size == 1) { // all alike (boxed equality: -0.0 and 0.0 are two values here)
          assertEquals(s"not exact: $where", truth, got)
          exact += 1
        }
        if (!got.canBeTrue) skippable += 1
      }
    }
    // the check saw both kinds of file and files it could skip
    assertTrue(s"$exact exact checks", exact > 500)
    assertTrue(s"$skippable skippable", skippable > 1000)
  }
}
