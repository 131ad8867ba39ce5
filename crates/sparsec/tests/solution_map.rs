//! The solution map, computed once per program and applied to new inputs, against the
//! analysis run on each input directly: the same sets on random unions of boxes (empty,
//! single cells, overlapping, touching the edges), and the same results when run.

use std::collections::BTreeMap;

use sparsec::affine::solution_map::{Bounds, SolutionMap};
use sparsec::affine::{self, inputs, parse_program, Specialised};
use sparsec::polyhedral::isl::UnionSet;

fn example(name: &str) -> String {
    let path = format!(
        "{}/../../examples/affine/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

struct Random(u64);

impl Random {
    fn below(&mut self, n: i64) -> i64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as i64
    }

    /// Up to `most` boxes inside `0..n` along each of `rank` dimensions: some a single
    /// cell, some on the edges, some overlapping.
    fn boxes(&mut self, rank: usize, n: i64, most: i64) -> Vec<Bounds> {
        let count = self.below(most + 1);
        (0..count)
            .map(|_| {
                (0..rank)
                    .map(|_| {
                        let lo = self.below(n);
                        let width = match self.below(4) {
                            0 => 0,
                            1 => n,
                            _ => self.below(n / 3 + 1),
                        };
                        (lo, (lo + width).min(n - 1))
                    })
                    .collect()
            })
            .collect()
    }
}

/// The boxes as the pattern the direct analysis takes.
fn pattern(name: &str, rank: usize, boxes: &[Bounds]) -> (String, String) {
    (name.to_string(), inputs::boxes_pattern(name, rank, boxes))
}

/// Whether `a` (of one isl context) and `b` (of another) are the same set.
fn same(a: &UnionSet, b: &UnionSet, of: &Specialised) -> bool {
    let b = of.isl.union_set(&b.to_string()).unwrap();
    a.is_equal(&b).unwrap()
}

fn check(s: &Specialised, direct: &Specialised, what: &str) {
    for (k, (a, b)) in s
        .regions
        .statements
        .iter()
        .zip(&direct.regions.statements)
        .enumerate()
    {
        assert!(same(a, b, s), "{what}: statement {k}:\n{a}\n{b}");
    }
    for (k, (a, b)) in s
        .regions
        .executed
        .iter()
        .zip(&direct.regions.executed)
        .enumerate()
    {
        assert!(same(a, b, s), "{what}: executed {k}:\n{a}\n{b}");
    }
    for ((name, a), (_, b)) in s.regions.outputs.iter().zip(&direct.regions.outputs) {
        assert!(same(a, b, s), "{what}: output {name}:\n{a}\n{b}");
    }
    assert_eq!(s.regions.exact, direct.regions.exact, "{what}");
}

/// Per case: file, the arrays with their rank and extent and at most how many boxes each
/// gets (`None`: left dense), and the parameters.
type Case<'a> = (
    &'a str,
    Vec<(&'a str, usize, i64, Option<i64>)>,
    Vec<(&'a str, i64)>,
);

#[test]
fn applying_the_map_gives_what_the_analysis_finds() {
    let cases: Vec<Case> = vec![
        (
            "mm.c",
            vec![
                ("A", 2, 16, Some(6)),
                ("B", 2, 16, Some(6)),
                ("C", 2, 16, Some(1)),
            ],
            vec![("N", 16)],
        ),
        (
            "gemm.c",
            vec![
                ("C", 2, 12, Some(2)),
                ("A", 2, 12, Some(4)),
                ("B", 2, 12, None),
                ("alpha", 0, 1, Some(1)),
                ("beta", 0, 1, Some(1)),
            ],
            vec![("NI", 12), ("NJ", 12), ("NK", 12)],
        ),
        (
            "jacobi-1d.c",
            vec![("A", 1, 40, Some(3)), ("B", 1, 40, Some(1))],
            vec![("TSTEPS", 3), ("N", 40)],
        ),
    ];
    let mut random = Random(7);
    for (file, arrays, params) in cases {
        let params: BTreeMap<String, i64> =
            params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let program = parse_program(&example(file)).unwrap();
        let map = SolutionMap::new(program.clone(), Some(&params)).unwrap();
        for round in 0..6 {
            let mut boxes = BTreeMap::new();
            let mut patterns = Vec::new();
            for &(name, rank, n, most) in &arrays {
                let Some(most) = most else { continue };
                let list = if rank == 0 {
                    vec![vec![(0, 0)]; random.below(most + 1) as usize]
                } else {
                    random.boxes(rank, n, most)
                };
                patterns.push(pattern(name, rank, &list));
                boxes.insert(name.to_string(), list);
            }
            let what = format!("{file}, round {round}, {patterns:?}");
            let applied = map.apply(&boxes).unwrap();
            let direct = affine::specialise(program.clone(), &patterns, Some(&params)).unwrap();
            check(&applied, &direct, &what);
        }
    }
}

#[test]
fn a_map_for_every_size_applies_to_every_size() {
    let program = parse_program(&example("mm.c")).unwrap();
    let map = SolutionMap::new(program.clone(), None).unwrap();
    assert!(map.exact().0);
    let boxes: BTreeMap<String, Vec<Bounds>> = [
        (
            "A".to_string(),
            vec![vec![(0, 3), (2, 5)], vec![(8, 9), (0, 9)]],
        ),
        ("B".to_string(), vec![vec![(4, 6), (1, 1)]]),
        ("C".to_string(), vec![]),
    ]
    .into();
    let applied = map.apply(&boxes).unwrap();
    let patterns = vec![
        pattern("A", 2, &boxes["A"]),
        pattern("B", 2, &boxes["B"]),
        pattern("C", 2, &boxes["C"]),
    ];
    let direct = affine::specialise(program, &patterns, None).unwrap();
    check(&applied, &direct, "mm for every N");
}

#[test]
fn the_applied_map_runs_as_the_dense_program_does() {
    use sparsec::affine::dense;
    use sparsec::affine::kernel::AffineKernel;
    use sparsec::jit::Toolchain;
    use sparsec::kernel::Backend;
    let params: BTreeMap<String, i64> = [("N".to_string(), 12)].into();
    let map = SolutionMap::new(parse_program(&example("mm.c")).unwrap(), Some(&params)).unwrap();
    let boxes: BTreeMap<String, Vec<Bounds>> = [
        (
            "A".to_string(),
            vec![vec![(0, 3), (0, 3)], vec![(5, 11), (9, 10)]],
        ),
        (
            "B".to_string(),
            vec![vec![(2, 2), (0, 11)], vec![(9, 9), (4, 6)]],
        ),
        ("C".to_string(), vec![vec![(11, 11), (11, 11)]]),
    ]
    .into();
    let s = map.apply(&boxes).unwrap();
    let n = 12usize;
    let mut initial: dense::Arrays = BTreeMap::new();
    let mut seed = 3u64;
    for (name, list) in &boxes {
        let mut values = vec![0.0; n * n];
        for b in list {
            for i in b[0].0..=b[0].1 {
                for j in b[1].0..=b[1].1 {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    values[i as usize * n + j as usize] = 1.0 + (seed >> 40) as f64 / 1e7;
                }
            }
        }
        initial.insert(name.clone(), values);
    }
    let expected = dense::run(&s.model, &params, &initial).unwrap().arrays;
    let kernel = AffineKernel::compile(&s, Backend::C.targets(&Toolchain::default())).unwrap();
    let mut arrays = initial.clone();
    kernel.run(&params, &mut arrays).unwrap();
    for (k, (a, b)) in arrays["C"].iter().zip(&expected["C"]).enumerate() {
        assert!(
            (a - b).abs() <= 1e-9 * b.abs().max(1.0),
            "C[{k}] = {a}, dense {b}"
        );
    }
    assert!(expected["C"].iter().filter(|v| **v != 0.0).count() > 4);
}

#[test]
fn programs_whose_regions_do_not_split_box_by_box_are_refused() {
    let params: BTreeMap<String, i64> = [("N".to_string(), 8)].into();
    let lu = parse_program(&example("lu.c")).unwrap();
    let err = SolutionMap::new(lu, Some(&params))
        .err()
        .expect("LU has no map");
    assert!(err.message.contains("`A` meets itself"), "{}", err.message);
    let square = parse_program(
        "int N; double A[N][N], C[N][N];
         for (i = 0; i < N; i++) for (j = 0; j < N; j++) for (k = 0; k < N; k++)
           C[i][j] += A[i][k] * A[k][j];",
    )
    .unwrap();
    let err = SolutionMap::new(square, None)
        .err()
        .expect("A * A has no map");
    assert!(err.message.contains("`A` meets itself"), "{}", err.message);
}

#[test]
fn boxes_of_the_wrong_array_or_rank_are_errors() {
    let map = SolutionMap::new(parse_program(&example("mm.c")).unwrap(), None).unwrap();
    let wrong: BTreeMap<String, Vec<Bounds>> = [("Z".to_string(), vec![])].into();
    let err = map.apply(&wrong).err().unwrap();
    assert!(err.message.contains("does not declare"), "{}", err.message);
    let wrong: BTreeMap<String, Vec<Bounds>> = [("A".to_string(), vec![vec![(0, 1)]])].into();
    let err = map.apply(&wrong).err().unwrap();
    assert!(err.message.contains("1 dimension(s)"), "{}", err.message);
}

#[test]
fn stencils_have_a_map_once_their_work_array_is_fixed() {
    for (file, params, rank) in [
        ("jacobi-2d.c", [("TSTEPS", 2), ("N", 14)], 2),
        ("heat-3d.c", [("TSTEPS", 1), ("N", 8)], 3),
    ] {
        let params: BTreeMap<String, i64> =
            params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let program = parse_program(&example(file)).unwrap();
        let empty_b = pattern("B", rank, &[]);
        let start = std::time::Instant::now();
        let map = SolutionMap::with_fixed(
            program.clone(),
            Some(&params),
            std::slice::from_ref(&empty_b),
        )
        .unwrap_or_else(|e| panic!("{file}: {}", e.message));
        eprintln!(
            "{file}: map in {:.2} s, {} pieces",
            start.elapsed().as_secs_f64(),
            map.pieces()
        );
        let mut random = Random(11);
        for round in 0..4 {
            let n = params["N"];
            let boxes = random.boxes(rank, n, 3);
            let applied = map
                .apply(&[("A".to_string(), boxes.clone())].into())
                .unwrap();
            let patterns = vec![pattern("A", rank, &boxes), empty_b.clone()];
            let direct = affine::specialise(program.clone(), &patterns, Some(&params)).unwrap();
            check(
                &applied,
                &direct,
                &format!("{file}, round {round}, {patterns:?}"),
            );
        }
        let err = map
            .apply(&[("B".to_string(), vec![])].into())
            .err()
            .unwrap();
        assert!(err.message.contains("fixed"), "{}", err.message);
    }
}
