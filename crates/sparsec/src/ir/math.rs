//! The IR's element-wise functions: C's math functions, comparisons as numbers and a
//! select; what each computes, how C spells it, and its algebra at zero.

/// Element-wise functions of the IR, on `double` values: C's `<math.h>` functions (OpenCL
/// C and CUDA have them under the same names), comparisons that give 1 or 0, and `where`.
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
    /// `x < y`, as 1 or 0.
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    /// `x != y` (1 where either is NaN).
    Ne,
    /// `where(c, x, y)`: `x` where `c` is not zero, else `y`.
    Where,
    /// `pattern(x)`: 1 where `x` has an entry (whatever its value, zero included), absent
    /// where it has none: a structural mask. Not a function of the value, so lowering
    /// computes it from presence and it never reaches a backend.
    Pattern,
    /// `bool(x)`: 1 where `x` is not zero, else 0.
    ToBool,
    /// `i32(x)`: `x` converted to a 32-bit integer, as Rust's `as` converts: toward zero,
    /// saturating at the type's bounds, NaN to 0. Values stay `double`; the conversion is
    /// of the value.
    ToI32,
    /// `i64(x)`: as `i32`, at 64 bits: the largest value, `i64::MAX`, is 2^63 as a
    /// `double`.
    ToI64,
    /// `f32(x)`: `x` rounded to the nearest `float`.
    ToF32,
    /// `f64(x)`: `x`.
    ToF64,
}

/// Bounds of `i32(x)` and `i64(x)`: each type's least and greatest value as a `double`.
const I32_BOUNDS: (f64, f64) = (-2147483648.0, 2147483647.0);
const I64_BOUNDS: (f64, f64) = (-9223372036854775808.0, 9223372036854775808.0);

/// `x` converted to an integer within `bounds`: toward zero, saturating, NaN to 0.
fn to_integer(x: f64, (low, high): (f64, f64)) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(low, high).trunc()
    }
}

impl MathFn {
    /// Every function, for lookups by name.
    pub const ALL: [MathFn; 25] = [
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
        MathFn::Lt,
        MathFn::Le,
        MathFn::Gt,
        MathFn::Ge,
        MathFn::Eq,
        MathFn::Ne,
        MathFn::Where,
        MathFn::Pattern,
        MathFn::ToBool,
        MathFn::ToI32,
        MathFn::ToI64,
        MathFn::ToF32,
        MathFn::ToF64,
    ];

