//! Everything that differs between op families, one module per family: the spec rules
//! (roles of inputs/outputs/attrs, dtypes it can compute), the tiling-data layout, the
//! templates and their extra context, the verification cases, the shape rule, and which
//! reference checks it. The shared machinery (spec parsing, codegen, the twin, verify)
//! reaches a family only through the [`FamilyOps`] trait and the one registry, `FAMILIES`
//! (read by [`ops`], [`family`] and [`families`]); adding a family means a module here (its
//! `impl FamilyOps`), its kernel and op_host templates, its reference, and its `pub mod` line
//! and `FAMILIES` entry (ARCHITECTURE.md "Adding a family").

mod case;
pub mod dequant;
pub mod eager;
pub mod elementwise;
pub mod inputs;
mod layout;
pub mod paged_cache;
pub mod permute;
pub mod reverse_scan;
pub mod rotary;
pub mod rotary_grad;
pub mod row_norm;
pub mod row_norm_grad;
pub mod shape_rule;
pub mod vocab_reduce;
pub mod vocab_reduce_grad;
pub mod whiten;

use crate::dtype::DType;
use crate::plan::TilingField;
use crate::spec::raw::{RawSpec, RawTensor};
use crate::spec::{
    AttrValue, BackwardRule, Family, FamilyParams, OpSpec, Reporter, SpecErrors, SpecTables, TensorArg,
};
use crate::tensor::HostTensor;
pub use case::{Case, Expected, Sweep};
pub use eager::{EagerCase, EagerSequence, EagerStep};
pub use shape_rule::{OutputShape, ShapeCheck, ShapeRule};
use std::path::Path;

/// The CANN built-in ops whose kernel designs the report models (src/perf/cann.rs, with the
/// public source of each). An op names the one it replaces through `FamilyOps::cann_builtin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CannBuiltin {
    /// aclnnRmsNorm / torch_npu.npu_rms_norm.
    RmsNorm,
    /// aclnnAddRmsNorm / torch_npu.npu_add_rms_norm.
    AddRmsNorm,
    /// torch_npu.npu_rotary_mul (rotate_half).
    RotaryMul,
    /// torch_npu.npu_swiglu.
    SwiGlu,
    /// aclnnRmsNormGrad (the backward of RmsNorm: dx and dgamma).
    RmsNormGrad,
    /// aclnnSwiGluGrad / torch_npu's npu_swiglu backward.
    SwiGluGrad,
    /// aclnnLayerNormBackward (LayerNormGradV3: dx, dgamma, dbeta).
    LayerNormGrad,
    /// torch_npu.npu_rotary_mul's backward (RotaryPositionEmbeddingGrad, rotate_half).
    RotaryMulGrad,
    /// npu_add_rms_norm's backward, which CANN has no kernel for: RmsNormGrad of the sum, then
    /// the Add autograd runs to accumulate the gradient arriving at the sum directly.
    AddRmsNormGrad,
    /// The gelu grads: aclnnGeluBackward / aclnnGeluBackwardV2 (GeluGrad, GeluGradV2) for
    /// torch's gelu backward, FastGeluGrad for npu_fast_gelu's.
    GeluGrad,
    /// ATB ReshapeAndCache.
    ReshapeAndCache,
    /// DynamicQuant for the int8 rows and the scales, then ReshapeAndCache for each.
    ReshapeAndCacheInt8,
    /// aclnnCrossEntropyLoss with reduction "none" (torch_npu.npu_cross_entropy_loss, what verl
    /// calls for token log-probs on NPU): loss and log_prob [N, V], no entropy.
    CrossEntropyLoss,
    /// aclnnCrossEntropyLossGrad: dlogits from the forward's log_prob [N, V] and dloss.
    CrossEntropyLossGrad,
}

