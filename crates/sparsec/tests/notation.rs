//! Parsing and binding of index notation: syntax trees with spans, errors with their
//! messages and labels, and concrete index notation with placed reductions.

use miette::Diagnostic;
use sparsec::format::Format;
use sparsec::notation::ast::{Access, Expr, ExprKind, MathFn, Op, Span};
use sparsec::notation::cin::{self, CExpr, Statement};
use sparsec::notation::{bind, parse, NotationError, NotationErrorKind, TensorDecl};

// ---------------------------------------------------------------------------------------
// Helpers

/// A compact rendering of an expression: `(A(i,j) * x(j))`, `-(...)`, numbers as `{}`.
fn show(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Access(a) => show_access(a),
        ExprKind::Literal(x) => format!("{x}"),
        ExprKind::Neg(e) => format!("-{}", show(e)),
        ExprKind::Binary(op, a, b) => format!("({} {} {})", show(a), op.symbol(), show(b)),
        ExprKind::Math(f, args) => call(*f, args.iter().map(show).collect()),
    }
}

/// `f(a, b)`, or `(a op b)` for a comparison.
fn call(f: MathFn, args: Vec<String>) -> String {
    if f.is_operator() && f.arity() == 2 {
        format!("({} {} {})", args[0], f.c_name(), args[1])
    } else {
        format!("{}({})", f.c_name(), args.join(", "))
    }
}

fn show_access(a: &Access) -> String {
    if a.indices.is_empty() {
        a.tensor.clone()
    } else {
        format!("{}({})", a.tensor, a.indices.join(","))
    }
}

fn rhs(text: &str) -> String {
    show(&parse(text).unwrap().rhs)
}

fn text_at(text: &str, span: Span) -> &str {
    &text[span.start..span.end]
}

/// Check every node's span: the text under it re-parses to the same tree shape.
fn check_spans(text: &str, e: &Expr) {
    let under = text_at(text, e.span);
    let reparsed = parse(&format!("t = {under}")).unwrap().rhs;
    assert_eq!(show(&reparsed), show(e), "span of {} is `{under}`", show(e));
    match &e.kind {
        ExprKind::Access(a) => {
            assert_eq!(text_at(text, a.tensor_span), a.tensor);
            for (name, s) in a.indices.iter().zip(&a.index_spans) {
                assert_eq!(text_at(text, *s), name);
            }
        }
        ExprKind::Literal(_) => {}
        ExprKind::Neg(x) => check_spans(text, x),
        ExprKind::Binary(_, a, b) => {
            check_spans(text, a);
            check_spans(text, b);
        }
        ExprKind::Math(_, args) => args.iter().for_each(|a| check_spans(text, a)),
    }
}

fn parse_err(text: &str) -> NotationError {
    match parse(text) {
        Ok(a) => panic!("`{text}` parsed as {}", show(&a.rhs)),
        Err(e) => e,
    }
}

/// The single label of a diagnostic: its text and the source text under it.
fn label_of(e: &NotationError, text: &str) -> (String, String) {
    let labels: Vec<_> = e.labels().expect("a label").collect();
    assert_eq!(labels.len(), 1);
    let l = &labels[0];
    (
        l.label().unwrap_or_default().to_string(),
        text[l.offset()..l.offset() + l.len()].to_string(),
    )
}

/// Full graphical rendering (no colours), to check that everything shows up together.
fn render(e: &NotationError) -> String {
    let mut out = String::new();
    miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
        .with_width(200)
        .render_report(&mut out, e)
        .unwrap();
    out
}

fn decl(name: &str, dims: Option<&[usize]>) -> TensorDecl {
    TensorDecl {
        name: name.into(),
        dims: dims.map(<[usize]>::to_vec),
        format: None,
        fill: 0.0,
    }
}

fn bind_text(text: &str, decls: &[TensorDecl], sizes: &[(&str, usize)]) -> Statement {
    let sizes: Vec<(String, usize)> = sizes.iter().map(|(n, s)| (n.to_string(), *s)).collect();
    bind(&parse(text).unwrap(), decls, &sizes).unwrap_or_else(|e| panic!("{}", render(&e)))
}

fn bind_err(text: &str, decls: &[TensorDecl], sizes: &[(&str, usize)]) -> NotationError {
    let sizes: Vec<(String, usize)> = sizes.iter().map(|(n, s)| (n.to_string(), *s)).collect();
    match bind(&parse(text).unwrap(), decls, &sizes) {
        Ok(s) => panic!("`{text}` bound: {s:?}"),
        Err(e) => e,
    }
}

/// Concrete right-hand side with names: `sum(j, (A(i,j) * x(j)))`.
fn show_c(stmt: &Statement) -> String {
    fn go(s: &Statement, e: &CExpr) -> String {
        match e {
            CExpr::Access(a) => {
                let name = &s.tensors[a.tensor].name;
                if a.indices.is_empty() {
                    name.clone()
                } else {
                    let idx: Vec<&str> =
                        a.indices.iter().map(|&v| s.vars[v].name.as_str()).collect();
                    format!("{name}({})", idx.join(","))
                }
            }
            CExpr::Literal(x) => format!("{x}"),
            CExpr::Neg(e) => format!("-{}", go(s, e)),
            CExpr::Binary(op, a, b) => format!("({} {} {})", go(s, a), op.symbol(), go(s, b)),
            CExpr::Math(f, args) => call(*f, args.iter().map(|a| go(s, a)).collect()),
            CExpr::Sum(v, e) => format!("sum({}, {})", s.vars[*v].name, go(s, e)),
        }
    }
    go(stmt, &stmt.rhs)
}

