//! The spec file as written, with source spans. `deny_unknown_fields` everywhere: a misspelt
//! key is an error, never silently ignored.

use super::error::SpecError;
use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::path::Path;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSpec {
    pub name: Spanned<String>,
    pub family: Spanned<String>,
    pub summary: Spanned<String>,
    #[serde(default)]
    pub op_type: Option<Spanned<String>>,
    pub targets: Spanned<Vec<Spanned<String>>>,
    pub inputs: Spanned<Vec<RawTensor>>,
    pub outputs: Spanned<Vec<RawTensor>>,
    #[serde(default)]
    pub attrs: Vec<RawAttr>,
    /// `false`: the op has no backward (a cache write, quantisation).
    #[serde(default)]
    pub differentiable: Option<Spanned<bool>>,
    /// The op that computes this op's gradient: `backward = "op"` (a layout op's inverse) or a
    /// `[backward]` table with the input mapping.
    #[serde(default)]
    pub backward: Option<Spanned<RawBackward>>,
    #[serde(default)]
    pub row_norm: Option<Spanned<RawRowNorm>>,
    #[serde(default)]
    pub elementwise: Option<Spanned<RawElementwise>>,
    #[serde(default)]
    pub permute: Option<Spanned<RawKvKind>>,
    #[serde(default)]
    pub paged_cache: Option<Spanned<RawKvKind>>,
}

