//! The IR's math functions: what each computes, its C name and its algebra at zero.

/// Math functions of the IR, on `double` values, as C's `<math.h>` (and OpenCL C and
/// CUDA, under the same names) define them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    Sqrt,
    Abs,
    Exp,
    Log,
    Sin,
    Cos,
    Tan,
    Floor,
    Ceil,
    /// `pow(x, y)`.
    Pow,
    /// `fmax(x, y)`: the larger, or the one that is not NaN.
    Max,
    /// `fmin(x, y)`.
    Min,
}

impl MathFn {
    /// Every function, for lookups by name.
    pub const ALL: [MathFn; 12] = [
        MathFn::Sqrt,
        MathFn::Abs,
        MathFn::Exp,
        MathFn::Log,
        MathFn::Sin,
        MathFn::Cos,
        MathFn::Tan,
        MathFn::Floor,
        MathFn::Ceil,
        MathFn::Pow,
        MathFn::Max,
        MathFn::Min,
    ];

    /// The C name (`fabs` for the absolute value).
    pub fn c_name(self) -> &'static str {
        match self {
            MathFn::Sqrt => "sqrt",
            MathFn::Abs => "fabs",
            MathFn::Exp => "exp",
            MathFn::Log => "log",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Tan => "tan",
            MathFn::Floor => "floor",
            MathFn::Ceil => "ceil",
            MathFn::Pow => "pow",
            MathFn::Max => "fmax",
            MathFn::Min => "fmin",
        }
    }

    /// The function C calls `name`.
    pub fn from_c_name(name: &str) -> Option<MathFn> {
        MathFn::ALL.into_iter().find(|f| f.c_name() == name)
    }

    /// Whether `f(0, ..., 0) = 0`: applied to sparse operands, its result is zero where
    /// they all are, so it keeps the union of their patterns (`exp(0) = 1`,
    /// `cos(0) = 1` and `pow(0, 0) = 1` do not, and `log(0)` is `-inf`).
    pub fn keeps_zero(self) -> bool {
        matches!(
            self,
            MathFn::Sqrt
                | MathFn::Abs
                | MathFn::Sin
                | MathFn::Tan
                | MathFn::Floor
                | MathFn::Ceil
                | MathFn::Max
                | MathFn::Min
        )
    }

    /// How many arguments it takes.
    pub fn arity(self) -> usize {
        match self {
            MathFn::Pow | MathFn::Max | MathFn::Min => 2,
            _ => 1,
        }
    }

    /// Its value at `args` (as many as [`MathFn::arity`] says), as the C library
    /// computes it.
    pub fn eval(self, args: &[f64]) -> f64 {
        let x = args[0];
        match self {
            MathFn::Sqrt => x.sqrt(),
            MathFn::Abs => x.abs(),
            MathFn::Exp => x.exp(),
            MathFn::Log => x.ln(),
            MathFn::Sin => x.sin(),
            MathFn::Cos => x.cos(),
            MathFn::Tan => x.tan(),
            MathFn::Floor => x.floor(),
            MathFn::Ceil => x.ceil(),
            MathFn::Pow => x.powf(args[1]),
            MathFn::Max => x.max(args[1]),
            MathFn::Min => x.min(args[1]),
        }
    }
}