// ---------------------------------------------------------------------------------------
// Parsing

#[test]
fn parses_spmv_with_spans() {
    let text = "y(i) = A(i,j) * x(j)";
    let a = parse(text).unwrap();
    assert_eq!(a.source, text);
    assert!(!a.accumulate);
    assert_eq!(a.lhs.tensor, "y");
    assert_eq!(a.lhs.indices, vec!["i"]);
    assert_eq!(a.lhs.span, Span { start: 0, end: 4 });
    assert_eq!(a.lhs.tensor_span, Span { start: 0, end: 1 });
    assert_eq!(a.lhs.index_spans, vec![Span { start: 2, end: 3 }]);
    assert_eq!(show(&a.rhs), "(A(i,j) * x(j))");
    assert_eq!(a.rhs.span, Span { start: 7, end: 20 });
    let ExprKind::Binary(Op::Mul, l, r) = &a.rhs.kind else {
        panic!("not a product")
    };
    let ExprKind::Access(acc) = &l.kind else {
        panic!()
    };
    assert_eq!(acc.span, Span { start: 7, end: 13 });
    assert_eq!(
        acc.index_spans,
        vec![Span { start: 9, end: 10 }, Span { start: 11, end: 12 }]
    );
    assert_eq!(r.span, Span { start: 16, end: 20 });
    check_spans(text, &a.rhs);
}

#[test]
fn precedence_and_associativity() {
    assert_eq!(rhs("a = b + c * d"), "(b + (c * d))");
    assert_eq!(rhs("a = b * c + d"), "((b * c) + d)");
    assert_eq!(rhs("a = b - c - d"), "((b - c) - d)");
    assert_eq!(rhs("a = b / c / d"), "((b / c) / d)");
    assert_eq!(rhs("a = b / c * d"), "((b / c) * d)");
    assert_eq!(rhs("a = b - c + d"), "((b - c) + d)");
    assert_eq!(rhs("a = (b + c) * d"), "((b + c) * d)");
    assert_eq!(rhs("a = b * (c - d)"), "(b * (c - d))");
    assert_eq!(rhs("a = ((b))"), "b");
    assert_eq!(
        rhs("y(i) = alpha * A(i,j) * x(j) + beta * z(i)"),
        "(((alpha * A(i,j)) * x(j)) + (beta * z(i)))"
    );
}

#[test]
fn unary_minus_binds_tighter_than_products() {
    assert_eq!(rhs("a = -b * c"), "(-b * c)");
    assert_eq!(rhs("a = b * -c"), "(b * -c)");
    assert_eq!(rhs("a = --b"), "--b");
    assert_eq!(rhs("a = b - -c"), "(b - -c)");
    assert_eq!(rhs("a = -(b + c)"), "-(b + c)");
    let text = "y(i) = -B(i,j) * c(j)";
    let a = parse(text).unwrap();
    let ExprKind::Binary(Op::Mul, l, _) = &a.rhs.kind else {
        panic!()
    };
    assert!(matches!(l.kind, ExprKind::Neg(_)));
    assert_eq!(text_at(text, l.span), "-B(i,j)");
    check_spans(text, &a.rhs);
}

#[test]
fn number_literals() {
    let lit = |text: &str| match parse(&format!("a = {text}")).unwrap().rhs.kind {
        ExprKind::Literal(x) => x,
        k => panic!("{k:?}"),
    };
    assert_eq!(lit("2"), 2.0);
    assert_eq!(lit("0"), 0.0);
    assert_eq!(lit("3.25"), 3.25);
    assert_eq!(lit(".5"), 0.5);
    assert_eq!(lit("2."), 2.0);
    assert_eq!(lit("1e3"), 1000.0);
    assert_eq!(lit("1E3"), 1000.0);
    assert_eq!(lit("2.5e-3"), 0.0025);
    assert_eq!(lit("4e+2"), 400.0);
    let text = "y(i) = 0.5e-3 * x(i)";
    let a = parse(text).unwrap();
    let ExprKind::Binary(_, l, _) = &a.rhs.kind else {
        panic!()
    };
    assert_eq!(text_at(text, l.span), "0.5e-3");
    // A negative literal is a negation.
    assert_eq!(rhs("a = -2 * b"), "(-2 * b)");
}

#[test]
fn scalars_and_empty_index_lists() {
    let a = parse("a = B(i) * c(i)").unwrap();
    assert!(a.lhs.indices.is_empty());
    assert_eq!(a.lhs.span, Span { start: 0, end: 1 });
    let a = parse("a() = b() + 1").unwrap();
    assert_eq!(a.lhs.span, Span { start: 0, end: 3 });
    assert_eq!(show(&a.rhs), "(b + 1)");
    let text = "y(i) = alpha * A(i,j) * x(j)";
    let a = parse(text).unwrap();
    check_spans(text, &a.rhs);
}

