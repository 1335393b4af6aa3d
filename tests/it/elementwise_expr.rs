//! The f64 evaluator of elementwise bodies (the reference of user-declared ops) against values
//! worked out by hand (or quoted from tables: e^-1, Φ(1), tanh(0.5), erfc(6)), including
//! precedence, constants, attrs, pow, NaN handling and the exact rewrites that keep tails
//! accurate (1 + erf(u) → erfc(−u), 1 + tanh(u) → 2σ(2u)).

use ascend_opgen::family::elementwise::{analyse_body, eval, expr};

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The body over inputs (x, y) and attrs (alpha, beta) at one point.
fn at(body: &str, x: f64, y: f64, alpha: f64, beta: f64) -> f64 {
    let b = analyse_body(body, &names(&["x", "y"]), &names(&["alpha", "beta"]))
        .unwrap_or_else(|e| panic!("{body}: {e}"));
    eval::eval(&b.node, &[x, y], &[alpha, beta])
}

fn x(body: &str, value: f64) -> f64 {
    at(body, value, 0.0, 0.0, 0.0)
}

fn close(actual: f64, expected: f64, rel: f64) {
    let err = ((actual - expected) / expected).abs();
    assert!(err <= rel, "actual {actual:e}, expected {expected:e}, rel err {err:e}");
}

#[test]
fn arithmetic_and_precedence() {
    assert_eq!(x("2 + 3 * x - 4 / 2", 1.0), 3.0);
    assert_eq!(x("(2 + 3) * x", 2.0), 10.0);
    assert_eq!(x("x - 1 - 1", 5.0), 3.0); // left associative
    assert_eq!(x("8 / x / 2", 2.0), 2.0);
    assert_eq!(x("-x * -x", 3.0), 9.0);
    assert_eq!(x("+x - -x", 1.5), 3.0);
    assert_eq!(at("x * y + x / y", 6.0, 3.0, 0.0, 0.0), 20.0);
    assert_eq!(x("1.5e2 * x + .5", 2.0), 300.5);
}

#[test]
fn functions() {
    assert_eq!(x("abs(x - 3)", 1.0), 2.0);
    assert_eq!(x("sqrt(x) * rsqrt(x)", 4.0), 1.0); // 2 * 0.5
    assert_eq!(x("exp(x)", 0.0), 1.0);
    assert_eq!(x("log(x)", 1.0), 0.0);
    close(x("log(exp(x))", 0.3), 0.3, 1e-15);
    assert_eq!(at("max(x, y) / min(x, y)", 2.0, 8.0, 0.0, 0.0), 4.0);
    // e^-1 = 0.36787944117144233: sigmoid(1) = 1 / (1 + e^-1) = 0.7310585786300049.
    close(x("sigmoid(x)", 1.0), 0.731_058_578_630_004_9, 1e-15);
    close(x("x * sigmoid(x)", -1.0), -0.268_941_421_369_995_1, 1e-15);
    // tanh(0.5) = (e - 1) / (e + 1) = 0.46211715726000974.
    close(x("tanh(x)", 0.5), 0.462_117_157_260_009_74, 1e-15);
    // Φ(1) = 0.8413447460685429 (normal table): gelu_erf(1) = Φ(1).
    close(x("0.5 * x * (1 + erf(x / sqrt(2)))", 1.0), 0.841_344_746_068_542_9, 1e-15);
    close(x("erf(x)", 1.0), 0.842_700_792_949_714_9, 1e-15);
    close(x("erfc(x)", 1.0), 0.157_299_207_050_285_13, 1e-14);
}

#[test]
fn pow_with_integer_exponents() {
    assert_eq!(x("pow(x, 3) - 2 * x + 1", 2.0), 5.0);
    assert_eq!(x("pow(x, 3) - 2 * x + 1", -1.5), 0.625);
    assert_eq!(x("pow(x, -2)", 4.0), 0.0625);
    assert_eq!(x("pow(x, 0)", 7.0), 1.0);
    assert_eq!(x("pow(x, 0)", f64::NAN), 1.0);
    assert_eq!(x("pow(x + 1, 2)", 2.0), 9.0);
}

#[test]
fn constants_and_attrs() {
    assert_eq!(x("x * e", 1.0), std::f64::consts::E);
    assert_eq!(x("x * pi / 2", 2.0), std::f64::consts::PI);
    assert_eq!(at("alpha * x + beta", 3.0, 0.0, 2.0, -1.0), 5.0);
    assert_eq!(at("x / (alpha * alpha)", 8.0, 0.0, 2.0, 0.0), 2.0);
    // An input named like a constant shadows it.
    let b = analyse_body("pi * 2", &names(&["pi"]), &[]).unwrap();
    assert_eq!(eval::eval(&b.node, &[0.25], &[]), 0.5);
}