impl CannBuiltin {
    /// The "mid time within this many times the HBM floor" target of the ops replacing this
    /// built-in, where one is set: issue 14's 1.2x for the forward norms, rotary and swiglu
    /// (streaming ops whose bytes bound them) and issue 28's 1.2x forward / 1.3x backward for
    /// the token log-prob + entropy; not the cache scatters, whose slot_mapping every core
    /// reads. The other grads get the "vs CANN" check only: the step report judges the
    /// backward pass against its floor as a whole.
    pub fn floor_target(self) -> Option<f64> {
        match self {
            CannBuiltin::RmsNorm
            | CannBuiltin::AddRmsNorm
            | CannBuiltin::RotaryMul
            | CannBuiltin::SwiGlu
            | CannBuiltin::CrossEntropyLoss => Some(1.2),
            CannBuiltin::CrossEntropyLossGrad => Some(1.3),
            CannBuiltin::RmsNormGrad
            | CannBuiltin::SwiGluGrad
            | CannBuiltin::LayerNormGrad
            | CannBuiltin::RotaryMulGrad
            | CannBuiltin::AddRmsNormGrad
            | CannBuiltin::GeluGrad
            | CannBuiltin::ReshapeAndCache
            | CannBuiltin::ReshapeAndCacheInt8 => None,
        }
    }
}

/// What a family provides. The hooks without a body are what every family must answer (the
/// compiler lists any a new family's `impl` leaves out: "not all trait items implemented"); the
/// hooks with a body are optional capabilities, whose default is the honest "absent" answer,
/// stated once here (each default says why), so a family writes only the capabilities it has.
/// Shared code reaches a family only through [`ops`].
pub(crate) trait FamilyOps: Sync {
    // What every family must answer.

