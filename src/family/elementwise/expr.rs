//! The body language of elementwise specs: parsing with byte positions, name resolution, and
//! the canonical form both the lowering and the f64 evaluator start from.
//!
//! ```text
//! expr    := term (('+' | '-') term)*
//! term    := unary (('*' | '/') unary)*
//! unary   := ('-' | '+') unary | atom
//! atom    := number | name | name '(' expr (',' expr)* ')' | '(' expr ')'
//! number  := digits ['.' digits] [('e' | 'E') ['+' | '-'] digits]   (or '.' digits ...)
//! ```
//!
//! Names are the op's inputs, its numeric attrs, and the constants `pi` and `e` (an input or
//! attr of that name shadows the constant). Functions: `exp log sqrt rsqrt abs tanh erf erfc
//! sigmoid softplus log1p expm1 sign step` (one argument), `min max` (two), `pow(base, n)` with an
//! integer literal `n`. `step(u)` is 1 for u > 0 and 0 otherwise (also for NaN, as torch's
//! `x > 0` mask); `sign(u)` is ±1, or u itself for ±0 and NaN. The differentiator
//! (`diff.rs`) produces them for abs, min and max.

use std::fmt;

/// A problem in the body, at a byte offset of the body string.
#[derive(Debug, Clone, PartialEq)]
pub struct ExprError {
    pub pos: usize,
    pub message: String,
}

impl ExprError {
    fn new(pos: usize, message: impl Into<String>) -> Self {
        ExprError { pos, message: message.into() }
    }
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.pos, self.message)
    }
}

// ---- syntax --------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
}

/// The parsed body, every node with the byte offset where it starts.
#[derive(Debug, Clone, PartialEq)]
pub enum Syntax {
    Num { pos: usize, value: f64, text: String },
    Name { pos: usize, name: String },
    Neg { pos: usize, arg: Box<Syntax> },
    Bin { pos: usize, op: BinOp, lhs: Box<Syntax>, rhs: Box<Syntax> },
    Call { pos: usize, name: String, args: Vec<Syntax> },
}

impl Syntax {
    pub fn pos(&self) -> usize {
        match self {
            Syntax::Num { pos, .. }
            | Syntax::Name { pos, .. }
            | Syntax::Neg { pos, .. }
            | Syntax::Bin { pos, .. }
            | Syntax::Call { pos, .. } => *pos,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64, String),
    Ident(String),
    Sym(char),
    End,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Num(_, t) => format!("number `{t}`"),
            Tok::Ident(n) => format!("name `{n}`"),
            Tok::Sym(c) => format!("`{c}`"),
            Tok::End => "the end of the body".to_string(),
        }
    }
}

fn lex(body: &str) -> Result<Vec<(usize, Tok)>, ExprError> {
    let bytes = body.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i < bytes.len() && bytes[i] == b'.' {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    i = j;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                } else {
                    return Err(ExprError::new(j, "the exponent of this number has no digits"));
                }
            }
            if i < bytes.len() && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') {
                return Err(ExprError::new(
                    i,
                    "a number runs into a name: write the multiplication explicitly (`2 * x`, not `2x`)",
                ));
            }
            let text = &body[start..i];
            let value: f64 =
                text.parse().map_err(|_| ExprError::new(start, format!("`{text}` is not a number")))?;
            if !value.is_finite() {
                return Err(ExprError::new(start, format!("the number `{text}` is too large")));
            }
            out.push((start, Tok::Num(value, text.to_string())));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((start, Tok::Ident(body[start..i].to_string())));
            continue;
        }
        match c {
            b'+' | b'-' | b'*' | b'/' | b'(' | b')' | b',' => {
                out.push((start, Tok::Sym(c as char)));
                i += 1;
            }
            _ => {
                let ch = body[start..].chars().next().unwrap_or('?');
                let hint = match ch {
                    '^' => ": write powers as pow(x, n)",
                    '×' | '·' => ": write multiplication as `*`",
                    _ => "",
                };
                return Err(ExprError::new(start, format!("unexpected character `{ch}`{hint}")));
            }
        }
    }
    out.push((body.len(), Tok::End));
    Ok(out)
}

struct Parser {
    toks: Vec<(usize, Tok)>,
    at: usize,
    depth: usize,
}

