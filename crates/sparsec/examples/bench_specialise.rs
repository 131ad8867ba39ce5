//! Analysis time of the affine front end's specialisation against the number of regions
//! of its inputs, on the paper's synthetic inputs (Table 1: `r` random squares of side 3
//! to `n / r` in an `n x n` matrix, n / r = 30), for matrix multiply.
//!
//! Beside it, the split of the paper's future work: the solution map computed once for
//! the program (compile time), then applied to each input (run time), with the sets it
//! gives checked against the direct analysis's where that is quick.
//!
//! `cargo run --release -p sparsec --example bench_specialise -- [MAX_SECONDS]`: rows
//! of Table 1 in order, stopping after the first whose analysis takes longer than
//! MAX_SECONDS (default 60).

use std::time::Instant;

use std::collections::BTreeMap;

use sparsec::affine::solution_map::{Bounds, SolutionMap};
use sparsec::affine::{self, boxes, inputs, parse_program, Specialised};

const MM: &str = "int N; double A[N][N], B[N][N], C[N][N];
    for (i = 0; i < N; i++)
      for (j = 0; j < N; j++) {
        C[i][j] = 0;
        for (k = 0; k < N; k++)
          C[i][j] += A[i][k] * B[k][j];
      }";

const TABLE_1: [(usize, usize); 9] = [
    (3000, 100),
    (15000, 500),
    (30000, 1000),
    (60000, 2000),
    (90000, 3000),
    (120000, 4000),
    (150000, 5000),
    (300000, 10000),
    (600000, 20000),
];

fn bounds(squares: &[boxes::Rect]) -> Vec<Bounds> {
    squares
        .iter()
        .map(|b| {
            vec![
                (b.rows.0 as i64, b.rows.1 as i64),
                (b.cols.0 as i64, b.cols.1 as i64),
            ]
        })
        .collect()
}

/// Whether both give the same executed sets (read across isl contexts as text).
fn same(a: &Specialised, b: &Specialised) -> bool {
    a.regions
        .executed
        .iter()
        .zip(&b.regions.executed)
        .all(|(x, y)| {
            let y = a
                .isl
                .union_set(&y.to_string())
                .expect("isl reads its own text");
            x.is_equal(&y).expect("isl compares")
        })
}

fn main() {
    let max_seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(60.0);
    let start = Instant::now();
    let map = SolutionMap::new(parse_program(MM).expect("MM parses"), None)
        .expect("matrix multiply has a solution map");
    println!(
        "solution map of mm: {:.3} s once ({} pieces, exact {})",
        start.elapsed().as_secs_f64(),
        map.pieces(),
        map.exact().0
    );
    println!("kernel  n       r      analysis_s  exact  apply_s     same");
    for (n, r) in TABLE_1 {
        let a = boxes::random_squares(n, r, 1);
        let b = boxes::random_squares(n, r, 2);
        let (a, b) = (bounds(&a), bounds(&b));
        let patterns = [
            ("A".to_string(), inputs::boxes_pattern("A", 2, &a)),
            ("B".to_string(), inputs::boxes_pattern("B", 2, &b)),
            ("C".to_string(), inputs::empty_pattern("C", 2)),
        ];
        let start = Instant::now();
        let result = affine::specialise(parse_program(MM).expect("MM parses"), &patterns, None);
        let seconds = start.elapsed().as_secs_f64();
        let boxes: BTreeMap<String, Vec<Bounds>> = [
            ("A".to_string(), a),
            ("B".to_string(), b),
            ("C".to_string(), Vec::new()),
        ]
        .into();
        let start = Instant::now();
        let applied = map.apply(&boxes);
        let apply_seconds = start.elapsed().as_secs_f64();
        match (result, applied) {
            (Ok(s), Ok(m)) => {
                let same = if r <= 1000 {
                    same(&m, &s).to_string()
                } else {
                    "-".to_string()
                };
                println!(
                    "mm      {n:<7} {r:<6} {seconds:<11.3} {:<6} {apply_seconds:<11.3} {same}",
                    s.regions.exact
                )
            }
            (Err(e), _) | (_, Err(e)) => {
                println!("mm      {n:<7} {r:<6} {seconds:<11.3} failed: {e}")
            }
        }
        if seconds > max_seconds {
            break;
        }
    }
}