    /// The family's structure rules (run after the generic rules passed).
    fn check(&self, r: &mut Reporter, raw: &RawSpec, spec: &OpSpec);
    /// The tiling-data layout (every field 4 bytes; host and kernel read the same list).
    fn tiling_fields(&self, spec: &OpSpec) -> &'static [TilingField];
    /// The kernel and op_host templates of `spec`.
    fn templates(&self, spec: &OpSpec) -> Templates;
    /// Extra template context, merged into the op's context (e.g. the lowered expression).
    fn template_extras(
        &self,
        spec: &OpSpec,
    ) -> Result<serde_json::Map<String, serde_json::Value>, FamilyError>;
    /// The shape rule the torch kernels (Meta included) apply: the op_host InferShape's.
    fn shape_rule(&self, spec: &OpSpec) -> Result<ShapeRule, FamilyError>;
    /// The shape of input `i` given the first input's shape (`plan`, `report`, sweeps).
    fn derived_shape(&self, spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize>;
    /// The verification cases of a sweep.
    fn cases(&self, spec: &OpSpec, sweep: Sweep) -> Vec<Case>;
    /// Expected outputs of a case, from `crate::reference` (written from the math).
    fn expected(
        &self,
        spec: &OpSpec,
        inputs: &[(String, HostTensor)],
        attrs: &[(String, AttrValue)],
    ) -> Result<Vec<Expected>, FamilyError>;
    /// What a case's plan exercises, read from the family's own tiling fields: the mode the
    /// TilingFunc chose, the UB passes of the busiest core (a lower bound where the kernel's
    /// loop may run more), whether the cores' shares are uneven (`crate::verify::coverage`).
    fn plan_coverage(&self, spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>) -> PlanCoverage;
    /// Every mode the TilingFunc can choose for `spec` in dtype combination `column` (the names
    /// `plan_coverage` gives): the quick sweep must reach each of them.
    fn plan_modes(&self, spec: &OpSpec, column: usize) -> Vec<&'static str>;
    /// The report's model shapes (first input's shape, labelled), e.g. Qwen2-7B; empty keeps
    /// the op out of the report, which a family says in its own body.
    fn model_shapes(&self, spec: &OpSpec) -> Vec<(&'static str, Vec<usize>)>;
    /// What eager PyTorch runs for the same work (the report's baseline).
    fn eager_sequence(&self, case: &EagerCase) -> Result<EagerSequence, FamilyError>;

    // Optional capabilities: the default is the answer of a family without the capability.

    /// The family's parameters from its spec table. Default: none (inputs, outputs and attrs
    /// say all).
    fn params(&self, _raw: &RawSpec) -> FamilyParams {
        FamilyParams::None
    }
    /// How the family's ops get their backward op. Default: a spec may name one; without it
    /// none is generated.
    fn backward_rule(&self) -> BackwardRule {
        BackwardRule::Optional
    }
    /// The family tables its specs may carry. Default: none (inputs, outputs and attrs say all).
    fn spec_tables(&self) -> SpecTables {
        SpecTables::NONE
    }
    /// How the torch extension places the op's tensors on DTensors. Default: replicated (the
    /// op runs whole on every rank's full tensors).
    fn sharding(&self, _spec: &OpSpec) -> Sharding {
        Sharding::Replicate
    }

    /// The ops a validated spec brings into the catalogue with it (an elementwise op: its
    /// generated `<name>_grad`). Default: none, a spec is one op.
    fn derived_ops(&self, _spec: &OpSpec) -> Vec<OpSpec> {
        Vec::new()
    }
    /// The inputs and attrs of a case in dtype combination `column` when the family makes its
    /// own (slot mappings by pattern, pre-filled caches). Default `None`: every input is drawn
    /// from the case's distribution, which is what a family without value constraints wants.
    fn case_inputs(&self, _spec: &OpSpec, _column: usize, _case: &Case) -> Option<CaseData> {
        None
    }
    /// After a case ran: the gates of `expected` for the evaluation order the TilingFunc chose
    /// (`tiling`, the plan's fields), where the order changes the rounding (reverse_scan's time
    /// split). Default: the plan leaves the gates as `expected` made them.
    fn plan_gates(
        &self,
        _spec: &OpSpec,
        _inputs: &[(String, HostTensor)],
        _attrs: &[(String, AttrValue)],
        _tiling: &dyn Fn(&str) -> Option<f64>,
        _expected: &mut [Expected],
    ) -> Result<(), FamilyError> {
        Ok(())
    }
    /// Per element of `output`, a second value the semantics allow (NaN where there is none),
    /// or an empty vector (see [`alternates`]). Default: empty, the expected value is the only
    /// one accepted (alternates exist only where an op's definition rounds an intermediate).
    fn alternates(
        &self,
        _spec: &OpSpec,
        _inputs: &[(String, HostTensor)],
        _attrs: &[(String, AttrValue)],
        _output: &str,
    ) -> Result<Vec<f64>, FamilyError> {
        Ok(Vec::new())
    }
    /// For a failed output at element `flat`: where the computation loses its precision, when
    /// the family can tell. Default: it cannot.
    fn diagnose(
        &self,
        _spec: &OpSpec,
        _inputs: &[(String, HostTensor)],
        _attrs: &[(String, AttrValue)],
        _output: &str,
        _flat: usize,
    ) -> Option<String> {
        None
    }
    /// Attr settings the report also models at every model shape, each its own row labelled
    /// `<shape label>, <label>` (rotary_mul's rounding "hf", a different kernel path in
    /// float32). Default: empty, the spec's default attrs are the one modelled kernel path.
    fn report_variants(&self, _spec: &OpSpec) -> Vec<(&'static str, Vec<(String, AttrValue)>)> {
        Vec::new()
    }
    /// Whether a variant row (its attrs) takes a kernel path of its own at `dtype`; false drops
    /// the row there, where it would only model the default's path again (row_norm_grad's
    /// arithmetic "float32" at float32 inputs runs the float-float kernel). Default: true, every
    /// variant the family lists is its own path (a family without variants is never asked).
    fn report_variant_applies(&self, _spec: &OpSpec, _dtype: DType, _attrs: &[(String, AttrValue)]) -> bool {
        true
    }
    /// The CANN built-in op this op replaces on an NPU, whose public kernel design the report
    /// models as its second baseline ("vs CANN"). Default `None`: no built-in design is
    /// modelled, so the report shows no "vs CANN" figure rather than a made-up one.
    fn cann_builtin(&self, _spec: &OpSpec) -> Option<CannBuiltin> {
        None
    }
    /// Inputs the op's result does not depend on at these attrs, so a kernel never reads them
    /// (rotary_mul_grad's x without table gradients): the report's minimum bytes leave them out.
    /// Default: none, the result depends on every input (the floor counts all of them).
    fn inputs_not_read(&self, _spec: &OpSpec, _attrs: &[(String, AttrValue)]) -> Vec<&'static str> {
        Vec::new()
    }
    /// Whether a launch's modelled time depends on its shape only through the rows each core
    /// gets: rows independent, split over the cores in blocks of ceil(rows / cores), every row
    /// the same program at a given row length. Then the report may time a model shape too large
    /// for the twin from runs with a few rows per core at the real row length
    /// (src/report/scaled.rs, which checks the linearity it relies on). Default false: the
    /// report runs every shape whole.
    fn rows_scale(&self, _spec: &OpSpec) -> bool {
        false
    }
    /// Independent work units a kernel can spread over cores (rows), where the family has them.
    /// Default `None`: the family does not claim a count, so the report does not judge the
    /// core split by one.
    fn work_units(&self, _spec: &OpSpec, _shapes: &[(String, Vec<usize>)]) -> Option<u64> {
        None
    }
    /// The work units of the plan the TilingFunc chose, where it splits finer than
    /// `work_units` (vocab_reduce's V split: tiles of V, not rows). Default `None`:
    /// `work_units` counts them.
    fn plan_work_units(&self, _spec: &OpSpec, _tiling: &dyn Fn(&str) -> Option<f64>) -> Option<u64> {
        None
    }
    /// Words for `value` of one of the family's own tiling fields, where a number alone does
    /// not say what the TilingFunc chose (`mode` 2 → "split-D, two passes"); `opgen plan` prints
    /// them after the number. Default `None`: the number says it (a count, a size, a 0/1 flag).
    fn tiling_value_label(&self, _spec: &OpSpec, _field: &str, _value: u64) -> Option<&'static str> {
        None
    }
    /// The report's reading of what the generated TilingFunc chose, from its tiling fields.
    /// Default: no label, one pass, the report's generic transfer reason (a single-mode plan
    /// whose fields `opgen plan` already prints).
    fn read_plan(&self, _spec: &OpSpec, _tiling: &dyn Fn(&str) -> Option<f64>, _dtype: DType) -> PlanReading {
        PlanReading::default()
    }
    /// Whether the family's kernel templates take an in-place (ref) output, the `<name>_ref`
    /// argument CANN passes for an output named after an input (`mutated = true`). Default
    /// false: the validation refuses such a spec rather than generate a kernel entry that does
    /// not match its launch.
    fn in_place_outputs(&self, _spec: &OpSpec) -> bool {
        false
    }
    /// Whether the report holds the op to the fusion target at its model shapes (≥ 4x fewer
    /// GM bytes than eager in 1 launch against ≥ 6). Default false: the target is for ops that
    /// fuse an eager chain; a family opts in.
    fn fusion_target(&self, _spec: &OpSpec) -> bool {
        false
    }
    /// The report's realistic inputs, where values matter to the traffic (a paged cache's slot
    /// mapping): input index → tensor, plus how many slots are valid. Default `None`: uniform
    /// inputs, right wherever the values do not change which bytes move.
    fn report_inputs(
        &self,
        _spec: &OpSpec,
        _column: usize,
        _shapes: &[(String, Vec<usize>)],
    ) -> Option<ReportInputs> {
        None
    }
}