/// Nesting deeper than this is refused, and so is a tree taller than this (a long chain
/// `x + x + ... + x` is a left-deep tree): every later stage (resolution, canonical form,
/// lowering, the evaluator, the comment text) walks the tree recursively and would exhaust the
/// stack.
const MAX_DEPTH: usize = 200;

/// A parsed subtree and its height (a leaf has height 1).
type Parsed = (Syntax, usize);

fn too_deep(pos: usize) -> ExprError {
    ExprError::new(pos, format!("the body nests too deeply: at most {MAX_DEPTH} levels of operations"))
}

impl Parser {
    fn peek(&self) -> &(usize, Tok) {
        &self.toks[self.at]
    }
    fn bump(&mut self) -> (usize, Tok) {
        let t = self.toks[self.at].clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }
    fn sym(&self, c: char) -> bool {
        self.peek().1 == Tok::Sym(c)
    }

    /// `lhs op rhs` with its height, refused past MAX_DEPTH (at the operator).
    fn bin(at: usize, op: BinOp, (lhs, hl): Parsed, (rhs, hr): Parsed) -> Result<Parsed, ExprError> {
        let height = 1 + hl.max(hr);
        if height > MAX_DEPTH {
            return Err(too_deep(at));
        }
        Ok((Syntax::Bin { pos: lhs.pos(), op, lhs: Box::new(lhs), rhs: Box::new(rhs) }, height))
    }

    fn expr(&mut self) -> Result<Parsed, ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(too_deep(self.peek().0));
        }
        let mut lhs = self.term()?;
        while self.sym('+') || self.sym('-') {
            let (at, tok) = self.bump();
            let op = if tok == Tok::Sym('+') { BinOp::Add } else { BinOp::Sub };
            let rhs = self.term()?;
            lhs = Self::bin(at, op, lhs, rhs)?;
        }
        self.depth -= 1;
        Ok(lhs)
    }

    fn term(&mut self) -> Result<Parsed, ExprError> {
        let mut lhs = self.unary()?;
        while self.sym('*') || self.sym('/') {
            let (at, tok) = self.bump();
            let op = if tok == Tok::Sym('*') { BinOp::Mul } else { BinOp::Div };
            let rhs = self.unary()?;
            lhs = Self::bin(at, op, lhs, rhs)?;
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Parsed, ExprError> {
        if self.sym('-') || self.sym('+') {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(too_deep(self.peek().0));
            }
            let (pos, tok) = self.bump();
            let (arg, height) = self.unary()?;
            self.depth -= 1;
            if tok == Tok::Sym('+') {
                return Ok((arg, height));
            }
            if height + 1 > MAX_DEPTH {
                return Err(too_deep(pos));
            }
            return Ok((Syntax::Neg { pos, arg: Box::new(arg) }, height + 1));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Parsed, ExprError> {
        let (pos, tok) = self.bump();
        match tok {
            Tok::Num(value, text) => Ok((Syntax::Num { pos, value, text }, 1)),
            Tok::Ident(name) => {
                if !self.sym('(') {
                    return Ok((Syntax::Name { pos, name }, 1));
                }
                let (open, _) = self.bump();
                let mut args = Vec::new();
                let mut height = 0;
                if self.sym(')') {
                    return Err(ExprError::new(self.peek().0, format!("`{name}(` needs an argument")));
                }
                loop {
                    let (arg, h) = self.expr()?;
                    args.push(arg);
                    height = height.max(h);
                    let (p, t) = self.bump();
                    match t {
                        Tok::Sym(',') => continue,
                        Tok::Sym(')') => break,
                        other => {
                            return Err(ExprError::new(
                                p,
                                format!(
                                    "expected `,` or `)` to continue the call of `{name}` opened at byte {open}, found {}",
                                    other.describe()
                                ),
                            ))
                        }
                    }
                }
                if height + 1 > MAX_DEPTH {
                    return Err(too_deep(pos));
                }
                Ok((Syntax::Call { pos, name, args }, height + 1))
            }
            Tok::Sym('(') => {
                let inner = self.expr()?;
                let (p, t) = self.bump();
                if t != Tok::Sym(')') {
                    return Err(ExprError::new(
                        p,
                        format!("expected `)` to close the `(` at byte {pos}, found {}", t.describe()),
                    ));
                }
                Ok(inner)
            }
            other => Err(ExprError::new(
                pos,
                format!("expected a number, a name or `(`, found {}", other.describe()),
            )),
        }
    }
}

/// Parses a body into its syntax tree; the error names the byte offset where parsing failed.
pub fn parse(body: &str) -> Result<Syntax, ExprError> {
    let toks = lex(body)?;
    let mut p = Parser { toks, at: 0, depth: 0 };
    if p.peek().1 == Tok::End {
        return Err(ExprError::new(0, "the body is empty"));
    }
    let (e, _) = p.expr()?;
    let (pos, t) = p.peek().clone();
    if t != Tok::End {
        let what = match t {
            Tok::Sym(')') => "an unmatched `)`".to_string(),
            other => format!("{} after a complete expression (an operator is missing?)", other.describe()),
        };
        return Err(ExprError::new(pos, format!("unexpected {what}")));
    }
    Ok(e)
}

// ---- meaning ---------------------------------------------------------------------------------

/// One-argument functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Func {
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Abs,
    Tanh,
    Erf,
    Erfc,
    Sigmoid,
    /// log(1 + e^u), evaluated without overflow or cancellation.
    Softplus,
    /// log(1 + u), accurate for small u.
    Log1p,
    /// e^u - 1, accurate for small u.
    Expm1,
    Sign,
    Step,
    /// `rne(u)`: u rounded to the output dtype (RNE) where the op's `rounding` attr is `hf` and
    /// the output is 16-bit (an intermediate rounding the framework's eager code makes, e.g.
    /// HF's `act_fn(gate)` stored in bfloat16); u itself otherwise. Derivative 1.
    Rne,
    /// `rne` bound to a dtype for the f64 references ([`bind_rounding`]); never parsed.
    RoundTo(crate::dtype::DType),
}

impl Func {
    pub const ALL: [Func; 15] = [
        Func::Exp,
        Func::Log,
        Func::Sqrt,
        Func::Rsqrt,
        Func::Abs,
        Func::Tanh,
        Func::Erf,
        Func::Erfc,
        Func::Sigmoid,
        Func::Softplus,
        Func::Log1p,
        Func::Expm1,
        Func::Sign,
        Func::Step,
        Func::Rne,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Func::Exp => "exp",
            Func::Log => "log",
            Func::Sqrt => "sqrt",
            Func::Rsqrt => "rsqrt",
            Func::Abs => "abs",
            Func::Tanh => "tanh",
            Func::Erf => "erf",
            Func::Erfc => "erfc",
            Func::Sigmoid => "sigmoid",
            Func::Softplus => "softplus",
            Func::Log1p => "log1p",
            Func::Expm1 => "expm1",
            Func::Sign => "sign",
            Func::Step => "step",
            Func::Rne => "rne",
            Func::RoundTo(crate::dtype::DType::BFloat16) => "rne_bf16",
            Func::RoundTo(crate::dtype::DType::Float16) => "rne_f16",
            Func::RoundTo(_) => "rne_f32",
        }
    }
}