#[test]
fn accumulate_whitespace_and_identifiers() {
    let text = "  y_1 ( i )\t+=\n A_2x ( i , jj ) ";
    let a = parse(text).unwrap();
    assert!(a.accumulate);
    assert_eq!(a.lhs.tensor, "y_1");
    assert_eq!(text_at(text, a.lhs.span), "y_1 ( i )");
    assert_eq!(show(&a.rhs), "A_2x(i,jj)");
    assert_eq!(text_at(text, a.rhs.span), "A_2x ( i , jj )");
    let a = parse("_T(i)+=_u(i)").unwrap();
    assert!(a.accumulate);
    assert_eq!(a.lhs.tensor, "_T");
}

#[test]
fn same_tensor_twice_and_transposed() {
    assert_eq!(rhs("A(i,j) = B(i,j) * B(i,j)"), "(B(i,j) * B(i,j))");
    assert_eq!(rhs("A(i,j) = B(j,i)"), "B(j,i)");
    assert_eq!(
        rhs("C(i,j) = B(i,k) * B(j,k) + D(i,j)"),
        "((B(i,k) * B(j,k)) + D(i,j))"
    );
}

#[test]
fn parenthesised_spans_include_parentheses() {
    let text = "a = 2 * (b + c)";
    let a = parse(text).unwrap();
    let ExprKind::Binary(_, _, r) = &a.rhs.kind else {
        panic!()
    };
    assert_eq!(text_at(text, r.span), "(b + c)");
    check_spans(text, &a.rhs);
}

// ---------------------------------------------------------------------------------------
// Syntax errors

#[test]
fn error_unexpected_character() {
    let text = "y(i) = A(i,j) # x(j)";
    let e = parse_err(text);
    assert_eq!(
        e.kind(),
        &NotationErrorKind::UnexpectedCharacter { ch: '#' }
    );
    assert_eq!(e.to_string(), "unexpected character `#`");
    assert_eq!(label_of(&e, text).1, "#");
    assert_eq!(e.span(), Span { start: 14, end: 15 });
    // A non-ASCII character is labelled whole.
    let text = "y(i) = A(i) × x(i)";
    let e = parse_err(text);
    assert_eq!(
        e.kind(),
        &NotationErrorKind::UnexpectedCharacter { ch: '×' }
    );
    assert_eq!(label_of(&e, text).1, "×");
    // A lone dot is not a number.
    let text = "a = b . c";
    let e = parse_err(text);
    assert_eq!(label_of(&e, text).1, ".");
}

#[test]
fn error_malformed_number() {
    let text = "a = 2e * b";
    let e = parse_err(text);
    assert!(matches!(e.kind(), NotationErrorKind::InvalidNumber { text } if text == "2e"));
    assert_eq!(e.to_string(), "malformed number `2e`");
    assert_eq!(label_of(&e, text).1, "2e");
    assert!(e.help_text().unwrap().contains("exponent"));
}

#[test]
fn error_unexpected_tokens() {
    let text = "y(i) = A(i,j) x(j)";
    let e = parse_err(text);
    assert_eq!(
        e.to_string(),
        "expected an operator or the end of the expression, found name `x`"
    );
    assert_eq!(label_of(&e, text).1, "x");

    let text = "y(i) = A(i,j) * * x(j)";
    let e = parse_err(text);
    assert!(matches!(e.kind(), NotationErrorKind::UnexpectedToken { found, .. } if found == "`*`"));
    assert!(e.to_string().starts_with("expected an expression"), "{e}");
    assert_eq!(e.span(), Span { start: 16, end: 17 });

    let text = "y(i) A(i)";
    let e = parse_err(text);
    assert_eq!(e.to_string(), "expected `=` or `+=`, found name `A`");
    assert_eq!(
        label_of(&e, text),
        ("expected `=` or `+=`".into(), "A".into())
    );

    let text = "y(i) = A(i,)";
    let e = parse_err(text);
    assert_eq!(e.to_string(), "expected an index variable, found `)`");
    assert_eq!(e.span(), Span { start: 11, end: 12 });

    let text = "y(i) = A(i j)";
    let e = parse_err(text);
    assert_eq!(e.to_string(), "expected `,` or `)`, found name `j`");
    assert_eq!(label_of(&e, text).1, "j");

    let text = "y(2) = x(i)";
    let e = parse_err(text);
    assert_eq!(
        e.to_string(),
        "expected an index variable, found number `2`"
    );
    assert_eq!(label_of(&e, text).1, "2");

    let text = "2 = x(i)";
    let e = parse_err(text);
    assert!(
        e.to_string().starts_with("expected the output tensor"),
        "{e}"
    );
    assert_eq!(label_of(&e, text).1, "2");

    let text = "y(i) = x(i))";
    let e = parse_err(text);
    assert!(e.to_string().contains("no matching `(`"), "{e}");
    assert_eq!(e.span(), Span { start: 11, end: 12 });

    let text = "y(i) = x(i) +";
    let e = parse_err(text);
    assert!(e.to_string().ends_with("found end of expression"), "{e}");
    assert_eq!(
        label_of(&e, text),
        (
            "expected an expression (a tensor, a number or `(`) after this".into(),
            "+".into()
        )
    );

    let text = "y(i) = (x(i) y(i))";
    let e = parse_err(text);
    assert_eq!(label_of(&e, text).1, "y");

    let text = "y(i) = = x(i)";
    let e = parse_err(text);
    assert_eq!(label_of(&e, text).1, "=");
}