/// The kernel and op_host templates of an op (paths under `templates/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Templates {
    pub kernel: &'static str,
    pub host: &'static str,
    /// The op's shape and attr checks as standard C++ (`HostChecks(inputs..., attrs..., why)`),
    /// rendered into both the op_host (which calls them) and the torch extension's
    /// `opgen_torch.h` (whose Meta and device kernels call them): one source, so the NPU build's
    /// Meta kernels refuse what the host refuses, with its words. None: the family's checks live
    /// in its op_host only (the torch kernels apply its shape rule).
    pub checks: Option<&'static str>,
}

/// The report's reading of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlanReading {
    /// What the TilingFunc chose, in a few words (`4 rows/pass`).
    pub label: String,
    /// The design makes two passes over the input (row_norm split-D).
    pub two_pass: bool,
    /// Why the main stream's transfers are what they are, where the family can say
    /// (`: the UB plan fits 2 row(s) ...`); `None`: the report's generic reason.
    pub transfer_reason: Option<String>,
}

/// What one case's plan exercises (see [`FamilyOps::plan_coverage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanCoverage {
    /// The mode the TilingFunc chose, in the family's words (one of `plan_modes`).
    pub mode: &'static str,
    /// UB passes (iterations of the loop that takes a new buffer of each queue) on the busiest
    /// core; `None` where the plan cannot tell (the paged caches' copies depend on the slots).
    pub passes: Option<u64>,
    /// Whether some core gets a smaller share than another (a remainder core); `None` where the
    /// family does not split its work in shares (every core scans all of it).
    pub uneven: Option<bool>,
}