/// Every function name the body may call, for messages.
pub const FUNCTION_NAMES: &str =
    "exp, log, sqrt, rsqrt, abs, tanh, erf, erfc, sigmoid, softplus, log1p, expm1, sign, step, rne, min, max, pow";

/// The body with every `rne(u)` bound for an f64 reference: rounded to `to` (a 16-bit output
/// dtype under `rounding = "hf"`), or removed (`None`: `once`, or a float32 output, where the
/// float32 compute already is the output dtype).
pub fn bind_rounding(node: &Node, to: Option<crate::dtype::DType>) -> Node {
    let b = |n: &Node| Box::new(bind_rounding(n, to));
    match node {
        Node::Input(_) | Node::Attr(_) | Node::Const(_) | Node::Patched(_) => node.clone(),
        Node::Rescued(a, c) => Node::Rescued(b(a), b(c)),
        Node::Neg(a) => Node::Neg(b(a)),
        Node::Bin(op, x, y) => Node::Bin(*op, b(x), b(y)),
        Node::Min(x, y) => Node::Min(b(x), b(y)),
        Node::Max(x, y) => Node::Max(b(x), b(y)),
        Node::Powi(a, k) => Node::Powi(b(a), *k),
        Node::Call(Func::Rne, a) => match to {
            Some(d) => Node::Call(Func::RoundTo(d), b(a)),
            None => bind_rounding(a, to),
        },
        Node::Call(f, a) => Node::Call(*f, b(a)),
    }
}

/// Named constants; an input or attr of the same name shadows one.
pub const CONSTANTS: [(&str, f64); 2] = [("pi", std::f64::consts::PI), ("e", std::f64::consts::E)];

