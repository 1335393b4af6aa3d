//! What the three KV-layout families (`permute`, `paged_cache`, `dequant`) share: the role
//! tables their spec rules check tensors against, the kind of a spec, the model dims their
//! sweeps draw from, and the input and expectation helpers of their verification
//! (research/op-semantics.md §4). Each family is its own module, kernel template and op_host
//! template; this module holds no family's behaviour.

use super::FamilyError;
use super::{Expected, Sweep};
use crate::compare::Tolerance;
use crate::dtype::DType;
use crate::family::inputs::{generate, Distribution, Rng};
use crate::spec::raw::{RawKvKind, RawSpec};
use crate::spec::{KvKind, OpSpec, Reporter};
use crate::tensor::HostTensor;
use toml::Spanned;

pub(crate) const FLOATS: &[DType] = &[DType::Float16, DType::BFloat16, DType::Float32];
pub(crate) const SLOTS: &[DType] = &[DType::Int32, DType::Int64];
pub(crate) const INT8: &[DType] = &[DType::Int8];
pub(crate) const INT32: &[DType] = &[DType::Int32];
pub(crate) const FLOAT32: &[DType] = &[DType::Float32];

/// What a tensor of a kind is: its role name (for messages), the dtypes it may have, whether it
/// must have another input's dtype, and whether the kernel writes it in place.
pub(crate) struct Role {
    pub(crate) name: &'static str,
    pub(crate) dtypes: &'static [DType],
    /// Index of the input whose dtype this tensor shares in every combination.
    pub(crate) same_as: Option<usize>,
    pub(crate) mutated: bool,
}

pub(crate) const fn role(name: &'static str, dtypes: &'static [DType]) -> Role {
    Role { name, dtypes, same_as: None, mutated: false }
}

pub(crate) const fn cache(name: &'static str, dtypes: &'static [DType], same_as: Option<usize>) -> Role {
    Role { name, dtypes, same_as, mutated: true }
}

fn names(roles: &[Role]) -> String {
    format!("({})", roles.iter().map(|r| r.name).collect::<Vec<_>>().join(", "))
}

/// The kind a family table names, if it is one of `kinds`.
pub(crate) fn kind_of_table(table: Option<&Spanned<RawKvKind>>, kinds: &[KvKind]) -> Option<KvKind> {
    table.and_then(|t| kinds.iter().copied().find(|k| k.name() == t.get_ref().kind.get_ref()))
}

/// The kind of a validated layout spec.
pub(crate) fn kind(spec: &OpSpec) -> KvKind {
    spec.kv_kind().expect("a validated layout spec has a known kind")
}

/// The template context the layout templates branch on: `kind` (the operation's name).
pub(crate) fn kind_context(spec: &OpSpec) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("kind".into(), serde_json::Value::String(kind(spec).name().to_string()));
    m
}

/// The kind of a spec of `family`, or the error that its table is missing or names an unknown
/// kind (`kinds`: the family's).
pub(crate) fn check_kind(
    r: &mut Reporter,
    raw: &RawSpec,
    spec: &OpSpec,
    family: &str,
    table: Option<&Spanned<RawKvKind>>,
    kinds: &[KvKind],
) -> Option<KvKind> {
    if let Some(kind) = spec.kv_kind() {
        return Some(kind);
    }
    let known: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    match table {
        Some(table) => {
            let k = &table.get_ref().kind;
            r.error(
                k,
                &format!("{family}.kind"),
                format!("unknown {family} kind `{}`; known kinds: {}", k.get_ref(), known.join(", ")),
            );
        }
        None => r.error(&raw.family, family, format!("family {family} needs a [{family}] table with `kind`")),
    }
    None
}