/// Inputs a family makes for the report (values that change the traffic).
#[derive(Debug, Clone)]
pub struct ReportInputs {
    /// (input index, tensor) for each input the family sets; the rest are uniform.
    pub tensors: Vec<(usize, HostTensor)>,
    /// Valid slots of a paged cache (the in-place rows actually written).
    pub valid_slots: Option<u64>,
}

/// How an op's tensors may be sharded under DTensor (rendered by `codegen::torch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharding {
    /// Any dim of the first input before its whole trailing dims: those of the shape rule's
    /// `trailing_dims` input (gamma: what a row norm reduces over) when `whole_from_rule`, else
    /// the last dim alone (rotary's head dim). `reduces`: an output shaped like a replicated
    /// input sums over the sharded dim (a gradient family's dgamma, dr1).
    Rows { whole_from_rule: bool, reduces: bool },
    /// Any dim, every tensor alike.
    Elementwise,
    /// Every tensor replicated.
    Replicate,
}

/// The DTensor sharding of `spec`'s family (see [`Sharding`]).
pub fn sharding(spec: &OpSpec) -> Sharding {
    ops(spec.family).sharding(spec)
}

/// Every family: the name its specs give (`family = "..."`) and its hooks. The one registry a
/// new family joins (with its `pub mod` line above); the spec layer knows no family by name.
const FAMILIES: &[(&str, &dyn FamilyOps)] = &[
    ("row_norm", &row_norm::RowNorm),
    ("rotary", &rotary::Rotary),
    ("elementwise", &elementwise::Elementwise),
    ("permute", &permute::Permute),
    ("paged_cache", &paged_cache::PagedCache),
    ("dequant", &dequant::Dequant),
    ("row_norm_grad", &row_norm_grad::RowNormGrad),
    ("rotary_grad", &rotary_grad::RotaryGrad),
    ("vocab_reduce", &vocab_reduce::VocabReduce),
    ("reverse_scan", &reverse_scan::ReverseScan),
    ("whiten", &whiten::Whiten),
];

/// Every registered family, in the registry's order.
pub fn families() -> Vec<Family> {
    FAMILIES.iter().map(|(name, _)| Family::named(name)).collect()
}

/// The family registered as `name`, if one is.
pub fn family(name: &str) -> Option<Family> {
    FAMILIES.iter().find(|(n, _)| *n == name).map(|(n, _)| Family::named(n))
}

/// The hooks of `family`. A `Family` comes from the registry (a validated spec's or
/// [`families`]), so an unregistered one is a bug of the caller.
pub(crate) fn ops(family: Family) -> &'static dyn FamilyOps {
    FAMILIES
        .iter()
        .find(|(name, _)| *name == family.name())
        .map(|(_, ops)| *ops)
        .unwrap_or_else(|| panic!("family `{}` is not registered in src/family/mod.rs", family.name()))
}

/// A family hook that could not answer: which op, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyError {
    pub message: String,
}

impl FamilyError {
    pub fn new(message: impl Into<String>) -> FamilyError {
        FamilyError { message: message.into() }
    }
}

impl std::fmt::Display for FamilyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FamilyError {}

impl From<String> for FamilyError {
    fn from(message: String) -> FamilyError {
        FamilyError { message }
    }
}

impl From<&str> for FamilyError {
    fn from(message: &str) -> FamilyError {
        FamilyError { message: message.to_string() }
    }
}

impl From<crate::reference::ReferenceError> for FamilyError {
    fn from(e: crate::reference::ReferenceError) -> FamilyError {
        FamilyError { message: e.to_string() }
    }
}

/// The families' spec rules, for `crate::spec`'s validation.
struct Registry;

impl crate::spec::FamilyRules for Registry {
    fn family(&self, name: &str) -> Option<Family> {
        family(name)
    }

    fn families(&self) -> Vec<Family> {
        families()
    }

    fn params(&self, family: Family, raw: &RawSpec) -> FamilyParams {
        ops(family).params(raw)
    }