#[test]
fn error_unterminated_parenthesis() {
    let text = "y(i) = (A(i,j) * x(j)";
    let e = parse_err(text);
    assert_eq!(e.kind(), &NotationErrorKind::UnterminatedParenthesis);
    assert_eq!(e.to_string(), "unterminated parenthesis");
    assert_eq!(
        label_of(&e, text),
        ("this `(` is never closed".into(), "(".into())
    );
    assert_eq!(e.span(), Span { start: 7, end: 8 });
    assert!(e.help_text().unwrap().contains(')'));

    let text = "y(i) = A(i,j";
    let e = parse_err(text);
    assert_eq!(e.kind(), &NotationErrorKind::UnterminatedParenthesis);
    assert_eq!(e.span(), Span { start: 8, end: 9 });

    let text = "y(i = A(i)";
    let e = parse_err(text);
    assert_eq!(e.to_string(), "expected `,` or `)`, found `=`");

    let text = "y(";
    let e = parse_err(text);
    assert_eq!(e.kind(), &NotationErrorKind::UnterminatedParenthesis);
    assert_eq!(e.span(), Span { start: 1, end: 2 });
}

#[test]
fn error_empty_expression() {
    for text in ["", "   \n\t"] {
        let e = parse_err(text);
        assert!(matches!(
            e.kind(),
            NotationErrorKind::EmptyExpression { .. }
        ));
        assert_eq!(e.to_string(), "the expression is empty");
        assert_eq!(
            e.span(),
            Span {
                start: 0,
                end: text.len()
            }
        );
    }
    let text = "y(i) =  ";
    let e = parse_err(text);
    assert_eq!(e.to_string(), "the right-hand side is empty");
    assert_eq!(e.span(), Span { start: 5, end: 6 });
    assert_eq!(
        label_of(&e, text),
        ("expected an expression after this".into(), "=".into())
    );
    let text = "y(i) +=";
    let e = parse_err(text);
    assert_eq!(label_of(&e, text).1, "+=");
}

#[test]
fn errors_render_with_source_label_and_help() {
    let text = "y(i) = (A(i,j) * x(j)";
    let out = render(&parse_err(text));
    assert!(out.contains("unterminated parenthesis"), "{out}");
    assert!(out.contains("[expression:1:8]"), "{out}");
    assert!(out.contains(text), "{out}");
    assert!(out.contains("this `(` is never closed"), "{out}");
    assert!(out.contains("help: add the matching `)`"), "{out}");
    assert!(out.contains("sparsec::notation"), "{out}");
}

// ---------------------------------------------------------------------------------------
// Binding

#[test]
fn bind_spmv() {
    let s = bind_text(
        "y(i) = A(i,j) * x(j)",
        &[decl("y", None), decl("A", Some(&[3, 4])), decl("x", None)],
        &[],
    );
    let names: Vec<&str> = s.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["y", "A", "x"]);
    assert_eq!(s.tensors[0].dims, vec![3]);
    assert_eq!(s.tensors[1].dims, vec![3, 4]);
    assert_eq!(s.tensors[2].dims, vec![4]);
    assert_eq!(s.tensors[0].format, Format::dense(1));
    assert_eq!(s.tensors[1].format, Format::dense(2));
    assert_eq!(
        s.vars,
        vec![
            cin::IndexVar {
                name: "i".into(),
                size: 3
            },
            cin::IndexVar {
                name: "j".into(),
                size: 4
            }
        ]
    );
    assert_eq!(s.lhs, vec![0]);
    assert!(!s.accumulate);
    assert_eq!(
        s.rhs,
        CExpr::Sum(
            1,
            Box::new(CExpr::Binary(
                Op::Mul,
                Box::new(CExpr::Access(cin::Access {
                    tensor: 1,
                    indices: vec![0, 1]
                })),
                Box::new(CExpr::Access(cin::Access {
                    tensor: 2,
                    indices: vec![1]
                })),
            ))
        )
    );
}

