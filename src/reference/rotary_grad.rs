//! The backward of rotary_mul, from the chain rule on the forward's definition (op-semantics.md
//! §2.1): y[k] = x[k]·r1[k] + s(k)·x[π(k)]·r2[k] over each row of D, with π the partner of k
//! (half: k ± D/2, interleave: k ^ 1) and s(k) the sign rotate gives it (half: −1 on the first
//! half, interleave: −1 on the even lanes); r1/r2 broadcast to x's shape.
//!
//! So ∂y[k]/∂x[k] = r1[k], ∂y[k]/∂x[π(k)] = s(k)·r2[k], ∂y[k]/∂r1[k] = x[k] and
//! ∂y[k]/∂r2[k] = s(k)·x[π(k)]. The reference scatters dy[k] times each partial into the
//! gradient of the operand it came from (the transposed Jacobian, term by term; no algebra on the
//! rotation), and sums the table gradients over every x element that reads the table element
//! (the broadcast dims). All in f64 from the rounded inputs, unrounded: two products per dx
//! element and sums of at most B·N products per table element, far inside f64's precision.

use super::rotary::RotaryMode;
use super::ReferenceError;
use crate::tensor::{c_strides, format_shape, HostTensor};

/// dx (x's shape), dr1 and dr2 (r1's / r2's shapes), unrounded.
#[derive(Debug, Clone, PartialEq)]
pub struct RotaryGrad {
    pub dx: Vec<f64>,
    pub dr1: Vec<f64>,
    pub dr2: Vec<f64>,
}

/// The partner of lane k in the rotation and the sign rotate puts on it.
fn partner(mode: RotaryMode, d: usize, k: usize) -> (usize, f64) {
    let h = d / 2;
    match mode {
        RotaryMode::Half if k < h => (k + h, -1.0),
        RotaryMode::Half => (k - h, 1.0),
        RotaryMode::Interleave if k % 2 == 0 => (k + 1, -1.0),
        RotaryMode::Interleave => (k - 1, 1.0),
    }
}

/// For each x element (flat index), the flat index of the table element it reads.
fn table_index(name: &str, r: &HostTensor, x_shape: &[usize]) -> Result<Vec<usize>, ReferenceError> {
    let fits = r.rank() == x_shape.len() && r.shape.iter().zip(x_shape).all(|(&a, &b)| a == b || a == 1);
    if !fits {
        return Err(ReferenceError::new(
            "rotary_mul_grad",
            format!(
                "{name} shape {} does not broadcast to x shape {} (each dim must equal x's or be 1)",
                format_shape(&r.shape),
                format_shape(x_shape)
            ),
        ));
    }
    let xs = c_strides(x_shape);
    let rs = c_strides(&r.shape);
    let n: usize = x_shape.iter().product();
    Ok((0..n)
        .map(|flat| {
            (0..x_shape.len())
                .map(|a| {
                    let i = flat / xs[a] % x_shape[a];
                    if r.shape[a] == 1 {
                        0
                    } else {
                        i * rs[a]
                    }
                })
                .sum()
        })
        .collect())
}

/// dx, dr1, dr2 of rotary_mul at (x, r1, r2) for the incoming gradient dy. `table_grads`
/// false: dr1 = dr2 = 0 (the op's documented output when the tables' gradients are not asked
/// for).
pub fn rotary_mul_grad(
    dy: &HostTensor,
    x: &HostTensor,
    r1: &HostTensor,
    r2: &HostTensor,
    mode: RotaryMode,
    table_grads: bool,
) -> Result<RotaryGrad, ReferenceError> {
    if x.rank() != 4 || dy.shape != x.shape {
        return Err(ReferenceError::new(
            "rotary_mul_grad",
            format!(
                "x must be 4-D and dy x's shape, got x {} and dy {}",
                format_shape(&x.shape),
                format_shape(&dy.shape)
            ),
        ));
    }
    let d = x.shape[3];
    if d % 2 != 0 {
        return Err(ReferenceError::new(
            "rotary_mul_grad",
            format!("the last dim of x must be even, got {d}"),
        ));
    }
    let t1 = table_index("r1", r1, &x.shape)?;
    let t2 = table_index("r2", r2, &x.shape)?;
    let (g, xv, c, s) = (dy.to_f64(), x.to_f64(), r1.to_f64(), r2.to_f64());
    let mut dx = vec![0.0; xv.len()];
    let mut dr1 = vec![0.0; c.len()];
    let mut dr2 = vec![0.0; s.len()];
    for k in 0..xv.len() {
        let lane = k % d;
        let (p, sign) = partner(mode, d, lane);
        let pk = k - lane + p;
        // y[k] = x[k]·r1[k] + sign·x[pk]·r2[k].
        dx[k] += g[k] * c[t1[k]];
        dx[pk] += g[k] * sign * s[t2[k]];
        if table_grads {
            dr1[t1[k]] += g[k] * xv[k];
            dr2[t2[k]] += g[k] * sign * xv[pk];
        }
    }
    Ok(RotaryGrad { dx, dr1, dr2 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    /// D = 4, one row: the partials by hand. half: y0 = x0 c0 − x2 s0, y1 = x1 c1 − x3 s1,
    /// y2 = x2 c2 + x0 s2, y3 = x3 c3 + x1 s3.
    #[test]
    fn one_row_by_hand() {
        let t = |v: &[f64]| HostTensor::from_f64(DType::Float32, &[1, 1, 1, 4], v);
        let (x, c, s) = (t(&[1.0, 2.0, 3.0, 4.0]), t(&[0.5, 0.25, 2.0, 4.0]), t(&[1.0, 3.0, 5.0, 7.0]));
        let dy = t(&[1.0, 10.0, 100.0, 1000.0]);
        let r = rotary_mul_grad(&dy, &x, &c, &s, RotaryMode::Half, true).unwrap();
        // dx0 = dy0 c0 + dy2 s2, dx2 = dy2 c2 − dy0 s0, ...
        assert_eq!(r.dx, vec![0.5 + 500.0, 2.5 + 7000.0, 200.0 - 1.0, 4000.0 - 30.0]);
        assert_eq!(r.dr1, vec![1.0, 20.0, 300.0, 4000.0]);
        assert_eq!(r.dr2, vec![-3.0, -40.0, 100.0, 2000.0]);
        let r = rotary_mul_grad(&dy, &x, &c, &s, RotaryMode::Interleave, false).unwrap();
        // interleave: y0 = x0 c0 − x1 s0, y1 = x1 c1 + x0 s1, y2 = x2 c2 − x3 s2, y3 = x3 c3 + x2 s3.
        assert_eq!(r.dx, vec![0.5 + 30.0, 2.5 - 1.0, 200.0 + 7000.0, 4000.0 - 500.0]);
        assert_eq!(r.dr1, vec![0.0; 4]);
        assert_eq!(r.dr2, vec![0.0; 4]);
    }
}