    fn check(&self, r: &mut Reporter, raw: &RawSpec, spec: &OpSpec) {
        if !spec.refs.is_empty() && !ops(spec.family).in_place_outputs(spec) {
            r.error(
                &raw.outputs,
                "outputs",
                format!(
                    "output `{}` is marked mutated (an in-place output), but family {}'s kernels take no in-place output",
                    spec.refs.join("`, `"),
                    spec.family.name()
                ),
            );
        }
        ops(spec.family).check(r, raw, spec)
    }

    fn derived_ops(&self, spec: &OpSpec) -> Vec<OpSpec> {
        ops(spec.family).derived_ops(spec)
    }

    fn backward_rule(&self, family: Family) -> BackwardRule {
        ops(family).backward_rule()
    }

    fn spec_tables(&self, family: Family) -> SpecTables {
        ops(family).spec_tables()
    }
}

/// Parses and validates one spec file (spec rules and the family's).
pub fn load_file(path: &Path) -> Result<OpSpec, SpecErrors> {
    crate::spec::load_file(path, &Registry, &crate::spec::ProjectNames::default())
}

/// Parses and validates spec text; `path` is used for messages and the file-stem rule.
pub fn parse_str(path: &Path, text: &str) -> Result<OpSpec, SpecErrors> {
    crate::spec::parse_str(path, text, &Registry, &crate::spec::ProjectNames::default())
}

/// Loads a catalogue: a directory of `*.toml` specs (sorted by file name) or one spec file.
pub fn load_catalogue(path: &Path) -> Result<Vec<OpSpec>, SpecErrors> {
    crate::spec::load_catalogue(path, &Registry)
}

/// The catalogue directory of the repository.
pub fn catalogue_dir() -> std::path::PathBuf {
    crate::repo_root().join("kernels")
}

/// Why [`load_selection`] found no specs to work on.
#[derive(Debug)]
pub enum SelectionError {
    /// A spec of the catalogue is invalid (file, field and rule).
    Spec(SpecErrors),
    /// An op asked for is not in the catalogue (the known names).
    UnknownOp(crate::spec::UnknownOp),
}

impl std::fmt::Display for SelectionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SelectionError::Spec(e) => write!(f, "{e}"),
            SelectionError::UnknownOp(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SelectionError {}

/// The specs a command works on: the catalogue at `specs` (default [`catalogue_dir`]), only
/// `ops` where given.
pub fn load_selection(specs: Option<&Path>, ops: &[String]) -> Result<Vec<OpSpec>, SelectionError> {
    let dir = specs.map(Path::to_path_buf).unwrap_or_else(catalogue_dir);
    let all = load_catalogue(&dir).map_err(SelectionError::Spec)?;
    let chosen = crate::spec::select(&all, ops).map_err(SelectionError::UnknownOp)?;
    Ok(chosen.into_iter().cloned().collect())
}

// Shared entry points: each asks the op's family.

pub fn tiling_fields(spec: &OpSpec) -> &'static [TilingField] {
    ops(spec.family).tiling_fields(spec)
}

/// Words for a tiling field's value (see [`FamilyOps::tiling_value_label`]).
pub fn tiling_value_label(spec: &OpSpec, field: &str, value: u64) -> Option<&'static str> {
    ops(spec.family).tiling_value_label(spec, field, value)
}

/// The CANN built-in `spec`'s op replaces, by its family's rule.
pub fn cann_builtin(spec: &OpSpec) -> Option<CannBuiltin> {
    ops(spec.family).cann_builtin(spec)
}

/// What a case's plan exercises, by the op's family (see [`FamilyOps::plan_coverage`]).
pub fn plan_coverage(spec: &OpSpec, tiling: &dyn Fn(&str) -> Option<f64>) -> PlanCoverage {
    ops(spec.family).plan_coverage(spec, tiling)
}

/// The modes the TilingFunc of `spec` can choose in dtype combination `column`.
pub fn plan_modes(spec: &OpSpec, column: usize) -> Vec<&'static str> {
    ops(spec.family).plan_modes(spec, column)
}

/// Passes of `per_pass` items over `items` (0 items: no pass).
pub(crate) fn passes(items: f64, per_pass: f64) -> u64 {
    if items <= 0.0 || per_pass <= 0.0 {
        return 0;
    }
    (items / per_pass).ceil() as u64
}