#[test]
fn reduction_placement() {
    let d = |n: &str| decl(n, None);
    let sizes = [("i", 3), ("j", 4), ("k", 5), ("l", 2)];
    let cases = [
        ("y(i) = B(i,j) + c(i)", "(sum(j, B(i,j)) + c(i))"),
        ("y(i) = A(i,j) * x(j)", "sum(j, (A(i,j) * x(j)))"),
        (
            "y(i) = c(i) + A(i,j) * x(j)",
            "(c(i) + sum(j, (A(i,j) * x(j))))",
        ),
        (
            "y(i) = A(i,j) * x(j) + B(i,k) * z(k)",
            "(sum(j, (A(i,j) * x(j))) + sum(k, (B(i,k) * z(k))))",
        ),
        ("C(i,j) = A(i,k) * B(k,j)", "sum(k, (A(i,k) * B(k,j)))"),
        // Two variables placed at the same node nest in order of first appearance.
        ("a = B(i,j) * C(j,i)", "sum(i, sum(j, (B(i,j) * C(j,i))))"),
        ("a = B(j,i) * C(i,j)", "sum(j, sum(i, (B(j,i) * C(i,j))))"),
        ("a = B(i) * C(i)", "sum(i, (B(i) * C(i)))"),
        ("a = 2 * B(i)", "(2 * sum(i, B(i)))"),
        ("a = -B(i)", "-sum(i, B(i))"),
        (
            "y(i) = A(i,j) * (x(j) + B(j,k) * z(k))",
            "sum(j, (A(i,j) * (x(j) + sum(k, (B(j,k) * z(k))))))",
        ),
        (
            "y(i) = A(i,j,k) * x(j) * z(k)",
            "sum(k, (sum(j, (A(i,j,k) * x(j))) * z(k)))",
        ),
        (
            "y(i) = (A(i,j,k) * x(j)) + z(k) * w(i)",
            "sum(k, (sum(j, (A(i,j,k) * x(j))) + (z(k) * w(i))))",
        ),
        (
            "y(i) = B(i,j,l) / c(i)",
            "(sum(j, sum(l, B(i,j,l))) / c(i))",
        ),
        ("y(i) = B(i,j) * B(i,j)", "sum(j, (B(i,j) * B(i,j)))"),
    ];
    for (text, want) in cases {
        let p = parse(text).unwrap();
        let mut names = vec![p.lhs.tensor.clone()];
        for a in p.rhs.accesses() {
            if !names.contains(&a.tensor) {
                names.push(a.tensor.clone())
            }
        }
        let decls: Vec<TensorDecl> = names.iter().map(|n| d(n)).collect();
        let s = bind_text(text, &decls, &sizes);
        assert_eq!(show_c(&s), want, "{text}");
    }
}

/// Every reduction variable is summed exactly once and every use is under its sum.
#[test]
fn reduction_invariants_hold() {
    fn check(e: &CExpr, summed: &mut Vec<usize>, open: &mut Vec<usize>) {
        match e {
            CExpr::Access(a) => {
                for v in &a.indices {
                    if !open.contains(v) {
                        summed.push(usize::MAX - v);
                    }
                }
            }
            CExpr::Literal(_) => {}
            CExpr::Neg(x) => check(x, summed, open),
            CExpr::Binary(_, a, b) => {
                check(a, summed, open);
                check(b, summed, open);
            }
            CExpr::Math(_, args) => args.iter().for_each(|a| check(a, summed, open)),
            CExpr::Sum(v, x) => {
                summed.push(*v);
                open.push(*v);
                check(x, summed, open);
                open.pop();
            }
        }
    }
    let s = bind_text(
        "y(i) = A(i,j,k) * x(j) + z(k) * -(w(i) - B(i,l) / C(l,k))",
        &["y", "A", "x", "z", "w", "B", "C"].map(|n| decl(n, None)),
        &[("i", 2), ("j", 3), ("k", 4), ("l", 5)],
    );
    let mut summed = vec![];
    let mut open = s.lhs.clone();
    check(&s.rhs, &mut summed, &mut open);
    summed.sort();
    // j, k and l once each; no free uses of non-output variables.
    let names: Vec<&str> = summed
        .iter()
        .map(|&v| s.vars.get(v).map_or("FREE", |x| x.name.as_str()))
        .collect();
    assert_eq!(names, ["j", "k", "l"], "{}", show_c(&s));
    assert!(!names.contains(&"FREE"), "{}", show_c(&s));
}

#[test]
fn bind_infers_dims_and_formats() {
    let csr = Format::parse("csr", 2).unwrap();
    let s = bind_text(
        "C(i,j) = A(i,k) * B(k,j)",
        &[
            decl("C", None),
            TensorDecl::new("A")
                .with_dims(&[2, 3])
                .with_format(csr.clone()),
            decl("B", Some(&[3, 7])),
        ],
        &[],
    );
    assert_eq!(s.tensors[0].dims, vec![2, 7]);
    assert_eq!(s.tensors[1].format, csr);
    assert_eq!(s.tensors[2].format, Format::dense(2));
    // Transposed access: dims follow the access's variables.
    let s = bind_text(
        "A(i,j) = B(j,i)",
        &[decl("A", None), decl("B", Some(&[4, 6]))],
        &[],
    );
    assert_eq!(s.tensors[0].dims, vec![6, 4]);
    // Input dims from var_sizes.
    let s = bind_text(
        "y(i) = A(i,j) * x(j)",
        &[decl("y", None), decl("A", None), decl("x", None)],
        &[("i", 5), ("j", 2), ("unused", 9)],
    );
    assert_eq!(s.tensors[1].dims, vec![5, 2]);
    assert_eq!(s.vars.len(), 2);
    // Explicit sizes that agree are fine.
    bind_text(
        "y(i) = A(i,j) * x(j)",
        &[decl("y", None), decl("A", Some(&[5, 2])), decl("x", None)],
        &[("i", 5), ("j", 2)],
    );
}