#[test]
fn nan_and_inf_follow_ieee() {
    assert!(x("x * sigmoid(x)", f64::NAN).is_nan());
    assert!(x("x * sigmoid(x)", f64::NEG_INFINITY).is_nan()); // -inf * 0
    assert_eq!(x("x * sigmoid(x)", f64::INFINITY), f64::INFINITY);
    assert!(at("max(x, y)", f64::NAN, 1.0, 0.0, 0.0).is_nan());
    assert!(at("min(x, y)", 1.0, f64::NAN, 0.0, 0.0).is_nan());
    assert_eq!(x("1 / x", 0.0), f64::INFINITY);
    assert!(x("sqrt(x)", -1.0).is_nan());
}

#[test]
fn tails_stay_accurate_through_the_rewrites() {
    // 1 + erf(-6) is erfc(6) = 2.1519736712498913e-17: computed as 1 + erf it would be 0.
    close(x("1 + erf(x)", -6.0), 2.151_973_671_249_891_3e-17, 1e-13);
    close(x("1 - erf(x)", 6.0), 2.151_973_671_249_891_3e-17, 1e-13);
    // 1 + tanh(-20) = 2 e^-40 / (1 + e^-40) = 8.496708510583178e-18 (e^-40 = 4.248354255291589e-18).
    close(x("1 + tanh(x)", -20.0), 8.496_708_510_583_178e-18, 1e-13);
    // gelu_erf(-10) = -10 * Φ(-10) = -7.619853024160527e-23.
    close(x("0.5 * x * (1 + erf(x / sqrt(2)))", -10.0), -7.619_853_024_160_527e-23, 1e-12);
}

/// Different but exact-in-math orders of evaluation differ by ~|d ln f / dx|·ε: up to ~1e-14
/// in the deep tails (x = -10).
#[test]
fn the_evaluator_agrees_with_the_hand_written_activations() {
    use ascend_opgen::reference::activation;
    for i in -200..=200 {
        let v = f64::from(i) * 0.05;
        if v != 0.0 {
            close(x("x * sigmoid(x)", v), activation::silu(v), 1e-12);
            let gt = x("x * sigmoid(2 * sqrt(2 / pi) * (x + 0.044715 * pow(x, 3)))", v);
            close(gt, activation::gelu_tanh(v), 1e-12);
            close(x("0.5 * x * (1 + erf(x / sqrt(2)))", v), activation::gelu_erf(v), 1e-12);
            close(x("x * sigmoid(1.702 * x)", v), activation::fast_gelu(v), 1e-12);
        }
    }
}

/// Regression (fuzz/expr_parser): `x + x + ... + x` with 1500 terms parsed into a 1500-level
/// left-deep tree, and the recursive stages after parsing (the comment text first) overflowed
/// the stack. A tree taller than the nesting limit (200 levels) is now refused at the operator
/// that makes it too tall, however it is built: chained operators, calls, negations.
#[test]
fn trees_past_the_nesting_limit_are_refused_not_a_stack_overflow() {
    let inputs = names(&["x"]);
    let chain = |n: usize, op: &str| vec!["x"; n].join(op);
    for n in [1500, 100_000] {
        let err = analyse_body(&chain(n, " + "), &inputs, &[]).unwrap_err().to_string();
        assert!(err.contains("nests too deeply"), "{n} terms: {err}");
    }
    // 199 operators: a tree of 200 levels, the limit, still parses and lowers.
    assert!(analyse_body(&chain(200, " + "), &inputs, &[]).is_ok());
    // 200 operators: refused at the 200th `+` ("x + " is 4 bytes a term).
    let e = expr::parse(&chain(201, " + ")).unwrap_err();
    assert_eq!(e.pos, 4 * 199 + 2, "{e}");
    assert!(e.message.contains("at most 200 levels"), "{e}");
    // A call, a negation and a product around a chain of 198 levels: 201 levels.
    let e = expr::parse(&format!("-exp({}) * x", chain(198, " * "))).unwrap_err();
    assert!(e.message.contains("nests too deeply"), "{e}");
    assert!(expr::parse(&format!("exp({}) * x", chain(198, " * "))).is_ok());
}