/// The largest share of `n` items over `parts` (the first `n % parts` take one more).
pub(crate) fn largest_share(n: f64, parts: f64) -> f64 {
    if parts <= 0.0 {
        return n;
    }
    (n / parts).ceil()
}

/// Whether `n` items over `parts` leave some part a smaller share.
pub(crate) fn uneven(n: f64, parts: f64) -> bool {
    parts > 0.0 && n % parts != 0.0
}

pub fn templates(spec: &OpSpec) -> Templates {
    ops(spec.family).templates(spec)
}

pub fn template_extras(spec: &OpSpec) -> Result<serde_json::Map<String, serde_json::Value>, FamilyError> {
    ops(spec.family).template_extras(spec)
}

pub fn shape_rule(spec: &OpSpec) -> Result<ShapeRule, FamilyError> {
    let rule = ops(spec.family).shape_rule(spec)?;
    if rule.outputs.len() != spec.outputs.len() {
        return Err(FamilyError::new(format!(
            "the {} shape rule gives {} output shapes, op `{}` has {} outputs",
            spec.family.name(),
            rule.outputs.len(),
            spec.name,
            spec.outputs.len()
        )));
    }
    Ok(rule)
}

pub fn cases(spec: &OpSpec, sweep: Sweep) -> Vec<Case> {
    ops(spec.family).cases(spec, sweep)
}

/// The shape of input `i` given the first input's shape, by the family's shape rule.
pub fn derived_shape(spec: &OpSpec, i: usize, first: &[usize]) -> Vec<usize> {
    ops(spec.family).derived_shape(spec, i, first)
}