#[test]
fn bind_scalar_output_broadcast_and_accumulate() {
    let s = bind_text(
        "a = B(i) * C(i)",
        &[decl("a", None), decl("B", Some(&[4])), decl("C", None)],
        &[],
    );
    assert!(s.tensors[0].dims.is_empty());
    assert!(s.lhs.is_empty());
    assert_eq!(s.tensors[0].format, Format::dense(0));
    assert_eq!(show_c(&s), "sum(i, (B(i) * C(i)))");

    // Broadcast: j only on the left, sized by the output's dims.
    let s = bind_text(
        "A(i,j) = b(i)",
        &[decl("A", Some(&[3, 5])), decl("b", None)],
        &[],
    );
    assert_eq!(s.tensors[1].dims, vec![3]);
    assert_eq!(s.vars[1].size, 5);
    assert_eq!(show_c(&s), "b(i)");
    // ... or by var_sizes.
    let s = bind_text(
        "A(i,j) = b(i)",
        &[decl("A", None), decl("b", Some(&[3]))],
        &[("j", 2)],
    );
    assert_eq!(s.tensors[0].dims, vec![3, 2]);

    let s = bind_text(
        "y(i) += alpha * x(i)",
        &[decl("y", None), decl("alpha", None), decl("x", Some(&[3]))],
        &[],
    );
    assert!(s.accumulate);
    assert_eq!(s.tensors[1].dims, Vec::<usize>::new());
    assert_eq!(show_c(&s), "(alpha * x(i))");

    // The same tensor twice is one tensor with two accesses.
    let s = bind_text(
        "A(i,j) = B(i,j) * B(j,i)",
        &[decl("A", None), decl("B", Some(&[3, 3]))],
        &[],
    );
    assert_eq!(s.tensors.len(), 2);
    assert_eq!(show_c(&s), "(B(i,j) * B(j,i))");
}

// ---------------------------------------------------------------------------------------
// Binding errors

#[test]
fn error_unknown_tensor() {
    let text = "y(i) = A(i,j) * z(j)";
    let e = bind_err(text, &[decl("y", None), decl("A", Some(&[2, 2]))], &[]);
    assert_eq!(
        e.kind(),
        &NotationErrorKind::UnknownTensor {
            name: "z".into(),
            declared: vec!["y".into(), "A".into()]
        }
    );
    assert_eq!(e.to_string(), "unknown tensor `z`");
    assert_eq!(label_of(&e, text), ("not declared".into(), "z".into()));
    assert!(e.help_text().unwrap().contains("`y`, `A`"));
    // The output too.
    let e = bind_err(text, &[decl("A", Some(&[2, 2]))], &[]);
    assert_eq!(label_of(&e, text).1, "y");
}

#[test]
fn error_wrong_index_count() {
    let text = "y(i) = A(i,j,k) * x(j)";
    let e = bind_err(
        text,
        &[decl("y", None), decl("A", Some(&[2, 3])), decl("x", None)],
        &[],
    );
    assert_eq!(
        e.kind(),
        &NotationErrorKind::WrongIndexCount {
            tensor: "A".into(),
            expected: 2,
            got: 3,
            reason: "declared with dimensions 2x3".into()
        }
    );
    assert_eq!(
        e.to_string(),
        "wrong number of indices for tensor `A`: expected 2, got 3"
    );
    assert_eq!(
        label_of(&e, text),
        (
            "3 indices here, but `A` has 2 modes".into(),
            "A(i,j,k)".into()
        )
    );
    // Two accesses of one tensor with different arities.
    let text = "y(i) = A(i,j) * A(j)";
    let e = bind_err(text, &[decl("y", Some(&[2])), decl("A", None)], &[("j", 2)]);
    assert!(matches!(
        e.kind(),
        NotationErrorKind::WrongIndexCount {
            expected: 2,
            got: 1,
            ..
        }
    ));
    assert_eq!(label_of(&e, text).1, "A(j)");
    // The output's declared dims.
    let text = "y(i) = x(i)";
    let e = bind_err(text, &[decl("y", Some(&[2, 2])), decl("x", None)], &[]);
    assert_eq!(label_of(&e, text).1, "y(i)");
}

