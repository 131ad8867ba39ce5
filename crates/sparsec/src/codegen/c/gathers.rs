//! Gathered dot products (`ir::gather`) printed with SIMD lanes, in one of these ways
//! chosen when the kernel runs, by the version the call chose or else by the test that
//! chose the vector version ([`gather::gathers_run`]):
//! - **Hardware gathers** (AVX-512), where the segments are uneven and the gathered array
//!   large or the segments many, or long with their coordinates scattered over a large
//!   gathered array, and in loops that the schedule (not `ir::gather`) put in
//!   lanes: eight entries of the segment an iteration, the last (or only) iteration
//!   masked to the entries left, so a segment of up to eight entries takes one iteration
//!   and no branch on its length.
//! - **Lanes filled from scalar loads** (AVX2 and FMA), where the segments are long and
//!   the gathered array stays in cache, in which a gather's loads cost more than scalar
//!   ones (see `ir::gather`): the values are loaded four at a time, the gathered ones one by
//!   one into the lanes, and 32-bit coordinates two at a time, with one 64-bit load. Per
//!   entry that is one load and a quarter instead of three. The segment's last entries
//!   (fewer than eight) are summed as a serial loop's (`sums.rs`).
//! - **AVX2 gathers**, without AVX-512, where hardware gathers would run, the coordinates
//!   scatter and no hint prefetches the elements (`gather::unmasked_gathers_pay`): the
//!   same loop as filled lanes, each register of four filled by one gather. AVX2 has no
//!   masked iteration worth its cost (AMD Zen 3, C harness: masked tails of four lanes
//!   were no faster than the serial sum, and up to 50% slower on rows of 5 entries), so a
//!   segment's last entries are summed serially here too. SpMV, one thread, the CLI with
//!   filled lanes and with gathers alternated, compute medians in ms: skewed 100k x 100k
//!   with 10M entries (`x` beyond the 512 KB second-level cache), 20.6, 23.0, 24.9, 23.2,
//!   22.4 against 17.8, 22.1, 21.4, 22.5, 22.3, and on two threads 15.0, 14.8, 14.5, 13.2
//!   against 11.9, 10.4, 11.9, 11.9. Where hardware gathers would run but the coordinates
//!   lie close together or hints fetch the elements, the **serial sum** (`sums.rs`) beats
//!   both AVX2 forms (see `gather::unmasked_gathers_pay`).
//!
//! Without AVX2 the loop is printed as the `omp simd` loop it is.
//!
//! A hinted loop (`ir::prefetch`) prefetches for each entry of an iteration at its top,
//! and its last entries, summed serially or in a masked iteration, prefetch too.

use super::expr::expr;
use super::threads::reduction_clauses;
use super::Printer;
use crate::ir::gather::{self, GatheredDot};
use crate::ir::Names;
use crate::ir::{visit, Expr, Loop, LoopKind, Stmt};

/// The C identifiers of a gathered dot product's accumulator, values, coordinates and
/// gathered array, after whether its coordinates are `int32_t` (else `int64_t`).
fn dot_names<'a>(
    names: &'a Names,
    dot: &GatheredDot,
) -> (bool, &'a str, &'a str, &'a str, &'a str) {
    (
        names.is_narrow(&dot.coords),
        names.var(dot.accumulator),
        names.array(&dot.values),
        names.array(&dot.coords),
        names.array(&dot.gathered),
    )
}

/// The prefetch hints at the top of `l`'s body (`prefetch::prefetch_gathered_elements`),
/// empty where it has none.
pub(super) fn leading_hints(l: &Loop) -> &[Stmt] {
    let count = l
        .body
        .iter()
        .take_while(|s| matches!(s, Stmt::Prefetch { .. }))
        .count();
    &l.body[..count]
}

/// How [`Printer::avx2_lanes`] fills its lanes with gathered values.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lanes {
    /// From scalar loads, and 32-bit coordinates two at a time.
    Filled,
    /// By AVX2 gathers, four lanes an instruction.
    Gathered,
}

