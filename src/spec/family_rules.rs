//! Per-family structure rules: which inputs, outputs and attrs a family's kernel template
//! expects (roles by position), and which dtypes it can compute.

use super::error::{SpecError, SpecErrors};
use super::model::OpSpec;
use super::raw::RawSpec;
use crate::dtype::DType;
use std::path::Path;
use toml::Spanned;

pub(super) struct Reporter<'a, 'b> {
    pub path: &'b Path,
    pub text: &'b str,
    pub errors: &'a mut SpecErrors,
}

impl Reporter<'_, '_> {
    fn error<T>(&mut self, spanned: &Spanned<T>, field: &str, message: String) {
        let e = SpecError::at(self.path, self.text, spanned.span().start, field, message);
        self.errors.push(e);
    }
}

const FLOATS: [DType; 3] = [DType::Float16, DType::BFloat16, DType::Float32];

pub(super) fn row_norm(mut r: Reporter, raw: &RawSpec, spec: &OpSpec) {
    let fused = spec.row_norm().is_some_and(|p| p.fused_residual_add);
    let (want_inputs, want_outputs) =
        if fused { ("(x1, x2, gamma)", "(y, rstd, x_sum)") } else { ("(x, gamma)", "(y, rstd)") };
    let n_in = if fused { 3 } else { 2 };
    let n_out = if fused { 3 } else { 2 };
    if spec.inputs.len() != n_in {
        r.error(
            &raw.inputs,
            "inputs",
            format!(
                "family row_norm{} takes {n_in} inputs {want_inputs}, found {}",
                fused_note(fused),
                spec.inputs.len()
            ),
        );
        return;
    }
    if spec.outputs.len() != n_out {
        r.error(
            &raw.outputs,
            "outputs",
            format!(
                "family row_norm{} has {n_out} outputs {want_outputs}, found {}",
                fused_note(fused),
                spec.outputs.len()
            ),
        );
        return;
    }
    for (c, x) in spec.inputs[0].dtypes.iter().enumerate() {
        let span = &raw.inputs.get_ref()[0].dtypes.get_ref()[c];
        if !FLOATS.contains(x) {
            r.error(
                span,
                &format!("inputs[0].dtypes[{c}]"),
                format!("family row_norm cannot compute {x}; it supports float16, bfloat16, float32"),
            );
            continue;
        }
        for (i, t) in spec.inputs.iter().enumerate().skip(1) {
            if t.dtypes[c] != *x {
                let span = &raw.inputs.get_ref()[i].dtypes.get_ref()[c];
                r.error(span, &format!("inputs[{i}].dtypes[{c}]"), format!("`{}` must have x's dtype {x} in combination {} (mixed-dtype row_norm is not supported)", t.name, c + 1));
            }
        }
        for (o, t) in spec.outputs.iter().enumerate() {
            let want = if o == 1 { DType::Float32 } else { *x };
            if t.dtypes[c] != want {
                let span = &raw.outputs.get_ref()[o].dtypes.get_ref()[c];
                let role = if o == 1 {
                    "rstd is always float32".to_string()
                } else {
                    format!("`{}` has x's dtype", t.name)
                };
                r.error(
                    span,
                    &format!("outputs[{o}].dtypes[{c}]"),
                    format!("must be {want} in combination {}: {role}", c + 1),
                );
            }
        }
    }
    match spec.attrs.as_slice() {
        [eps] if eps.kind == super::AttrKind::Float => {
            if let Some(v) = eps.default.as_ref().and_then(|v| v.as_f64()) {
                if v < 0.0 {
                    r.error(
                        raw.attrs[0].default.as_ref().expect("default present"),
                        "attrs[0].default",
                        format!("epsilon default {v} must not be negative"),
                    );
                }
            }
        }
        _ => {
            let span = raw.attrs.first().map(|a| &a.name);
            let message = "family row_norm takes exactly one attr, the float epsilon".to_string();
            match span {
                Some(s) => r.error(s, "attrs", message),
                None => r.error(&raw.name, "attrs", message),
            }
        }
    }
}

fn fused_note(fused: bool) -> &'static str {
    if fused {
        " with fused_residual_add"
    } else {
        ""
    }
}