/// Expected outputs of a case. The reference is picked by the op's name (catalogue ops) or,
/// for user-declared elementwise ops, by evaluating the declared expression in f64.
pub fn expected(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Expected>, FamilyError> {
    ops(spec.family).expected(spec, inputs, attrs)
}

/// The gates of a case's expected outputs for the plan that ran (see [`FamilyOps::plan_gates`]).
pub fn plan_gates(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
    tiling: &dyn Fn(&str) -> Option<f64>,
    expected: &mut [Expected],
) -> Result<(), FamilyError> {
    ops(spec.family).plan_gates(spec, inputs, attrs, tiling, expected)
}

/// Per output element, a second value the semantics allow (NaN where there is none), or an
/// empty vector. Where an op rounds an intermediate (add_rms_norm's RNE(s·rstd) to 16 bits)
/// and the exact intermediate lies within float32 error of a rounding boundary, a correct
/// float32 kernel may land on either side; both roundings are then accepted, and nothing else.
pub fn alternates(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
    output: &str,
) -> Result<Vec<f64>, FamilyError> {
    ops(spec.family).alternates(spec, inputs, attrs, output)
}

/// For a failed output at element `flat`: where the computation loses its precision, when the
/// family can tell (elementwise: the subexpression, from f64 vs float32 emulation).
pub fn diagnose(
    spec: &OpSpec,
    inputs: &[(String, HostTensor)],
    attrs: &[(String, AttrValue)],
    output: &str,
    flat: usize,
) -> Option<String> {
    ops(spec.family).diagnose(spec, inputs, attrs, output, flat)
}

/// A case's inputs and attrs, by name.
pub type CaseData = (Vec<(String, HostTensor)>, Vec<(String, AttrValue)>);

/// The inputs and attrs of a case in dtype combination `column` when the family makes its own;
/// `None`: every input is drawn from the case's distribution (`verify::case_inputs`).
pub fn case_inputs(spec: &OpSpec, column: usize, case: &Case) -> Option<CaseData> {
    ops(spec.family).case_inputs(spec, column, case)
}

/// The dtypes the float families compute (in float32 for the 16-bit ones).
pub(crate) const FLOATS: [DType; 3] = [DType::Float16, DType::BFloat16, DType::Float32];

/// The dtype rule of families whose inputs all share the first input's float dtype (row_norm,
/// rotary): per combination, the first input must be one of [`FLOATS`] and every other input
/// must have its dtype (`mixed` says why, in the family's terms). Returns the combinations whose
/// first input is valid, with that dtype, for the family's output rules.
pub(crate) fn check_inputs_share_a_float(
    r: &mut Reporter,
    raw: &RawSpec,
    spec: &OpSpec,
    family: &str,
    mixed: &str,
) -> Vec<(usize, DType)> {
    let mut valid = Vec::new();
    for (c, x) in spec.inputs[0].dtypes.iter().enumerate() {
        if !FLOATS.contains(x) {
            r.error(
                &raw.inputs.get_ref()[0].dtypes.get_ref()[c],
                &format!("inputs[0].dtypes[{c}]"),
                format!("family {family} cannot compute {x}; it supports float16, bfloat16, float32"),
            );
            continue;
        }
        for (i, t) in spec.inputs.iter().enumerate().skip(1) {
            if t.dtypes[c] != *x {
                r.error(
                    &raw.inputs.get_ref()[i].dtypes.get_ref()[c],
                    &format!("inputs[{i}].dtypes[{c}]"),
                    format!("`{}` must have x's dtype {x} in combination {} ({mixed})", t.name, c + 1),
                );
            }
        }
        valid.push((c, *x));
    }
    valid
}

/// Every dtype of `tensors` (the spec's `field`, "inputs" or "outputs", and `raw` the same list
/// as written) from index `from` on is float32: an error at each other one,
/// "{label}: `<name>` is float32 (found <dtype><note>)".
pub(crate) fn check_float32(
    r: &mut Reporter,
    raw: &[RawTensor],
    tensors: &[TensorArg],
    field: &str,
    from: usize,
    label: &str,
    note: &str,
) {
    for (i, t) in tensors.iter().enumerate().skip(from) {
        for (c, x) in t.dtypes.iter().enumerate() {
            if *x != DType::Float32 {
                r.error(
                    &raw[i].dtypes.get_ref()[c],
                    &format!("{field}[{i}].dtypes[{c}]"),
                    format!("{label}: `{}` is float32 (found {x}{note})", t.name),
                );
            }
        }
    }
}

/// The values string attr `name` of `spec` may take in dtype combination `column`, as the
/// families validate them: `rounding` ([`row_norm::ROUNDINGS`], the elementwise ops' too),
/// `arithmetic` ([`row_norm_grad::ARITHMETICS`]), `mode` ([`rotary::MODES`]) and `out_dtype`
/// (dequant_int8: the combination's output dtype, the only value its host accepts). None for an
/// attr without a list (the property tests fail on it, so a new string attr gets one).
pub fn string_attr_choices(spec: &OpSpec, name: &str, column: usize) -> Option<Vec<String>> {
    let list = |l: &[&str]| Some(l.iter().map(|v| v.to_string()).collect());
    match name {
        "rounding" => list(&row_norm::ROUNDINGS),
        "arithmetic" => list(&row_norm_grad::ARITHMETICS),
        "mode" => list(&rotary::MODES),
        "out_dtype" => Some(vec![spec.outputs.first()?.dtypes[column].name().to_string()]),
        _ => None,
    }
}

/// Attrs at their spec defaults.
pub fn default_attrs(spec: &OpSpec) -> Vec<(String, AttrValue)> {
    spec.attrs.iter().filter_map(|a| a.default.clone().map(|d| (a.name.clone(), d))).collect()
}

/// A numeric attr of a case.
pub(crate) fn attr_f64(attrs: &[(String, AttrValue)], name: &str) -> Result<f64, FamilyError> {
    attrs
        .iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, v)| v.as_f64())
        .ok_or_else(|| FamilyError::new(format!("attr `{name}` missing")))
}

/// An int attr of a case.
pub(crate) fn attr_i64(attrs: &[(String, AttrValue)], name: &str) -> Result<i64, FamilyError> {
    match attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v) {
        Some(AttrValue::Int(v)) => Ok(*v),
        other => Err(FamilyError::new(format!("attr `{name}` is {other:?}, not an int"))),
    }
}

/// A bool attr of a case.
pub(crate) fn attr_bool(attrs: &[(String, AttrValue)], name: &str) -> Result<bool, FamilyError> {
    match attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v) {
        Some(AttrValue::Bool(b)) => Ok(*b),
        Some(other) => Err(FamilyError::new(format!("attr `{name}` is {other:?}, not a bool"))),
        None => Err(FamilyError::new(format!("attr `{name}` missing"))),
    }
}
