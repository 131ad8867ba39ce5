//! Gathered dot products (`ir::gather`) printed with AVX-512 masked gathers: eight
//! entries of the segment an iteration, the last (or only) iteration masked to the
//! entries left, so a segment of up to eight entries takes one iteration and no branch on
//! its length. Without AVX-512 (and its 256-bit forms, AVX-512VL) the loop is printed as
//! the `omp simd` loop it is.

use super::threads::reduction_clauses;
use super::Printer;
use crate::ir::gather::GatheredDot;
use crate::ir::{Loop, LoopKind};

impl Printer<'_> {
    /// Print `l`, a vector loop, as the gathered dot product `dot` it is (see
    /// [`gathered_dot`](crate::ir::gather::gathered_dot)).
    pub(super) fn gathered_dot_loop(&mut self, l: &Loop, dot: &GatheredDot) {
        let &GatheredDot {
            accumulator,
            values,
            coords,
            gathered,
            ..
        } = dot;
        let names = self.names;
        let narrow = names.is_narrow(&coords);
        let (acc, values, coords, gathered) = (
            names.var(accumulator),
            names.array(&values),
            names.array(&coords),
            names.array(&gathered),
        );
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
        self.line("#if defined(__AVX512F__) && defined(__AVX512VL__)");
        self.open_cursor(l);
        self.line("__m512d sparsec_lanes = _mm512_setzero_pd();");
        self.line("for (; sparsec_q + 8 <= sparsec_end; sparsec_q += 8) {");
        self.line(&format!(
            "  const {at} sparsec_at = {load}({coords} + sparsec_q));"
        ));
        self.line(&format!(
            "  sparsec_lanes = _mm512_fmadd_pd(_mm512_loadu_pd({values} + sparsec_q), \
             {gather_all}(sparsec_at, {gathered}, 8), sparsec_lanes);"
        ));
        self.line("}");
        self.line("if (sparsec_q < sparsec_end) {");
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
        self.line("#else");
        let LoopKind::Parallel { reductions, .. } = &l.kind else {
            unreachable!("a vector loop")
        };
        self.line(&format!(
            "#pragma omp simd{}",
            reduction_clauses(names, reductions)
        ));
        self.plain_loop(l);
        self.line("#endif");
    }
}