/// One tensor accessed through variables of different sizes: the kernel would read out of
/// bounds, so binding refuses it and points at the access that disagrees.
#[test]
fn error_mode_size_mismatch() {
    let text = "y(j) = A(j) * A(i)";
    let e = bind_err(
        text,
        &[decl("y", None), decl("A", None)],
        &[("i", 7), ("j", 2)],
    );
    assert_eq!(
        e.kind(),
        &NotationErrorKind::ModeSizeMismatch {
            tensor: "A".into(),
            mode: 0,
            var: "i".into(),
            var_size: 7,
            dim: 2,
            dim_source: "from the access `A(j)`".into(),
        }
    );
    assert_eq!(label_of(&e, text).1, "A(i)");
    assert_eq!(
        e.to_string(),
        "mode 0 of tensor `A` has size 2 (from the access `A(j)`), but index variable `i` has size 7"
    );
    // A transposed second access: mode 0 is `j` (5) first, then `i` (3).
    let text = "y(i) = A(j,i) - A(i,j)";
    let e = bind_err(
        text,
        &[decl("y", None), decl("A", None)],
        &[("i", 3), ("j", 5)],
    );
    assert_eq!(label_of(&e, text).1, "A(i,j)");
    assert!(
        matches!(
            e.kind(),
            NotationErrorKind::ModeSizeMismatch {
                mode: 0,
                dim: 5,
                var_size: 3,
                ..
            }
        ),
        "{:?}",
        e.kind()
    );
    // Equal sizes are fine, however many accesses.
    let stmt = bind_text(
        text,
        &[decl("y", None), decl("A", None)],
        &[("i", 4), ("j", 4)],
    );
    assert_eq!(stmt.tensors[1].dims, vec![4, 4]);
}

#[test]
fn error_size_conflict() {
    let text = "y(i) = A(i,j) * x(j)";
    let e = bind_err(
        text,
        &[
            decl("y", None),
            decl("A", Some(&[3, 4])),
            decl("x", Some(&[5])),
        ],
        &[],
    );
    assert_eq!(
        e.kind(),
        &NotationErrorKind::SizeConflict {
            var: "j".into(),
            size: 4,
            source: "mode 1 of `A`".into(),
            other_size: 5,
            other_source: "mode 0 of `x`".into()
        }
    );
    assert_eq!(
        e.to_string(),
        "index variable `j` is used with two different sizes: 4 (mode 1 of `A`) and 5 (mode 0 of `x`)"
    );
    let (label, under) = label_of(&e, text);
    assert_eq!(under, "j");
    assert_eq!(e.span(), Span { start: 18, end: 19 });
    assert!(label.contains("size 5"), "{label}");
    // Conflict between the output's dims and an input's.
    let text = "y(i) = x(i)";
    let e = bind_err(text, &[decl("y", Some(&[2])), decl("x", Some(&[3]))], &[]);
    assert!(
        e.to_string()
            .contains("2 (mode 0 of `y`) and 3 (mode 0 of `x`)"),
        "{e}"
    );
    assert_eq!(e.span(), Span { start: 9, end: 10 });
    // Conflict with an explicit size: labelled at the tensor that fixed the size.
    let text = "y(i) = A(i,j) * x(j)";
    let e = bind_err(
        text,
        &[decl("y", None), decl("A", Some(&[3, 4])), decl("x", None)],
        &[("j", 6)],
    );
    assert_eq!(
        e.to_string(),
        "index variable `j` is used with two different sizes: 6 (the given size of `j`) and 4 (mode 1 of `A`)"
    );
    assert_eq!(e.span(), Span { start: 11, end: 12 });
}

#[test]
fn error_repeated_output_index() {
    let text = "A(i,i) = B(i,j)";
    let e = bind_err(text, &[decl("A", None), decl("B", Some(&[2, 2]))], &[]);
    assert_eq!(
        e.kind(),
        &NotationErrorKind::RepeatedOutputIndex { var: "i".into() }
    );
    assert_eq!(
        e.to_string(),
        "index variable `i` is repeated on the left-hand side"
    );
    assert_eq!(e.span(), Span { start: 4, end: 5 });
    assert_eq!(label_of(&e, text).0, "second use of `i`");
}

#[test]
fn error_output_on_right() {
    let text = "A(i,j) = A(i,j) * B(i,j)";
    let e = bind_err(text, &[decl("A", None), decl("B", Some(&[2, 2]))], &[]);
    assert_eq!(
        e.kind(),
        &NotationErrorKind::OutputOnRight { tensor: "A".into() }
    );
    assert_eq!(
        e.to_string(),
        "the output tensor `A` also appears on the right-hand side, which is not supported"
    );
    assert_eq!(label_of(&e, text).1, "A(i,j)");
    assert_eq!(e.span(), Span { start: 9, end: 15 });
    assert!(e.help_text().unwrap().contains("+="));
}

#[test]
fn error_unknown_size() {
    let text = "y(i) = A(i,j) * x(j)";
    let e = bind_err(
        text,
        &[decl("y", None), decl("A", None), decl("x", Some(&[3]))],
        &[],
    );
    assert_eq!(
        e.kind(),
        &NotationErrorKind::UnknownSize { var: "i".into() }
    );
    assert_eq!(e.to_string(), "the size of index variable `i` is unknown");
    assert_eq!(e.span(), Span { start: 2, end: 3 });
    // A broadcast variable needs a size from the output or var_sizes.
    let text = "A(i,j) = b(i)";
    let e = bind_err(text, &[decl("A", None), decl("b", Some(&[3]))], &[]);
    assert_eq!(
        e.kind(),
        &NotationErrorKind::UnknownSize { var: "j".into() }
    );
    assert_eq!(e.span(), Span { start: 4, end: 5 });
}

