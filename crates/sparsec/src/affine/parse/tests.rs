//! Tests of the affine parser.

use super::*;

const MM: &str = "int N;
        double A[N][N], B[N][N], C[N][N];
        #pragma scop
        for (i = 1; i <= N; i++)
          for (j = 1; j <= N; j++) {
            C[i][j] = 0;
            for (k = 1; k <= N; k++)
              C[i][j] += A[i][k] * B[k][j];   // S
          }
        #pragma endscop";

#[test]
fn reads_a_polybench_style_loop_nest() {
    let p = parse_program(MM).unwrap();
    assert_eq!(p.params, vec!["N"]);
    assert_eq!(p.arrays.len(), 3);
    let Node::Loop { counter, body, .. } = &p.body[0] else {
        panic!("a loop")
    };
    assert_eq!(counter, "i");
    let Node::Loop { body, .. } = &body[0] else {
        panic!("a loop")
    };
    assert_eq!(body.len(), 2);
    assert!(matches!(&body[1], Node::Loop { upper, .. } if upper.to_string() == "N"));
}

#[test]
fn outside_the_affine_class_is_named() {
    let cases = [
        (
            "int N; double A[N], B[N]; for (i = 0; i < N; i++) A[B[i]] = 1;",
            "data-dependent",
        ),
        (
            "int N; double A[N]; for (i = 0; i < N; i++) if (A[i] > 0) A[i] = 1;",
            "data-dependent",
        ),
        (
            "int N; double A[N]; for (i = 0; i < N; i++) for (j = 0; j < N; j++) A[i*j] = 1;",
            "product of two variables",
        ),
        (
            "int N; double A[N]; while (1) A[0] = 1;",
            "`while` is outside the affine class",
        ),
        (
            "int N; double A[N]; for (i = N; i >= 0; i--) A[i] = 1;",
            "count upwards",
        ),
        (
            "int N; double A[N]; for (i = 0; i < N; i++) A[i][i] = 1;",
            "1 dimension(s)",
        ),
        (
            "int N; double A[N]; for (i = 0; i < N; i++) A[i] = foo(A[i]);",
            "not a known function",
        ),
        (
            "int N; double A[N]; for (i = 0; i < M; i++) A[i] = 1;",
            "`M` is not declared",
        ),
        (
            "int N; double A[N]; for (i = 0; i < N; i++) A[i] = 1",
            "expected `;`",
        ),
        ("int N; double A[N];", "no statement"),
    ];
    for (src, expected) in cases {
        let err = parse_program(src).unwrap_err();
        assert!(err.message.contains(expected), "{src}: {}", err.message);
    }
}

#[test]
fn conditions_and_their_negations_are_in_normal_form() {
    let src = "int N; double A[N];
            for (i = 0; i < N; i++) if (i > 0 && i != N - 1) A[i] = 1; else A[i] = 2;";
    let p = parse_program(src).unwrap();
    let Node::Loop { body, .. } = &p.body[0] else {
        panic!()
    };
    let Node::If { condition, .. } = &body[0] else {
        panic!()
    };
    assert_eq!(condition.0.len(), 2);
    let negated = condition.negated().unwrap();
    let holds = |c: &Condition, i: i64| {
        c.0.iter().any(|conj| {
            conj.iter()
                .all(|k| k.holds(&|n| Some(if n == "i" { i } else { 10 })).unwrap())
        })
    };
    for i in -2..12 {
        assert_eq!(holds(condition, i), i > 0 && i != 9, "{i}");
        assert_eq!(holds(&negated, i), !(i > 0 && i != 9), "{i}");
    }
    assert_eq!(
        Affine::var("i")
            .add_scaled(&Affine::var("N"), -2)
            .unwrap()
            .to_string(),
        "-2*N + i"
    );
}
