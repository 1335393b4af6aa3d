//! Dtype combinations ("columns", msOpGen style): which one a call means, and the dtype a
//! combination is known by in tables and on the command line.
//!
//! Most ops are told apart by their first input's dtype. Ops whose inputs are the same in every
//! combination (dequant_int8: int8 and float32 in, float16/bfloat16/float32 out) are told apart
//! by their output dtype, which a string attr whose name ends in `dtype` (`out_dtype`) names,
//! as the op's InferDataType reads it. Every command (`run`, `plan`, `verify`, `report`) picks
//! a combination through the functions here, so they agree.

use super::{Attr, AttrKind, AttrValue, OpSpec};
use crate::dtype::DType;

/// Why a call's dtypes pick no single dtype combination of an op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnError {
    /// The output-dtype attr is not a string.
    AttrNotAName { attr: String },
    /// The output-dtype attr names no dtype.
    AttrNotADtype { attr: String, text: String },
    /// No combination has the stated dtypes (`stated`: `x float16`, ...).
    NoneFits { op: String, stated: Vec<String>, registered: String },
    /// Several combinations have them.
    SeveralFit { op: String, stated: Vec<String>, fitting: usize, registered: String },
}

impl std::fmt::Display for ColumnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ColumnError::AttrNotAName { attr } => write!(f, "attr `{attr}` must be a dtype name"),
            ColumnError::AttrNotADtype { attr, text } => write!(f, "attr `{attr}` = `{text}` is not a dtype"),
            ColumnError::NoneFits { op, stated, registered } => write!(
                f,
                "op `{op}` has no dtype combination with {}; registered: {registered}",
                stated.join(", ")
            ),
            ColumnError::SeveralFit { op, stated, fitting, registered } => write!(
                f,
                "op `{op}`: {} fit {fitting} dtype combinations; say which with --dtype ({registered})",
                if stated.is_empty() { "no dtypes given".to_string() } else { stated.join(", ") },
            ),
        }
    }
}

impl std::error::Error for ColumnError {}

impl OpSpec {
    /// The string attr that names the output dtype (dequant_int8's `out_dtype`), if any.
    pub fn output_dtype_attr(&self) -> Option<&Attr> {
        self.attrs.iter().find(|a| a.kind == AttrKind::String && a.name.ends_with("dtype"))
    }

    /// The dtype combination `column` is known by (in tables, `--dtype` and `--dtypes`): that of
    /// the first tensor (inputs, then outputs) whose dtype differs between combinations, else
    /// the first input's.
    pub fn column_dtype(&self, column: usize) -> DType {
        self.inputs
            .iter()
            .chain(&self.outputs)
            .find(|t| t.dtypes.iter().any(|d| *d != t.dtypes[0]))
            .unwrap_or(&self.inputs[0])
            .dtypes[column]
    }

    /// The other tensors whose dtypes tell combination `column` apart from another combination
    /// with the same [`column_dtype`](Self::column_dtype) (reshape_and_cache's slot_mapping,
    /// int32 or int64, under each key dtype), as (name, dtype) in tensor order; empty for ops
    /// whose column dtype alone names the combination.
    pub fn column_variant(&self, column: usize) -> Vec<(&str, DType)> {
        let dtype = self.column_dtype(column);
        let twins: Vec<usize> =
            (0..self.columns()).filter(|c| *c != column && self.column_dtype(*c) == dtype).collect();
        self.inputs
            .iter()
            .chain(&self.outputs)
            .filter(|t| twins.iter().any(|c| t.dtypes[*c] != t.dtypes[column]))
            .map(|t| (t.name.as_str(), t.dtypes[column]))
            .collect()
    }

    /// How tables and progress lines name combination `column`: its column dtype, followed by
    /// the dtypes of [`column_variant`](Self::column_variant) (`float16/int64`).
    pub fn column_label(&self, column: usize) -> String {
        let mut label = self.column_dtype(column).name().to_string();
        for (_, d) in self.column_variant(column) {
            label.push('/');
            label.push_str(d.name());
        }
        label
    }

    /// `attrs` with the output-dtype attr (if the op has one) set to combination `column`'s
    /// output dtype.
    pub fn attrs_for_column(&self, column: usize, attrs: &[(String, AttrValue)]) -> Vec<(String, AttrValue)> {
        let mut out = attrs.to_vec();
        let (Some(attr), Some(output)) = (self.output_dtype_attr(), self.outputs.first()) else {
            return out;
        };
        let value = AttrValue::String(output.dtypes[column].name().to_string());
        match out.iter_mut().find(|(n, _)| n == &attr.name) {
            Some(slot) => slot.1 = value,
            None => out.push((attr.name.clone(), value)),
        }
        out
    }