impl RawSpec {
    /// Every family table the file may carry (its `[name]`), with where it starts if present.
    pub fn family_tables(&self) -> [(&'static str, Option<usize>); 4] {
        [
            ("row_norm", self.row_norm.as_ref().map(|t| t.span().start)),
            ("elementwise", self.elementwise.as_ref().map(|t| t.span().start)),
            ("permute", self.permute.as_ref().map(|t| t.span().start)),
            ("paged_cache", self.paged_cache.as_ref().map(|t| t.span().start)),
        ]
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTensor {
    pub name: Spanned<String>,
    pub dtypes: Spanned<Vec<Spanned<String>>>,
    /// An input the kernel updates in place (a cache); on an output, the in-place (ref) form of
    /// the input of the same name (CANN's convention: the OpDef declares the input and an output
    /// of one name).
    #[serde(default)]
    pub mutated: Option<Spanned<bool>>,
}

impl RawTensor {
    /// `mutated = true` (absent is false).
    pub fn is_mutated(&self) -> bool {
        self.mutated.as_ref().is_some_and(|m| *m.get_ref())
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAttr {
    pub name: Spanned<String>,
    #[serde(rename = "type")]
    pub kind: Spanned<String>,
    #[serde(default)]
    pub default: Option<Spanned<toml::Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRowNorm {
    #[serde(default)]
    pub fused_residual_add: bool,
    /// `"rms"` (the default) or `"layer"`; checked by the family (src/family/row_norm.rs).
    #[serde(default)]
    pub norm: Option<Spanned<String>>,
    /// y uses (gamma + gamma_offset): Gemma's `1 + gamma` is 1. Default 0.
    #[serde(default)]
    pub gamma_offset: Option<Spanned<f64>>,
}

impl RawRowNorm {
    /// The norm the table names; an unknown spelling reads as RMSNorm here, and the family's
    /// check reports it (the spec is then refused).
    pub(crate) fn norm_kind(&self) -> super::NormKind {
        self.norm.as_ref().and_then(|n| super::NormKind::parse(n.get_ref())).unwrap_or(super::NormKind::Rms)
    }

    pub(crate) fn gamma_offset_value(&self) -> f64 {
        self.gamma_offset.as_ref().map_or(0.0, |o| *o.get_ref())
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawElementwise {
    /// The expression over inputs, attrs and constants.
    pub body: Spanned<String>,
    /// The dtype the expression is evaluated in.
    pub compute: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[permute]` / `[paged_cache]`: which operation of the family.
pub(crate) struct RawKvKind {
    pub kind: Spanned<String>,
}

/// `backward = "op"` or a `[backward]` table. Hand-written: an untagged enum would buffer the
/// value and lose the spans of the table's fields.
#[derive(Debug)]
pub(crate) enum RawBackward {
    Name(String),
    Table(RawBackwardTable),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBackwardTable {
    /// The backward op.
    pub op: Spanned<String>,
    /// Its tensor inputs in order: `grad.<output>`, or a forward input or output (saved).
    pub inputs: Spanned<Vec<Spanned<String>>>,
    /// Forward input → the backward op's output giving its gradient.
    pub grads: Spanned<BTreeMap<Spanned<String>, Spanned<String>>>,
    /// A bool attr of the backward op → forward inputs; the attr is true when any needs grad.
    #[serde(default)]
    pub request: Option<Spanned<RawRequests>>,
}

/// `request = { attr = ["input", ...] }`, with the spans of every name.
pub(crate) type RawRequests = BTreeMap<Spanned<String>, Spanned<Vec<Spanned<String>>>>;

impl<'de> Deserialize<'de> for RawBackward {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = RawBackward;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "an op name (`backward = \"op\"`) or a [backward] table (op, inputs, grads, request)",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawBackward, E> {
                Ok(RawBackward::Name(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawBackward, A::Error> {
                RawBackwardTable::deserialize(MapAccessDeserializer::new(map)).map(RawBackward::Table)
            }
        }
        d.deserialize_any(Either)
    }
}

/// The raw spec, or every error found before validation: each unknown field (serde stops at the
/// first, so each one found is dropped from the document and the rest deserialized again, until
/// none is left) and then the first type or missing-field error, if any. When only unknown
/// fields were found the spec without them comes back too, so validation can report the rule
/// errors of the same file in the same run.
pub(crate) fn parse(path: &Path, text: &str) -> (Option<RawSpec>, Vec<SpecError>) {
    let located = |e: &toml::de::Error| {
        let offset = e.span().map_or(0, |s| s.start);
        let field = field_path_at(text, offset);
        SpecError::at(path, text, offset, &field, e.message().trim().to_string())
    };
    // A syntax error leaves no document to look further into.
    let mut doc = match toml::de::DeTable::parse(text) {
        Ok(doc) => doc,
        Err(e) => return (None, vec![located(&e)]),
    };
    let mut errors: Vec<SpecError> = Vec::new();
    loop {
        match RawSpec::deserialize(toml::de::Deserializer::from(doc.clone())) {
            Ok(raw) => {
                // serde visits keys in its own order; the user reads the file top down.
                errors.sort_by_key(|e| (e.line, e.column));
                return (Some(raw), errors);
            }
            Err(e) => {
                let unknown = e.message().starts_with("unknown field");
                errors.push(located(&e));
                // Only an unknown key can be taken out and the rest tried again; the bound
                // (one pass per key of the file at most) holds even if a span finds no key.
                let removed =
                    unknown && e.span().is_some_and(|span| remove_key_at(doc.get_mut(), span.start));
                if !removed || errors.len() > text.len() {
                    errors.sort_by_key(|e| (e.line, e.column));
                    return (None, errors);
                }
            }
        }
    }
}

/// Removes the key starting at byte `offset` from the table or the tables nested in it.
fn remove_key_at(table: &mut toml::de::DeTable<'_>, offset: usize) -> bool {
    use toml::de::DeValue;
    if let Some(key) = table.keys().find(|k| k.span().start == offset).cloned() {
        return table.remove(&key).is_some();
    }
    table.iter_mut().any(|(_, v)| match v.get_mut() {
        DeValue::Table(t) => remove_key_at(t, offset),
        DeValue::Array(items) => items.iter_mut().any(|item| match item.get_mut() {
            DeValue::Table(t) => remove_key_at(t, offset),
            _ => false,
        }),
        _ => false,
    })
}

/// The dotted field path (`inputs[1].dtypes`) of the key whose line holds `offset`, found
/// from the text: the nearest table header above it, and the `key =` on that line. Serde's
/// errors carry a span but not the path, and a user wants both.
pub(crate) fn field_path_at(text: &str, offset: usize) -> String {
    let offset = offset.min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim())
        .filter(|k| !k.is_empty() && !k.starts_with('['))
        .map(|k| k.trim_matches('"').to_string());

    let mut table = String::new();
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for header in text[..line_start].lines().map(str::trim) {
        if let Some(name) = header.strip_prefix("[[").and_then(|h| h.split("]]").next()) {
            let name = name.trim().to_string();
            let n = counts.entry(name.clone()).or_insert(0);
            table = format!("{name}[{n}]");
            *n += 1;
        } else if let Some(name) = header.strip_prefix('[').and_then(|h| h.split(']').next()) {
            table = name.trim().to_string();
        }
    }
    // A header line itself names its table.
    let trimmed = line.trim();
    if let Some(name) = trimmed.strip_prefix("[[").and_then(|h| h.split("]]").next()) {
        let n = counts.get(name.trim()).copied().unwrap_or(0);
        return format!("{}[{n}]", name.trim());
    }
    match (table.is_empty(), key) {
        (_, None) => table,
        (true, Some(k)) => k,
        (false, Some(k)) => format!("{table}.{k}"),
    }
}

#[cfg(test)]
mod tests {
    use super::field_path_at;

    #[test]
    fn field_paths() {
        let text = "name = \"a\"\n[[inputs]]\nname = \"x\"\n[[inputs]]\ndtypes = [1]\n[row_norm]\nfoo = 1\n";
        assert_eq!(field_path_at(text, 2), "name");
        assert_eq!(field_path_at(text, text.find("dtypes").unwrap() + 10), "inputs[1].dtypes");
        assert_eq!(field_path_at(text, text.find("foo").unwrap()), "row_norm.foo");
    }
}