    /// The C name of a math function (`fabs` for the absolute value); an operator's
    /// symbol (`<`), and `where`.
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
            MathFn::Lt => "<",
            MathFn::Le => "<=",
            MathFn::Gt => ">",
            MathFn::Ge => ">=",
            MathFn::Eq => "==",
            MathFn::Ne => "!=",
            MathFn::Where => "where",
            MathFn::Pattern => "pattern",
            MathFn::ToBool => "bool",
            MathFn::ToI32 => "i32",
            MathFn::ToI64 => "i64",
            MathFn::ToF32 => "f32",
            MathFn::ToF64 => "f64",
        }
    }

    /// Whether C spells it other than as a call of a library function: a comparison,
    /// `where`, or a conversion.
    pub fn is_operator(self) -> bool {
        self.is_conversion()
            || matches!(
                self,
                MathFn::Lt
                    | MathFn::Le
                    | MathFn::Gt
                    | MathFn::Ge
                    | MathFn::Eq
                    | MathFn::Ne
                    | MathFn::Where
                    | MathFn::Pattern
            )
    }

    /// Whether it converts a value to another value type (`i32(x)`).
    pub fn is_conversion(self) -> bool {
        matches!(
            self,
            MathFn::ToBool | MathFn::ToI32 | MathFn::ToI64 | MathFn::ToF32 | MathFn::ToF64
        )
    }

    /// The bounds an integer conversion saturates at.
    pub fn integer_bounds(self) -> Option<(f64, f64)> {
        match self {
            MathFn::ToI32 => Some(I32_BOUNDS),
            MathFn::ToI64 => Some(I64_BOUNDS),
            _ => None,
        }
    }

    /// Whether its value is 1 or 0: a comparison, or `pattern`.
    pub fn is_condition(self) -> bool {
        self != MathFn::Where && self.is_operator()
    }

    /// The C library function called `name`.
    pub fn from_c_name(name: &str) -> Option<MathFn> {
        MathFn::ALL
            .into_iter()
            .find(|f| !f.is_operator() && f.c_name() == name)
    }

    /// The C expression of the function applied to `args` (C texts), of type `double`.
    pub fn c_expr(self, args: &[String]) -> String {
        match self {
            MathFn::Where => format!("({} != 0.0 ? {} : {})", args[0], args[1], args[2]),
            MathFn::Pattern => "1.0".to_string(),
            MathFn::ToBool => format!("({} != 0.0 ? 1.0 : 0.0)", args[0]),
            MathFn::ToI32 | MathFn::ToI64 => {
                let (low, high) = self.integer_bounds().expect("an integer conversion");
                let x = &args[0];
                format!("(isnan({x}) ? 0.0 : trunc(fmin(fmax({x}, {low:.1}), {high:.1})))")
            }
            MathFn::ToF32 => format!("((double)(float)({}))", args[0]),
            MathFn::ToF64 => format!("({})", args[0]),
            op if op.is_operator() => {
                format!("({} {} {} ? 1.0 : 0.0)", args[0], op.c_name(), args[1])
            }
            f => format!("{}({})", f.c_name(), args.join(", ")),
        }
    }

    /// Whether `f(0, ..., 0) = 0`: applied to sparse operands, its result is zero where
    /// they all are, so it keeps the union of their patterns (`exp(0) = 1`,
    /// `cos(0) = 1`, `pow(0, 0) = 1` and `0 <= 0` do not, and `log(0)` is `-inf`).
    /// `pattern` keeps absent entries absent by definition.
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
                | MathFn::Lt
                | MathFn::Gt
                | MathFn::Ne
                | MathFn::Where
                | MathFn::Pattern
                | MathFn::ToBool
                | MathFn::ToI32
                | MathFn::ToI64
                | MathFn::ToF32
                | MathFn::ToF64
        )
    }

    /// How many arguments it takes.
    pub fn arity(self) -> usize {
        match self {
            MathFn::Where => 3,
            MathFn::Pow
            | MathFn::Max
            | MathFn::Min
            | MathFn::Lt
            | MathFn::Le
            | MathFn::Gt
            | MathFn::Ge
            | MathFn::Eq
            | MathFn::Ne => 2,
            _ => 1,
        }
    }

    /// Its value at `args` (as many as [`MathFn::arity`] says), as C computes it.
    pub fn eval(self, args: &[f64]) -> f64 {
        let x = args[0];
        let truth = |b: bool| if b { 1.0 } else { 0.0 };
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
            MathFn::Lt => truth(x < args[1]),
            MathFn::Le => truth(x <= args[1]),
            MathFn::Gt => truth(x > args[1]),
            MathFn::Ge => truth(x >= args[1]),
            MathFn::Eq => truth(x == args[1]),
            MathFn::Ne => truth(x != args[1]),
            MathFn::Where => {
                if x != 0.0 {
                    args[1]
                } else {
                    args[2]
                }
            }
            // Of an entry that is there: absent ones are kept absent (`keeps_zero`).
            MathFn::Pattern => 1.0,
            MathFn::ToBool => truth(x != 0.0),
            MathFn::ToI32 => to_integer(x, I32_BOUNDS),
            MathFn::ToI64 => to_integer(x, I64_BOUNDS),
            MathFn::ToF32 => x as f32 as f64,
            MathFn::ToF64 => x,
        }
    }
}