    /// The one combination that fits everything the caller states: `dtype` (as
    /// [`column_dtype`](Self::column_dtype) names combinations), the dtypes of the given inputs,
    /// and the output-dtype attr if given. The error lists the registered combinations.
    pub fn select_column(
        &self,
        dtype: Option<DType>,
        inputs: &[(&str, DType)],
        attrs: &[(String, AttrValue)],
    ) -> Result<usize, ColumnError> {
        let mut stated: Vec<String> = Vec::new();
        if let Some(d) = dtype {
            stated.push(format!("dtype {d}"));
        }
        stated.extend(inputs.iter().map(|(n, d)| format!("{n} {d}")));
        let mut out_dtype = None;
        if let Some(attr) = self.output_dtype_attr() {
            if let Some((_, value)) = attrs.iter().find(|(n, _)| n == &attr.name) {
                let AttrValue::String(text) = value else {
                    return Err(ColumnError::AttrNotAName { attr: attr.name.clone() });
                };
                let d = DType::parse(text).ok_or_else(|| ColumnError::AttrNotADtype {
                    attr: attr.name.clone(),
                    text: text.clone(),
                })?;
                stated.push(format!("{} {d}", attr.name));
                out_dtype = Some(d);
            }
        }
        let fits = |c: &usize| {
            dtype.is_none_or(|d| self.column_dtype(*c) == d)
                && inputs.iter().all(|(n, d)| self.input_dtype(n, *c).is_none_or(|want| want == *d))
                && out_dtype.is_none_or(|d| self.outputs.first().is_some_and(|o| o.dtypes[*c] == d))
        };
        let found: Vec<usize> = (0..self.columns()).filter(fits).collect();
        match found.as_slice() {
            [c] => Ok(*c),
            [] => Err(ColumnError::NoneFits {
                op: self.name.clone(),
                stated,
                registered: self.describe_columns(),
            }),
            // Two identical columns cannot pass validation, so only an under-stated call gets here.
            _ => Err(ColumnError::SeveralFit {
                op: self.name.clone(),
                stated,
                fitting: found.len(),
                registered: self.describe_columns(),
            }),
        }
    }

    /// `float16 (x float16, gamma float16 -> y float16, ...); ...` for messages.
    pub fn describe_columns(&self) -> String {
        (0..self.columns())
            .map(|c| {
                let ins: Vec<String> =
                    self.inputs.iter().map(|t| format!("{} {}", t.name, t.dtypes[c])).collect();
                let outs: Vec<String> =
                    self.outputs.iter().map(|t| format!("{} {}", t.name, t.dtypes[c])).collect();
                format!("{} ({} -> {})", self.column_dtype(c), ins.join(", "), outs.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::AttrValue;
    use crate::DType;
    use std::path::Path;

    fn dequant() -> crate::spec::OpSpec {
        let path = crate::repo_root().join("kernels/dequant_int8.toml");
        crate::family::load_file(&path).unwrap()
    }

    #[test]
    fn the_output_dtype_attr_picks_dequants_combination() {
        let spec = dequant();
        let ins = [("q", DType::Int8), ("scale", DType::Float32)];
        let attr = |v: &str| vec![("out_dtype".to_string(), AttrValue::String(v.into()))];
        let bf16 = spec.select_column(None, &ins, &attr("bfloat16")).unwrap();
        assert_eq!(spec.outputs[0].dtypes[bf16], DType::BFloat16);
        let f32 = spec.select_column(Some(DType::Float32), &ins, &[]).unwrap();
        assert_eq!(spec.outputs[0].dtypes[f32], DType::Float32);
        // Without the attr or a dtype, three combinations fit.
        let err = spec.select_column(None, &ins, &[]).unwrap_err().to_string();
        assert!(err.contains("fit 3 dtype combinations"), "{err}");
        // A dtype and an attr that disagree.
        let err = spec.select_column(Some(DType::Float32), &ins, &attr("float16")).unwrap_err().to_string();
        assert!(
            err.contains("no dtype combination with dtype float32") && err.contains("out_dtype float16"),
            "{err}"
        );
        let with_attr = spec.attrs_for_column(bf16, &attr("float16"));
        assert_eq!(with_attr, attr("bfloat16"));
    }

    #[test]
    fn input_dtypes_pick_a_combination_and_a_mix_is_rejected() {
        let text = r#"
name = "mix"
family = "elementwise"
summary = "s"
targets = ["ascend910b"]
[elementwise]
body = "a + b"
compute = "float32"
[[inputs]]
name = "a"
dtypes = ["float16", "float32"]
[[inputs]]
name = "b"
dtypes = ["float16", "float32"]
[[outputs]]
name = "y"
dtypes = ["float16", "float32"]
"#;
        let spec = crate::family::parse_str(Path::new("mix.toml"), text).unwrap();
        assert_eq!(spec.select_column(None, &[("a", DType::Float32), ("b", DType::Float32)], &[]), Ok(1));
        let err = spec
            .select_column(None, &[("a", DType::Float32), ("b", DType::Float16)], &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("a float32, b float16")
                && err.contains("float16 (a float16, b float16 -> y float16)"),
            "{err}"
        );
    }
}
