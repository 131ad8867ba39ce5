//! Analysis time of the affine front end's specialisation against the number of regions
//! of its inputs, on the paper's synthetic inputs (Table 1: `r` random squares of side 3
//! to `n / r` in an `n x n` matrix, n / r = 30), for matrix multiply.
//!
//! `cargo run --release -p sparsec --example bench_specialise -- [MAX_SECONDS]`: rows
//! of Table 1 in order, stopping after the first whose analysis takes longer than
//! MAX_SECONDS (default 60).

use std::time::Instant;

use sparsec::affine::{self, boxes, parse_program};

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

fn pattern(name: &str, squares: &[boxes::Rect]) -> (String, String) {
    let cover = boxes::Cover {
        boxes: squares.to_vec(),
        nonzeros: 0,
        padding: 0,
    };
    (name.to_string(), cover.isl_text(name))
}

fn main() {
    let max_seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(60.0);
    println!("kernel  n       r      analysis_s  exact");
    for (n, r) in TABLE_1 {
        let a = boxes::random_squares(n, r, 1);
        let b = boxes::random_squares(n, r, 2);
        let patterns = [
            pattern("A", &a),
            pattern("B", &b),
            ("C".to_string(), "{ C[i, j] : false }".to_string()),
        ];
        let start = Instant::now();
        let result = affine::specialise(parse_program(MM).expect("MM parses"), &patterns, None);
        let seconds = start.elapsed().as_secs_f64();
        match result {
            Ok(s) => println!("mm      {n:<7} {r:<6} {seconds:<11.3} {}", s.regions.exact),
            Err(e) => println!("mm      {n:<7} {r:<6} {seconds:<11.3} failed: {e}"),
        }
        if seconds > max_seconds {
            break;
        }
    }
}