#[test]
fn error_format_order_mismatch() {
    let text = "y(i) = A(i,j) * x(j)";
    let e = bind_err(
        text,
        &[
            decl("y", None),
            decl("A", Some(&[2, 2])),
            TensorDecl::new("x").with_format(Format::parse("csr", 2).unwrap()),
        ],
        &[],
    );
    assert_eq!(
        e.kind(),
        &NotationErrorKind::FormatOrderMismatch {
            tensor: "x".into(),
            format: "ds".into(),
            format_order: 2,
            arity: 1
        }
    );
    assert_eq!(
        e.to_string(),
        "format `ds` of tensor `x` has order 2, but `x` is accessed with 1 index"
    );
    assert_eq!(label_of(&e, text).1, "x(j)");
    let out = render(&e);
    assert!(out.contains("1 index here"), "{out}");
}

#[test]
fn math_functions_parse_as_calls_and_check_their_arguments() {
    assert_eq!(rhs("y(i) = sqrt(abs(x(i))) * 2"), "(sqrt(fabs(x(i))) * 2)");
    assert_eq!(
        rhs("y(i) = pow(x(i), 2) + exp(-x(i))"),
        "(pow(x(i), 2) + exp(-x(i)))"
    );
    // Without parentheses a function's name is a scalar tensor like any other.
    assert_eq!(rhs("y(i) = exp * x(i)"), "(exp * x(i))");
    let e = parse_err("y(i) = pow(x(i))");
    assert!(
        matches!(
            e.kind(),
            NotationErrorKind::WrongArgumentCount {
                expected: 2,
                got: 1,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("`pow` takes 2 argument(s), not 1"),
        "{e}"
    );
    let e = parse_err("y(i) = sqrt(x(i), x(i))");
    assert!(
        e.to_string().contains("`sqrt` takes 1 argument(s), not 2"),
        "{e}"
    );
    let e = parse_err("y(i) = exp(x(i)");
    assert!(
        matches!(e.kind(), NotationErrorKind::UnterminatedParenthesis),
        "{e}"
    );
    let text = "y(i) = 2 * sqrt(A(i,j) * x(j))";
    check_spans(text, &parse(text).unwrap().rhs);
    // Comparisons bind below `+` and `-`, do not chain, and `where` selects.
    assert_eq!(
        rhs("y(i) = x(i) + 1 > z(i) * 2"),
        "((x(i) + 1) > (z(i) * 2))"
    );
    assert_eq!(
        rhs("y(i) = where(x(i) >= 0, x(i), -x(i)) + (x(i) != z(i))"),
        "(where((x(i) >= 0), x(i), -x(i)) + (x(i) != z(i)))"
    );
    assert_eq!(rhs("y(i) = x(i) == 0"), "(x(i) == 0)");
    let e = parse_err("y(i) = x(i) < z(i) < 1");
    assert!(e.to_string().contains("second comparison"), "{e}");
    let e = parse_err("y(i) = !x(i)");
    assert!(
        matches!(e.kind(), NotationErrorKind::UnexpectedToken { .. }),
        "{e}"
    );
    let e = parse_err("y(i) = where(x(i), 1)");
    assert!(
        e.to_string().contains("`where` takes 3 argument(s), not 2"),
        "{e}"
    );
    let text = "y(i) = where(A(i,j) > 0, A(i,j), 0) * x(j)";
    check_spans(text, &parse(text).unwrap().rhs);
}

#[test]
fn masks_multiply_the_right_hand_side() {
    let masked = |text: &str| {
        let a = parse(text).unwrap();
        (show(&a.rhs), a.mask.unwrap(), a.lhs.tensor)
    };
    let (shown, mask, out) = masked("C<M>(i,j) = A(i,k) * B(k,j)");
    assert_eq!(shown, "((M(i,j) != 0) * (A(i,k) * B(k,j)))");
    assert_eq!(out, "C");
    assert!(!mask.structural && !mask.complement && mask.tensor == "M");
    let (shown, mask, _) = masked("C<!pattern(M)>(i,j) = A(i,j)");
    assert_eq!(shown, "((1 - pattern(M(i,j))) * A(i,j))");
    assert!(mask.structural && mask.complement);
    let (shown, _, _) = masked("y<~m>(i) += A(i,j) * x(j)");
    assert_eq!(shown, "((1 - (m(i) != 0)) * (A(i,j) * x(j)))");
    assert!(parse("C(i,j) = A(i,j)").unwrap().mask.is_none());
    // `pattern` is a function of one argument anywhere.
    assert_eq!(rhs("y(i) = pattern(x(i)) * 2"), "(pattern(x(i)) * 2)");
    for bad in [
        "C<M(i,j) = A(i,j)",
        "C<>(i,j) = A(i,j)",
        "C<pattern(M>(i,j) = A(i,j)",
    ] {
        let e = parse_err(bad);
        assert!(
            matches!(e.kind(), NotationErrorKind::UnexpectedToken { .. }),
            "{bad}: {e}"
        );
    }
}