impl Printer<'_> {
    /// Print `l`, a vector loop, as the gathered dot product `dot` it is (see
    /// [`gathered_dot`](crate::ir::gather::gathered_dot)).
    pub(super) fn gathered_dot_loop(&mut self, l: &Loop, dot: &GatheredDot) {
        let sum_only;
        let l = match dot.flag {
            Some(flag) => {
                sum_only = self.flag_set_ahead(l, flag);
                &sum_only
            }
            None => l,
        };
        let hardware = gather::gathers_run(dot);
        let mut tested = true;
        visit::walk_expr(&hardware, &mut |e| {
            if let Expr::Param(p) = e {
                tested &= self.names.has_param(p);
            }
        });
        let test = tested.then(|| expr(self.names, &hardware));
        let test = test.as_deref();
        self.line("#if defined(__AVX512F__) && defined(__AVX512VL__)");
        match test {
            Some(test) => self.if_else(
                test,
                |this| this.hardware_gathers(l, dot),
                |this| this.avx2_lanes(l, dot, Lanes::Filled),
            ),
            // A loop that the schedule put in lanes, not `ir::gather`, has no test (the
            // function never reads its parameters) and gathers as asked.
            None => self.hardware_gathers(l, dot),
        }
        self.line("#elif defined(__AVX2__) && defined(__FMA__)");
        // AVX2 gathers pay only where they fetch scattered elements that no hint fetched
        // ahead; elsewhere, where hardware gathers would run, the serial sum does better.
        let hinted = !leading_hints(l).is_empty();
        let serial_or_filled = |this: &mut Self, test: &str| {
            this.if_else(
                test,
                |this| this.split_sum(l, dot.accumulator),
                |this| this.avx2_lanes(l, dot, Lanes::Filled),
            )
        };
        match test {
            Some(test) if !hinted => {
                let scattered = expr(self.names, &gather::unmasked_gathers_pay(dot));
                self.if_else(
                    &format!("({test}) && ({scattered})"),
                    |this| this.avx2_lanes(l, dot, Lanes::Gathered),
                    |this| serial_or_filled(this, test),
                )
            }
            Some(test) => serial_or_filled(self, test),
            None => self.avx2_lanes(l, dot, Lanes::Filled),
        }
        self.line("#else");
        let LoopKind::Parallel { reductions, .. } = &l.kind else {
            unreachable!("a vector loop")
        };
        self.line(&format!(
            "#pragma omp simd{}",
            reduction_clauses(self.names, self.function, reductions)
        ));
        self.plain_loop(l);
        self.line("#endif");
    }

    /// `dot` with AVX-512 masked gathers, eight entries an iteration.
    fn hardware_gathers(&mut self, l: &Loop, dot: &GatheredDot) {
        let (narrow, acc, values, coords, gathered) = dot_names(self.names, dot);
        // The coordinates' width decides the loads and gathers: eight `int32_t` fill a
        // 256-bit register, eight `int64_t` a 512-bit one.
        let (at, load, masked_load, gather_all, gather_masked) = if narrow {
            (
                "__m256i",
                "_mm256_loadu_si256((const __m256i *)",
                "_mm256_maskz_loadu_epi32",
                "_mm512_i32gather_pd",
                "_mm512_mask_i32gather_pd",
            )
        } else {
            (
                "__m512i",
                "_mm512_loadu_si512((const void *)",
                "_mm512_maskz_loadu_epi64",
                "_mm512_i64gather_pd",
                "_mm512_mask_i64gather_pd",
            )
        };
        self.open_cursor(l);
        self.line("__m512d sparsec_lanes = _mm512_setzero_pd();");
        self.line("for (; sparsec_q + 8 <= sparsec_end; sparsec_q += 8) {");
        self.indent += 1;
        self.hints_between(l, "sparsec_q", "sparsec_q + 8");
        self.indent -= 1;
        self.line(&format!(
            "  const {at} sparsec_at = {load}({coords} + sparsec_q));"
        ));
        self.line(&format!(
            "  sparsec_lanes = _mm512_fmadd_pd(_mm512_loadu_pd({values} + sparsec_q), \
             {gather_all}(sparsec_at, {gathered}, 8), sparsec_lanes);"
        ));
        self.line("}");
        self.line("if (sparsec_q < sparsec_end) {");
        self.indent += 1;
        self.hints_between(l, "sparsec_q", "sparsec_end");
        self.indent -= 1;
        self.line(
            "  const __mmask8 sparsec_mask = (__mmask8)((1u << (sparsec_end - sparsec_q)) - 1);",
        );
        self.line(&format!(
            "  const {at} sparsec_at = {masked_load}(sparsec_mask, {coords} + sparsec_q);"
        ));
        self.line(&format!(
            "  sparsec_lanes = _mm512_fmadd_pd(_mm512_maskz_loadu_pd(sparsec_mask, {values} + sparsec_q), \
             {gather_masked}(_mm512_setzero_pd(), sparsec_mask, sparsec_at, {gathered}, 8), sparsec_lanes);"
        ));
        self.line("}");
        self.line(&format!("{acc} += _mm512_reduce_add_pd(sparsec_lanes);"));
        self.indent -= 1;
        self.line("}");
    }

    /// The hints of [`leading_hints`] for `l`'s positions from `first` to before `end`, C
    /// expressions: a short loop, which gcc unrolls. Nothing where `l` has no hints.
    fn hints_between(&mut self, l: &Loop, first: &str, end: &str) {
        let hints = leading_hints(l);
        if hints.is_empty() {
            return;
        }
        let var = self.names.var(l.var);
        self.line(&format!(
            "for (int64_t {var} = {first}; {var} < {end}; {var}++) {{"
        ));
        self.indent += 1;
        hints.iter().for_each(|s| self.stmt(s));
        self.indent -= 1;
        self.line("}");
    }

    /// `dot` with two 256-bit registers of lanes, filled from scalar loads or by AVX2
    /// gathers, eight entries an iteration, then the entries left as a serial loop sums
    /// them.
    fn avx2_lanes(&mut self, l: &Loop, dot: &GatheredDot, fill: Lanes) {
        let (narrow, acc, values, coords, gathered) = dot_names(self.names, dot);
        // Lane k of a register of four holds the gathered value of entry q + k, so a
        // register's four are read from its first entry `first` on.
        let lanes = |first: usize| -> String {
            if fill == Lanes::Gathered {
                return if narrow {
                    format!(
                        "_mm256_i32gather_pd({gathered}, _mm_loadu_si128((const __m128i *)({coords} + sparsec_q + {first})), 8)"
                    )
                } else {
                    format!(
                        "_mm256_i64gather_pd({gathered}, _mm256_loadu_si256((const __m256i *)({coords} + sparsec_q + {first})), 8)"
                    )
                };
            }
            let entries: Vec<String> = (first..first + 4)
                .rev()
                .map(|k| {
                    if narrow {
                        // Two 32-bit coordinates a 64-bit word, the first in its low half
                        // (this code only runs on x86, which is little-endian).
                        let half = if k % 2 == 0 { "" } else { " >> 32" };
                        format!("{gathered}[(uint32_t)(sparsec_pairs[{}]{half})]", k / 2)
                    } else {
                        format!("{gathered}[{coords}[sparsec_q + {k}]]")
                    }
                })
                .collect();
            format!("_mm256_set_pd({})", entries.join(", "))
        };
        self.open_cursor(l);
        self.line("if (sparsec_end - sparsec_q >= 8) {");
        self.indent += 1;
        self.line("__m256d sparsec_low = _mm256_setzero_pd(), sparsec_high = sparsec_low;");
        self.line("for (; sparsec_q + 8 <= sparsec_end; sparsec_q += 8) {");
        self.indent += 1;
        self.hints_between(l, "sparsec_q", "sparsec_q + 8");
        if narrow && fill == Lanes::Filled {
            self.line("uint64_t sparsec_pairs[4];");
            self.line(&format!(
                "memcpy(sparsec_pairs, {coords} + sparsec_q, sizeof sparsec_pairs);"
            ));
        }
        self.line(&format!(
            "sparsec_low = _mm256_fmadd_pd(_mm256_loadu_pd({values} + sparsec_q), {}, sparsec_low);",
            lanes(0)
        ));
        self.line(&format!(
            "sparsec_high = _mm256_fmadd_pd(_mm256_loadu_pd({values} + sparsec_q + 4), {}, sparsec_high);",
            lanes(4)
        ));
        self.indent -= 1;
        self.line("}");
        self.line("const __m256d sparsec_four = _mm256_add_pd(sparsec_low, sparsec_high);");
        self.line(
            "const __m128d sparsec_two = _mm_add_pd(_mm256_castpd256_pd128(sparsec_four), \
             _mm256_extractf128_pd(sparsec_four, 1));",
        );
        self.line(&format!(
            "{acc} += _mm_cvtsd_f64(_mm_add_sd(sparsec_two, _mm_unpackhi_pd(sparsec_two, sparsec_two)));"
        ));
        self.indent -= 1;
        self.line("}");
        self.split_sum_from_cursor(l, dot.accumulator);
        self.indent -= 1;
        self.line("}");
    }
}