/// The largest |n| of pow(x, n) (it is unrolled into multiplications).
pub const MAX_POW: i64 = 64;

/// The body with names resolved: inputs and attrs by index.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Input(usize),
    Attr(usize),
    Const(f64),
    Neg(Box<Node>),
    Bin(BinOp, Box<Node>, Box<Node>),
    Min(Box<Node>, Box<Node>),
    Max(Box<Node>, Box<Node>),
    Call(Func, Box<Node>),
    Powi(Box<Node>, i32),
    /// A sum evaluated by a root-local series near its roots (backward ops only; the value is
    /// the base sum's, see `roots.rs`).
    Patched(Box<super::roots::Patch>),
    /// `plain`, or where |plain| < 2^-100 (an exponential underflowed) `scaled · 2^-64`, with
    /// `scaled` the same value computed with its exponentials shifted by 2^64 (backward ops
    /// only; the value is `plain`'s, see `diff::rescue_underflow`).
    Rescued(Box<Node>, Box<Node>),
}

/// What names mean in one op's body.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    pub inputs: &'a [String],
    /// Numeric (float or int) attrs, in declaration order.
    pub attrs: &'a [String],
}

/// Resolves every name and call; all problems are returned, each at its byte offset.
pub fn resolve(syntax: &Syntax, scope: Scope) -> Result<Node, Vec<ExprError>> {
    let mut errors = Vec::new();
    let node = resolve_in(syntax, scope, &mut errors);
    if errors.is_empty() {
        Ok(node)
    } else {
        Err(errors)
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

fn resolve_in(s: &Syntax, scope: Scope, errors: &mut Vec<ExprError>) -> Node {
    let dummy = Node::Const(0.0);
    match s {
        Syntax::Num { value, .. } => Node::Const(*value),
        Syntax::Name { pos, name } => {
            if let Some(i) = scope.inputs.iter().position(|n| n == name) {
                Node::Input(i)
            } else if let Some(i) = scope.attrs.iter().position(|n| n == name) {
                Node::Attr(i)
            } else if let Some((_, v)) = CONSTANTS.iter().find(|(n, _)| n == name) {
                Node::Const(*v)
            } else {
                let hint = if FUNCTION_NAMES.split(", ").any(|f| f == name) {
                    format!(" (`{name}` is a function: call it as `{name}(...)`)")
                } else {
                    String::new()
                };
                errors.push(ExprError::new(
                    *pos,
                    format!(
                        "`{name}` is not defined: not an input ({}), not a numeric attr ({}), not a constant (pi, e){hint}",
                        list(scope.inputs),
                        list(scope.attrs)
                    ),
                ));
                dummy
            }
        }
        Syntax::Neg { arg, .. } => Node::Neg(Box::new(resolve_in(arg, scope, errors))),
        Syntax::Bin { op, lhs, rhs, .. } => {
            Node::Bin(*op, Box::new(resolve_in(lhs, scope, errors)), Box::new(resolve_in(rhs, scope, errors)))
        }
        Syntax::Call { pos, name, args } => {
            let arity = |want: usize, errors: &mut Vec<ExprError>| -> bool {
                if args.len() == want {
                    true
                } else {
                    errors.push(ExprError::new(
                        *pos,
                        format!(
                            "`{name}` takes {want} argument{}, found {}",
                            if want == 1 { "" } else { "s" },
                            args.len()
                        ),
                    ));
                    false
                }
            };
            if let Some(f) = Func::ALL.into_iter().find(|f| f.name() == name) {
                if !arity(1, errors) {
                    return dummy;
                }
                return Node::Call(f, Box::new(resolve_in(&args[0], scope, errors)));
            }
            match name.as_str() {
                "min" | "max" => {
                    if !arity(2, errors) {
                        return dummy;
                    }
                    let a = Box::new(resolve_in(&args[0], scope, errors));
                    let b = Box::new(resolve_in(&args[1], scope, errors));
                    if name == "min" {
                        Node::Min(a, b)
                    } else {
                        Node::Max(a, b)
                    }
                }
                "pow" => {
                    if !arity(2, errors) {
                        return dummy;
                    }
                    let base = resolve_in(&args[0], scope, errors);
                    match integer_literal(&args[1]) {
                        Some(n) if n.abs() <= MAX_POW => Node::Powi(Box::new(base), n as i32),
                        Some(n) => {
                            errors.push(ExprError::new(
                                args[1].pos(),
                                format!("pow exponent {n} is out of range: |n| <= {MAX_POW}"),
                            ));
                            dummy
                        }
                        None => {
                            errors.push(ExprError::new(
                                args[1].pos(),
                                "the exponent of pow must be an integer literal such as 3 or -2 (it is unrolled into multiplications)",
                            ));
                            dummy
                        }
                    }
                }
                _ => {
                    errors.push(ExprError::new(
                        *pos,
                        format!("unknown function `{name}`; known functions: {FUNCTION_NAMES}"),
                    ));
                    dummy
                }
            }
        }
    }
}

/// `3`, `-2`, `+4` (an integer written without a fraction or exponent).
fn integer_literal(s: &Syntax) -> Option<i64> {
    match s {
        Syntax::Num { text, .. } if text.bytes().all(|b| b.is_ascii_digit()) => text.parse().ok(),
        Syntax::Neg { arg, .. } => integer_literal(arg).map(|n| -n),
        _ => None,
    }
}

// ---- canonical form ---------------------------------------------------------------------------

impl Node {
    /// True when the node reads no input (a constant or an attr-only scalar).
    pub fn is_scalar(&self) -> bool {
        match self {
            Node::Input(_) => false,
            Node::Attr(_) | Node::Const(_) => true,
            Node::Neg(a) | Node::Call(_, a) | Node::Powi(a, _) => a.is_scalar(),
            Node::Bin(_, a, b) | Node::Min(a, b) | Node::Max(a, b) => a.is_scalar() && b.is_scalar(),
            Node::Patched(p) => p.base.is_scalar(),
            Node::Rescued(a, _) => a.is_scalar(),
        }
    }

    /// Which inputs the node reads.
    pub fn inputs_used(&self, used: &mut [bool]) {
        match self {
            Node::Input(i) => {
                if let Some(u) = used.get_mut(*i) {
                    *u = true;
                }
            }
            Node::Attr(_) | Node::Const(_) => {}
            Node::Neg(a) | Node::Call(_, a) | Node::Powi(a, _) => a.inputs_used(used),
            Node::Bin(_, a, b) | Node::Min(a, b) | Node::Max(a, b) => {
                a.inputs_used(used);
                b.inputs_used(used);
            }
            Node::Patched(p) => p.base.inputs_used(used),
            Node::Rescued(a, _) => a.inputs_used(used),
        }
    }

    /// Which attrs the node reads.
    pub fn attrs_used(&self, used: &mut [bool]) {
        match self {
            Node::Attr(i) => {
                if let Some(u) = used.get_mut(*i) {
                    *u = true;
                }
            }
            Node::Input(_) | Node::Const(_) => {}
            Node::Neg(a) | Node::Call(_, a) | Node::Powi(a, _) => a.attrs_used(used),
            Node::Bin(_, a, b) | Node::Min(a, b) | Node::Max(a, b) => {
                a.attrs_used(used);
                b.attrs_used(used);
            }
            Node::Patched(p) => p.base.attrs_used(used),
            Node::Rescued(a, _) => a.attrs_used(used),
        }
    }
}

pub(crate) fn is_const(n: &Node, v: f64) -> bool {
    matches!(n, Node::Const(c) if *c == v)
}

/// The canonical form: constant subtrees folded (in f64, by the evaluator's own rules), and
/// a few exact identities applied so that the form that loses no accuracy is the one
/// evaluated — by the kernel and by the f64 reference alike:
///
/// | written | becomes | why |
/// |---|---|---|
/// | `1 + erf(u)`, `erf(u) + 1` | `erfc(-u)` | 1 + erf(u) cancels for u ≪ 0 (GeLU's negative tail) |
/// | `1 - erf(u)` | `erfc(u)` | the same for u ≫ 0 |
/// | `1 + tanh(u)`, `tanh(u) + 1` | `2 * sigmoid(2 * u)` | 1 + tanh(u) cancels for u ≪ 0 |
/// | `1 - tanh(u)` | `2 * sigmoid(-2 * u)` | the same for u ≫ 0 |
/// | `-(-a)`, `-(a * c)`, `-(a / c)` | `a`, `a * (-c)`, `a / (-c)` | negation is exact |
/// | `log(1 + exp(u))`, `log1p(exp(u))` | `softplus(u)` | 1 + e^u rounds to 1 for u < -17 in float32 (mish's negative tail) and overflows for u > 88 |
/// | `log(1 + y)`, `log(y + 1)`, `log(1 - y)` | `log1p(y)`, `log1p(-y)` | 1 + y drops y's low bits for small y |
/// | `exp(u) - 1`, `exp(u) + (-1)`, `1 - exp(u)` | `expm1(u)`, `-expm1(u)` | e^u - 1 cancels for small u |
/// | `log(sigmoid(u))` | `-softplus(-u)` | sigmoid(u) underflows to 0 for u < -103 (log-sigmoid) |
pub fn canonical(node: Node) -> Node {
    let n = fold(node);
    let n = rewrite(n);
    fold(n)
}

fn fold(node: Node) -> Node {
    let folded = match node {
        Node::Input(_) | Node::Attr(_) | Node::Const(_) | Node::Patched(_) | Node::Rescued(..) => {
            return node
        }
        Node::Neg(a) => Node::Neg(Box::new(fold(*a))),
        Node::Bin(op, a, b) => Node::Bin(op, Box::new(fold(*a)), Box::new(fold(*b))),
        Node::Min(a, b) => Node::Min(Box::new(fold(*a)), Box::new(fold(*b))),
        Node::Max(a, b) => Node::Max(Box::new(fold(*a)), Box::new(fold(*b))),
        Node::Call(f, a) => Node::Call(f, Box::new(fold(*a))),
        Node::Powi(a, n) => Node::Powi(Box::new(fold(*a)), n),
    };
    if folded_children_const(&folded) {
        Node::Const(super::eval::eval(&folded, &[], &[]))
    } else {
        folded
    }
}

fn folded_children_const(n: &Node) -> bool {
    let c = |x: &Node| matches!(x, Node::Const(_));
    match n {
        // rne's value depends on the op's rounding attr, known only per call: never folded.
        Node::Call(Func::Rne | Func::RoundTo(_), _) => false,
        Node::Neg(a) | Node::Call(_, a) | Node::Powi(a, _) => c(a),
        Node::Bin(_, a, b) | Node::Min(a, b) | Node::Max(a, b) => c(a) && c(b),
        _ => false,
    }
}

pub(crate) fn neg(a: Node) -> Node {
    match a {
        Node::Const(c) => Node::Const(-c),
        Node::Neg(inner) => *inner,
        Node::Bin(BinOp::Mul, x, y) if matches!(*y, Node::Const(_)) => {
            let Node::Const(c) = *y else { unreachable!("matched above") };
            Node::Bin(BinOp::Mul, x, Box::new(Node::Const(-c)))
        }
        Node::Bin(BinOp::Mul, x, y) if matches!(*x, Node::Const(_)) => {
            let Node::Const(c) = *x else { unreachable!("matched above") };
            Node::Bin(BinOp::Mul, Box::new(Node::Const(-c)), y)
        }
        Node::Bin(BinOp::Div, x, y) if matches!(*y, Node::Const(_)) => {
            let Node::Const(c) = *y else { unreachable!("matched above") };
            Node::Bin(BinOp::Div, x, Box::new(Node::Const(-c)))
        }
        other => Node::Neg(Box::new(other)),
    }
}

fn call(f: Func, a: Node) -> Node {
    Node::Call(f, Box::new(a))
}

/// `f(a)` with `a` already rewritten: the log forms that lose accuracy become the stable
/// functions (see [`canonical`]).
fn stable_call(f: Func, a: Node) -> Node {
    match (f, a) {
        (Func::Log, Node::Bin(BinOp::Add, p, q)) => {
            let y = if is_const(&p, 1.0) {
                *q
            } else if is_const(&q, 1.0) {
                *p
            } else {
                return call(Func::Log, Node::Bin(BinOp::Add, p, q));
            };
            stable_call(Func::Log1p, y)
        }
        (Func::Log, Node::Bin(BinOp::Sub, p, q)) if is_const(&p, 1.0) => stable_call(Func::Log1p, neg(*q)),
        (Func::Log, Node::Call(Func::Sigmoid, u)) => neg(call(Func::Softplus, neg(*u))),
        (Func::Log1p, Node::Call(Func::Exp, u)) => call(Func::Softplus, *u),
        (f, a) => call(f, a),
    }
}

/// `exp(u) - 1` and its spellings as `expm1(u)`; `1 - exp(u)` as `-expm1(u)`.
fn expm1_form(op: BinOp, a: &Node, b: &Node) -> Option<Node> {
    let exp_arg = |n: &Node| match n {
        Node::Call(Func::Exp, u) => Some((**u).clone()),
        _ => None,
    };
    match op {
        BinOp::Sub if is_const(b, 1.0) => exp_arg(a).map(|u| call(Func::Expm1, u)),
        BinOp::Sub if is_const(a, 1.0) => exp_arg(b).map(|u| neg(call(Func::Expm1, u))),
        BinOp::Add if is_const(b, -1.0) => exp_arg(a).map(|u| call(Func::Expm1, u)),
        BinOp::Add if is_const(a, -1.0) => exp_arg(b).map(|u| call(Func::Expm1, u)),
        _ => None,
    }
}

fn rewrite(node: Node) -> Node {
    let node = match node {
        Node::Input(_) | Node::Attr(_) | Node::Const(_) | Node::Patched(_) | Node::Rescued(..) => {
            return node
        }
        Node::Neg(a) => return neg(rewrite(*a)),
        Node::Bin(op, a, b) => Node::Bin(op, Box::new(rewrite(*a)), Box::new(rewrite(*b))),
        Node::Min(a, b) => Node::Min(Box::new(rewrite(*a)), Box::new(rewrite(*b))),
        Node::Max(a, b) => Node::Max(Box::new(rewrite(*a)), Box::new(rewrite(*b))),
        Node::Call(f, a) => return stable_call(f, rewrite(*a)),
        Node::Powi(a, n) => Node::Powi(Box::new(rewrite(*a)), n),
    };
    let Node::Bin(op, a, b) = node else { return node };
    if let Some(e) = expm1_form(op, &a, &b) {
        return e;
    }
    let one_plus = |one: &Node, f: &Node| -> Option<Node> {
        if !is_const(one, 1.0) {
            return None;
        }
        match f {
            Node::Call(Func::Erf, u) => Some(Node::Call(Func::Erfc, Box::new(neg((**u).clone())))),
            Node::Call(Func::Tanh, u) => Some(Node::Bin(
                BinOp::Mul,
                Box::new(Node::Const(2.0)),
                Box::new(Node::Call(
                    Func::Sigmoid,
                    Box::new(Node::Bin(BinOp::Mul, Box::new(Node::Const(2.0)), u.clone())),
                )),
            )),
            _ => None,
        }
    };
    let one_minus = |one: &Node, f: &Node| -> Option<Node> {
        if !is_const(one, 1.0) {
            return None;
        }
        match f {
            Node::Call(Func::Erf, u) => Some(Node::Call(Func::Erfc, u.clone())),
            Node::Call(Func::Tanh, u) => Some(Node::Bin(
                BinOp::Mul,
                Box::new(Node::Const(2.0)),
                Box::new(Node::Call(
                    Func::Sigmoid,
                    Box::new(Node::Bin(BinOp::Mul, Box::new(Node::Const(-2.0)), u.clone())),
                )),
            )),
            _ => None,
        }
    };
    let rewritten = match op {
        BinOp::Add => one_plus(&a, &b).or_else(|| one_plus(&b, &a)),
        BinOp::Sub => one_minus(&a, &b),
        _ => None,
    };
    rewritten.unwrap_or(Node::Bin(op, a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope<'a>(inputs: &'a [String], attrs: &'a [String]) -> Scope<'a> {
        Scope { inputs, attrs }
    }

    fn node(body: &str) -> Node {
        let inputs = vec!["x".to_string(), "y".to_string()];
        let attrs = vec!["alpha".to_string()];
        resolve(&parse(body).unwrap(), scope(&inputs, &attrs)).unwrap()
    }

    #[test]
    fn precedence_and_associativity() {
        use Node::*;
        let x = || Box::new(Input(0));
        let y = || Box::new(Input(1));
        assert_eq!(
            node("x - y - 1"),
            Bin(BinOp::Sub, Box::new(Bin(BinOp::Sub, x(), y())), Box::new(Const(1.0)))
        );
        assert_eq!(
            node("x + y * 2"),
            Bin(BinOp::Add, x(), Box::new(Bin(BinOp::Mul, y(), Box::new(Const(2.0)))))
        );
        assert_eq!(node("-x * y"), Bin(BinOp::Mul, Box::new(Neg(x())), y()));
        assert_eq!(
            node("x / y / 2"),
            Bin(BinOp::Div, Box::new(Bin(BinOp::Div, x(), y())), Box::new(Const(2.0)))
        );
        assert_eq!(node("pow(x, -2)"), Powi(x(), -2));
        assert_eq!(
            node("alpha * pi"),
            Bin(BinOp::Mul, Box::new(Attr(0)), Box::new(Const(std::f64::consts::PI)))
        );
    }

    #[test]
    fn numbers() {
        for (text, v) in
            [("1", 1.0), ("1.5", 1.5), (".25", 0.25), ("2.", 2.0), ("1e-3", 1e-3), ("1.5E+2", 150.0)]
        {
            assert_eq!(node(text), Node::Const(v), "{text}");
        }
        assert_eq!(parse("1e").unwrap_err().pos, 2);
        assert!(parse("2x").unwrap_err().message.contains("2 * x"));
    }

    #[test]
    fn parse_errors_point_at_the_problem() {
        let cases = [
            ("x +", 3, "expected a number"),
            ("(x + 1", 6, "expected `)`"),
            ("x y", 2, "operator is missing"),
            ("x + )", 4, "found `)`"),
            ("x)", 1, "unmatched `)`"),
            ("x ^ 2", 2, "pow(x, n)"),
            ("exp()", 4, "needs an argument"),
            ("max(x y)", 6, "expected `,` or `)`"),
            ("", 0, "empty"),
            ("   ", 0, "empty"),
        ];
        for (body, pos, text) in cases {
            let e = parse(body).unwrap_err();
            assert_eq!(e.pos, pos, "{body}: {e}");
            assert!(e.message.contains(text), "{body}: {e}");
        }
    }

    #[test]
    fn resolution_errors() {
        let inputs = vec!["x".to_string()];
        let attrs: Vec<String> = Vec::new();
        let err = |body: &str| resolve(&parse(body).unwrap(), scope(&inputs, &attrs)).unwrap_err();
        let e = err("x * gate");
        assert_eq!(e[0].pos, 4);
        assert!(e[0].message.contains("`gate` is not defined"), "{}", e[0].message);
        let e = err("gelu(x)");
        assert_eq!(e[0].pos, 0);
        assert!(e[0].message.contains("unknown function `gelu`"));
        let e = err("pow(x, 1.5) + pow(x, y)");
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].message.contains("integer literal"));
        assert_eq!(e[0].pos, 7);
        let e = err("max(x)");
        assert!(e[0].message.contains("takes 2 arguments, found 1"));
        let e = err("exp * x");
        assert!(e[0].message.contains("is a function"));
    }

    #[test]
    fn canonical_rewrites() {
        use Node::*;
        let c = |body: &str| canonical(node(body));
        // GeLU-erf: 1 + erf(x / sqrt 2) becomes erfc(x / -sqrt 2).
        let s2 = std::f64::consts::SQRT_2;
        assert_eq!(
            c("0.5 * x * (1 + erf(x / sqrt(2)))"),
            Bin(
                BinOp::Mul,
                Box::new(Bin(BinOp::Mul, Box::new(Const(0.5)), Box::new(Input(0)))),
                Box::new(Call(
                    Func::Erfc,
                    Box::new(Bin(BinOp::Div, Box::new(Input(0)), Box::new(Const(-s2))))
                ))
            )
        );
        assert_eq!(c("1 - erf(x)"), Call(Func::Erfc, Box::new(Input(0))));
        assert_eq!(c("erf(x) + (2 - 1)"), Call(Func::Erfc, Box::new(Neg(Box::new(Input(0))))));
        assert_eq!(
            c("1 + tanh(x)"),
            Bin(
                BinOp::Mul,
                Box::new(Const(2.0)),
                Box::new(Call(
                    Func::Sigmoid,
                    Box::new(Bin(BinOp::Mul, Box::new(Const(2.0)), Box::new(Input(0))))
                ))
            )
        );
        assert_eq!(c("-(-x)"), Input(0));
        assert_eq!(c("-(x * 3)"), Bin(BinOp::Mul, Box::new(Input(0)), Box::new(Const(-3.0))));
        assert_eq!(c("2 * sqrt(4) + x"), Bin(BinOp::Add, Box::new(Const(4.0)), Box::new(Input(0))));
        // Attrs are not folded.
        assert!(!c("x * (alpha + 1)").is_scalar());
        assert!(node("alpha * 2 + exp(pi)").is_scalar());
    }
}
