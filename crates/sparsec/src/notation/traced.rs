//! User operators written as Rust closures, by tracing: the closure is called once with
//! symbolic [`Scalar`]s, and what it builds from them with `+ - * /`, comparisons and the
//! math functions is the operator's body, written out as the `let` definition that
//! [`super::operator`] reads. The kernel computes that body in compiled code, on every
//! backend; the closure is never called per entry.
//!
//! ```
//! use sparsec::notation::{self, traced::{Scalar, UserOperator}};
//! // Ties between x and -x go to the larger, so that the operator commutes: its laws are
//! // checked when a statement names it as ⊕.
//! let absmax = UserOperator::binary("absmax", |a, b| {
//!     let tie = a.max(b.clone());
//!     Scalar::where_(a.abs().gt(b.abs()), a.clone(), Scalar::where_(b.abs().gt(a.abs()), b, tie))
//! })
//! .with_identity(0.0);
//! let relu = UserOperator::unary("relu", |x| x.max(0.0));
//! let product = format!("{} C(i,j) = A(i,k) * B(k,j) over (absmax, *)", absmax.definition());
//! assert!(notation::parse(&product).is_ok());
//! let element_wise = format!("{} R(i,j) = relu(A(i,j))", relu.definition());
//! assert!(notation::parse(&element_wise).is_ok());
//! ```

use std::ops::{Add, Div, Mul, Neg, Sub};

/// A traced value: the text of an index-notation expression over the parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Scalar(String);

impl Scalar {
    /// The expression's text.
    pub fn text(&self) -> &str {
        &self.0
    }

    fn call(name: &str, args: &[&Scalar]) -> Scalar {
        let args: Vec<&str> = args.iter().map(|a| a.0.as_str()).collect();
        Scalar(format!("{name}({})", args.join(", ")))
    }

    fn binary(&self, symbol: &str, other: Scalar) -> Scalar {
        Scalar(format!("({} {symbol} {})", self.0, other.0))
    }

    /// `x` where `cond` is not zero, else `y`.
    pub fn where_(cond: Scalar, x: impl Into<Scalar>, y: impl Into<Scalar>) -> Scalar {
        Scalar::call("where", &[&cond, &x.into(), &y.into()])
    }
    /// The larger (the one that is not NaN).
    pub fn max(&self, other: impl Into<Scalar>) -> Scalar {
        Scalar::call("max", &[self, &other.into()])
    }
    /// The smaller (the one that is not NaN).
    pub fn min(&self, other: impl Into<Scalar>) -> Scalar {
        Scalar::call("min", &[self, &other.into()])
    }
    /// `self` to the power `other`.
    pub fn pow(&self, other: impl Into<Scalar>) -> Scalar {
        Scalar::call("pow", &[self, &other.into()])
    }
    /// `self < other`, as 1 or 0.
    pub fn lt(&self, other: impl Into<Scalar>) -> Scalar {
        self.binary("<", other.into())
    }
    /// `self <= other`, as 1 or 0.
    pub fn le(&self, other: impl Into<Scalar>) -> Scalar {
        self.binary("<=", other.into())
    }
    /// `self > other`, as 1 or 0.
    pub fn gt(&self, other: impl Into<Scalar>) -> Scalar {
        self.binary(">", other.into())
    }
    /// `self >= other`, as 1 or 0.
    pub fn ge(&self, other: impl Into<Scalar>) -> Scalar {
        self.binary(">=", other.into())
    }
    /// `self == other`, as 1 or 0.
    pub fn equals(&self, other: impl Into<Scalar>) -> Scalar {
        self.binary("==", other.into())
    }
    /// `self != other`, as 1 or 0.
    pub fn differs(&self, other: impl Into<Scalar>) -> Scalar {
        self.binary("!=", other.into())
    }
}

macro_rules! unary_functions {
    ($($name:ident),*) => {
        impl Scalar {
            $(
                #[doc = concat!("`", stringify!($name), "(self)`.")]
                pub fn $name(&self) -> Scalar {
                    Scalar::call(stringify!($name), &[self])
                }
            )*
        }
    };
}
unary_functions!(abs, sqrt, exp, log, sin, cos, tan, floor, ceil);

/// A constant. Index notation writes finite numbers: a non-finite one is written as the
/// quotient that gives it (`1 / 0` is `inf`), so the body still means what was traced.
impl From<f64> for Scalar {
    fn from(x: f64) -> Scalar {
        Scalar(if x.is_nan() {
            "(0.0 / 0.0)".into()
        } else if x.is_infinite() {
            format!("({} / 0.0)", if x > 0.0 { "1.0" } else { "-1.0" })
        } else {
            format!("{x:?}")
        })
    }
}

macro_rules! arithmetic {
    ($($trait:ident $method:ident $symbol:literal),*) => {
        $(
            impl<T: Into<Scalar>> $trait<T> for Scalar {
                type Output = Scalar;
                fn $method(self, other: T) -> Scalar {
                    self.binary($symbol, other.into())
                }
            }
            impl $trait<Scalar> for f64 {
                type Output = Scalar;
                fn $method(self, other: Scalar) -> Scalar {
                    Scalar::from(self).binary($symbol, other)
                }
            }
        )*
    };
}
arithmetic!(Add add "+", Sub sub "-", Mul mul "*", Div div "/");

impl Neg for Scalar {
    type Output = Scalar;
    fn neg(self) -> Scalar {
        Scalar(format!("(-{})", self.0))
    }
}

/// An operator traced from a closure: its `let` definition goes before the statement.
#[derive(Clone, Debug, PartialEq)]
pub struct UserOperator {
    name: String,
    params: Vec<&'static str>,
    body: Scalar,
    identity: Option<f64>,
}

impl UserOperator {
    /// An operator of one argument (element-wise).
    pub fn unary(name: &str, f: impl FnOnce(Scalar) -> Scalar) -> UserOperator {
        UserOperator {
            name: name.to_string(),
            params: vec!["a"],
            body: f(Scalar("a".into())),
            identity: None,
        }
    }

    /// An operator of two arguments: element-wise, or a semiring's ⊗, or (with
    /// [`UserOperator::with_identity`]) its ⊕.
    pub fn binary(name: &str, f: impl FnOnce(Scalar, Scalar) -> Scalar) -> UserOperator {
        UserOperator {
            name: name.to_string(),
            params: vec!["a", "b"],
            body: f(Scalar("a".into()), Scalar("b".into())),
            identity: None,
        }
    }

    /// The value a reduction by this operator starts from. Its laws (associative,
    /// commutative, this identity) are checked on sample values when a statement names
    /// it as ⊕.
    pub fn with_identity(mut self, identity: f64) -> UserOperator {
        self.identity = Some(identity);
        self
    }

    /// `let name(a, b) = body [identity v];`, to put before a statement.
    pub fn definition(&self) -> String {
        let identity = match self.identity {
            Some(v) if v == f64::INFINITY => " identity inf".to_string(),
            Some(v) if v == f64::NEG_INFINITY => " identity -inf".to_string(),
            Some(v) => format!(" identity {v:?}"),
            None => String::new(),
        };
        format!(
            "let {}({}) = {}{identity};",
            self.name,
            self.params.join(", "),
            self.body.0
        )
    }
}