/// The spec's inputs and outputs against the kind's roles: counts, in-place flags, dtypes and
/// dtypes shared with another input. `label` names the family and kind in messages.
pub(crate) fn check_roles(
    r: &mut Reporter,
    raw: &RawSpec,
    spec: &OpSpec,
    label: &str,
    (ins, outs): (&[Role], &[Role]),
) {
    if spec.inputs.len() != ins.len() {
        r.error(
            &raw.inputs,
            "inputs",
            format!("{label} takes {} inputs {}, found {}", ins.len(), names(ins), spec.inputs.len()),
        );
        return;
    }
    if spec.outputs.len() != outs.len() {
        r.error(
            &raw.outputs,
            "outputs",
            format!("{label} has {} output(s) {}, found {}", outs.len(), names(outs), spec.outputs.len()),
        );
        return;
    }
    for (i, (t, role)) in spec.inputs.iter().zip(ins).enumerate() {
        let raw_t = &raw.inputs.get_ref()[i];
        if t.mutated && !role.mutated {
            let span = raw_t.mutated.as_ref().expect("mutated was written");
            r.error(
                span,
                &format!("inputs[{i}].mutated"),
                format!("`{}` ({}) is only read by the kernel; drop `mutated`", t.name, role.name),
            );
        } else if !t.mutated && role.mutated {
            r.error(
                &raw_t.name,
                &format!("inputs[{i}].mutated"),
                format!("`{}` ({}) is updated in place: declare it with `mutated = true`", t.name, role.name),
            );
        }
    }
    let tensors: Vec<(&str, usize, &Role)> = ins
        .iter()
        .enumerate()
        .map(|(i, role)| ("inputs", i, role))
        .chain(outs.iter().enumerate().map(|(i, role)| ("outputs", i, role)))
        .collect();
    for c in 0..spec.columns() {
        for (field, i, role) in &tensors {
            let (t, raw_t) = if *field == "inputs" {
                (&spec.inputs[*i], &raw.inputs.get_ref()[*i])
            } else {
                (&spec.outputs[*i], &raw.outputs.get_ref()[*i])
            };
            let d = t.dtypes[c];
            let span = &raw_t.dtypes.get_ref()[c];
            let path = format!("{field}[{i}].dtypes[{c}]");
            if !role.dtypes.contains(&d) {
                r.error(
                    span,
                    &path,
                    format!(
                        "{label}: `{}` ({}) cannot be {d}; it takes {}",
                        t.name,
                        role.name,
                        crate::dtype::names(role.dtypes)
                    ),
                );
            } else if let Some(other) = role.same_as {
                let want = spec.inputs[other].dtypes[c];
                if d != want {
                    r.error(
                        span,
                        &path,
                        format!(
                            "{label}: `{}` must have `{}`'s dtype {want} in combination {} (the copy moves raw bytes)",
                            t.name,
                            spec.inputs[other].name,
                            c + 1
                        ),
                    );
                }
            }
        }
    }
}

/// Kinds with no attrs.
pub(crate) fn check_no_attrs(r: &mut Reporter, raw: &RawSpec, label: &str) {
    if let Some(a) = raw.attrs.first() {
        r.error(&a.name, "attrs", format!("{label} takes no attrs"));
    }
}

// ---- verification ------------------------------------------------------------------------

pub(crate) const KV_HEADS: [usize; 3] = [2, 4, 8];
pub(crate) const Q_HEADS: [usize; 4] = [14, 28, 32, 64];
pub(crate) const HEAD_DIMS: [usize; 6] = [64, 72, 80, 96, 128, 256];
pub(crate) const TOKENS: [usize; 5] = [1, 3, 17, 128, 4096];
/// Full-sweep tensors stay at or below this many elements (the twin runs under ASan).
pub(crate) const MAX_FULL_ELEMENTS: usize = 1 << 23;

pub(crate) fn other_dists(sweep: Sweep, nan_inf: bool) -> Vec<Distribution> {
    let mut d = vec![Distribution::NormalLargeMean, Distribution::Tiny, Distribution::Zeros];
    if sweep == Sweep::Full {
        d.push(Distribution::Outlier);
    }
    if nan_inf {
        d.push(Distribution::NanInf);
    }
    d
}

/// A tensor of `dtype`: floats drawn from `dist` (one rounding), integers uniform over their
/// whole range (random bits), so a copy of int8 data is checked on every bit pattern.
pub(crate) fn data(dist: Distribution, dtype: DType, shape: &[usize], seed: u64) -> HostTensor {
    if dtype.is_float() {
        return generate(dist, dtype, shape, seed);
    }
    let mut rng = Rng::new(seed);
    let n: usize = shape.iter().product();
    let bits: Vec<u64> =
        (0..n).map(|_| if dist == Distribution::Zeros { 0 } else { rng.next_u64() }).collect();
    HostTensor::from_bits(dtype, shape, &bits)
}

pub(crate) fn input<'a>(
    inputs: &'a [(String, HostTensor)],
    spec: &OpSpec,
    i: usize,
) -> Result<&'a HostTensor, FamilyError> {
    let name = &spec.inputs[i].name;
    inputs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t)
        .ok_or_else(|| FamilyError::new(format!("op `{}`: input `{name}` missing", spec.name)))
}

pub(crate) fn exact(name: &str, t: &HostTensor, tolerance: Tolerance) -> Expected {
    Expected { name: name.to_string(), dtype: t.dtype, shape: t.shape.clone(), values: t.to_f64(), tolerance }
}
