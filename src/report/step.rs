//! `opgen report --step MODEL`: one layer's training step (issue 26). Every launch the patched
//! layer makes — the forward ops and the `_grad` ops autograd calls for them — at the model's
//! shapes and a token count, each run on the twin like any report row, then summed: modelled
//! time (low / mid / high) against the HBM floor, the eager sequence HF + autograd runs and the
//! CANN built-ins' designs. This is the figure a user judges the toolkit by: a forward win that
//! the backward gives back is no win.
//!
//! The layers are written from the models' published configurations (research/rl-workloads.md
//! §4; HF `config.json` of Qwen2-7B, Qwen3-8B and Qwen3-VL-8B's `vision_config`) and from what
//! `opgen_torch.transformers` replaces in them: the decoder's RMSNorms (input_layernorm; Qwen3's
//! q_norm and k_norm over each head), the post-attention residual add with its norm
//! (add_rms_norm), rotary on q and k, the gated MLP's activation; the vision block's two
//! LayerNorms and its GeLU (tanh). Matmuls and attention are not ours and not counted.

use super::Row;
use crate::dtype::DType;
use serde::Serialize;

/// The layer's targets (issue 26): the step's mid time within this factor of its floors' sum,
/// and at least this many times faster than the eager sequence.
pub const STEP_FLOOR_TARGET: f64 = 1.3;
pub const STEP_EAGER_TARGET: f64 = 2.0;

/// A model whose layer `--step` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StepModel {
    Qwen2_7b,
    Qwen3_8b,
    Qwen3Vl8b,
}

/// A decoder layer's sizes (from the model's config.json).
struct Decoder {
    hidden: usize,
    q_heads: usize,
    kv_heads: usize,
    head_dim: usize,
    intermediate: usize,
    /// Qwen3's RMSNorm over each head of q and k before rotary.
    qk_norm: bool,
}

/// A vision block's sizes (Qwen3-VL's `vision_config`: hidden_size, intermediate_size).
struct Vision {
    hidden: usize,
    intermediate: usize,
}

impl StepModel {
    pub const ALL: [StepModel; 3] = [StepModel::Qwen2_7b, StepModel::Qwen3_8b, StepModel::Qwen3Vl8b];

    pub fn parse(text: &str) -> Option<StepModel> {
        StepModel::ALL.into_iter().find(|m| m.cli_name() == text)
    }

    /// The name `--step` takes.
    pub fn cli_name(self) -> &'static str {
        match self {
            StepModel::Qwen2_7b => "qwen2-7b",
            StepModel::Qwen3_8b => "qwen3-8b",
            StepModel::Qwen3Vl8b => "qwen3-vl-8b",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            StepModel::Qwen2_7b => "Qwen2-7B",
            StepModel::Qwen3_8b => "Qwen3-8B",
            StepModel::Qwen3Vl8b => "Qwen3-VL-8B",
        }
    }

    fn decoder(self) -> Decoder {
        match self {
            // Qwen2-7B: hidden 3584, 28 attention heads, 4 KV heads, intermediate 18944.
            StepModel::Qwen2_7b => Decoder {
                hidden: 3584,
                q_heads: 28,
                kv_heads: 4,
                head_dim: 128,
                intermediate: 18944,
                qk_norm: false,
            },
            // Qwen3-8B and Qwen3-VL-8B's text model: hidden 4096, 32 / 8 heads of 128,
            // intermediate 12288, q_norm and k_norm.
            StepModel::Qwen3_8b | StepModel::Qwen3Vl8b => Decoder {
                hidden: 4096,
                q_heads: 32,
                kv_heads: 8,
                head_dim: 128,
                intermediate: 12288,
                qk_norm: true,
            },
        }
    }

    fn vision(self) -> Option<Vision> {
        match self {
            // Qwen3-VL's vision_config: hidden_size 1152, intermediate_size 4304, hidden_act
            // gelu_pytorch_tanh, LayerNorm norm1 / norm2.
            StepModel::Qwen3Vl8b => Some(Vision { hidden: 1152, intermediate: 4304 }),
            _ => None,
        }
    }

    /// Every launch of one layer's step (one text decoder layer; for Qwen3-VL also one vision
    /// block, whose tokens are the image's patches), forward in order, then backward in the
    /// order autograd runs it (reverse).
    pub fn launches(self, tokens: usize) -> Vec<StepLaunch> {
        let n = tokens;
        let d = self.decoder();
        let mut forward = vec![StepLaunch::new("decoder", "input_layernorm", "rms_norm", vec![n, d.hidden])];
        if d.qk_norm {
            forward.push(StepLaunch::new("decoder", "q_norm", "rms_norm", vec![n * d.q_heads, d.head_dim]));
            forward.push(StepLaunch::new("decoder", "k_norm", "rms_norm", vec![n * d.kv_heads, d.head_dim]));
        }
        forward.push(StepLaunch::new("decoder", "rotary q", "rotary_mul", vec![1, n, d.q_heads, d.head_dim]));
        forward.push(StepLaunch::new(
            "decoder",
            "rotary k",
            "rotary_mul",
            vec![1, n, d.kv_heads, d.head_dim],
        ));
        forward.push(StepLaunch::new(
            "decoder",
            "residual + post_attention_layernorm",
            "add_rms_norm",
            vec![n, d.hidden],
        ));
        forward.push(StepLaunch::new("decoder", "mlp act", "swiglu", vec![n, d.intermediate]));
        if let Some(v) = self.vision() {
            forward.push(StepLaunch::new("vision", "norm1", "layer_norm", vec![n, v.hidden]));
            forward.push(StepLaunch::new("vision", "norm2", "layer_norm", vec![n, v.hidden]));
            forward.push(StepLaunch::new("vision", "mlp act", "gelu_tanh", vec![n, v.intermediate]));
        }
        let backward: Vec<StepLaunch> = forward.iter().rev().map(StepLaunch::backward).collect();
        forward.into_iter().chain(backward).collect()
    }
}

/// Forward or backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Pass {
    Forward,
    Backward,
}

impl Pass {
    fn name(self) -> &'static str {
        match self {
            Pass::Forward => "fwd",
            Pass::Backward => "bwd",
        }
    }
}

/// One launch of the layer's step: which module, which op, the first input's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepLaunch {
    pub part: &'static str,
    pub role: &'static str,
    pub op: String,
    pub pass: Pass,
    pub first: Vec<usize>,
}

impl StepLaunch {
    fn new(part: &'static str, role: &'static str, op: &str, first: Vec<usize>) -> StepLaunch {
        StepLaunch { part, role, op: op.to_string(), pass: Pass::Forward, first }
    }

    /// The backward launch autograd makes for this forward one: the catalogue's `<op>_grad`,
    /// whose first input (the output's gradient) has the forward's first input's shape.
    fn backward(&self) -> StepLaunch {
        StepLaunch { op: format!("{}_grad", self.op), pass: Pass::Backward, ..self.clone() }
    }

    /// The row origin this launch's report case carries (unique within a model's step).
    pub fn origin(&self, model: StepModel) -> String {
        format!("{} {} {} {}", model.label(), self.part, self.role, self.pass.name())
    }
}

/// `--step MODEL --tokens N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Step {
    pub model: StepModel,
    pub tokens: usize,
}

impl Step {
    pub fn launches(&self) -> Vec<StepLaunch> {
        self.model.launches(self.tokens)
    }

    /// The catalogue ops the step runs, each once, in first-launch order.
    pub fn ops(&self) -> Vec<String> {
        let mut ops: Vec<String> = Vec::new();
        for l in self.launches() {
            if !ops.contains(&l.op) {
                ops.push(l.op);
            }
        }
        ops
    }
}

/// low / mid / high, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Span {
    pub low: f64,
    pub mid: f64,
    pub high: f64,
}

impl std::ops::AddAssign for Span {
    fn add_assign(&mut self, o: Span) {
        self.low += o.low;
        self.mid += o.mid;
        self.high += o.high;
    }
}

/// One launch's figures, from its report row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRow {
    pub launch: StepLaunch,
    pub shape: String,
    pub time_us: Span,
    pub floor_us: f64,
    pub gm_bytes: u64,
    pub min_bytes: u64,
    pub bound: String,
    /// The eager sequence HF + autograd runs for the same work: (launches, bytes, µs).
    pub eager: Option<(u32, u64, f64)>,
    /// The CANN built-in's design: (launches, µs mid).
    pub cann: Option<(usize, f64)>,
}

/// A sum over some launches; `eager` and `cann` sum only where every launch has one
/// (`*_missing` names those that do not).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StepTotal {
    pub launches: usize,
    pub time_us: Span,
    pub floor_us: f64,
    pub gm_bytes: u64,
    pub min_bytes: u64,
    pub eager_launches: u32,
    pub eager_us: Option<f64>,
    pub eager_missing: Vec<String>,
    pub cann_us: Option<f64>,
    pub cann_missing: Vec<String>,
    /// Over the launches that have a CANN design only: the designs' sum and the fused mid
    /// times' sum, so a total with a gap still compares like with like.
    pub cann_covered_us: f64,
    pub mid_covered_us: f64,
}

impl StepTotal {
    fn of<'a>(rows: impl Iterator<Item = &'a StepRow>) -> StepTotal {
        let mut t = StepTotal::default();
        let (mut eager, mut cann) = (0.0, 0.0);
        for r in rows {
            t.launches += 1;
            t.time_us += r.time_us;
            t.floor_us += r.floor_us;
            t.gm_bytes += r.gm_bytes;
            t.min_bytes += r.min_bytes;
            let name = format!("{} {}", r.launch.op, r.launch.role);
            match r.eager {
                Some((launches, _, us)) => {
                    t.eager_launches += launches;
                    eager += us;
                }
                None => t.eager_missing.push(name.clone()),
            }
            match r.cann {
                Some((_, us)) => {
                    cann += us;
                    t.mid_covered_us += r.time_us.mid;
                }
                None => t.cann_missing.push(name),
            }
        }
        t.eager_us = t.eager_missing.is_empty().then_some(eager);
        t.cann_us = t.cann_missing.is_empty().then_some(cann);
        t.cann_covered_us = cann;
        t
    }
}

/// A step target and whether it is met (`None`: cannot be judged, `detail` says why).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepCheck {
    pub target: &'static str,
    pub met: Option<bool>,
    pub detail: String,
}

/// The step's figures: a row per launch, the forward, backward and whole-step totals, the
/// targets, and the launches that have no row (the twin could not run them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepSummary {
    pub step: Step,
    pub dtype: DType,
    pub rows: Vec<StepRow>,
    pub forward: StepTotal,
    pub backward: StepTotal,
    pub total: StepTotal,
    pub checks: Vec<StepCheck>,
    pub missing: Vec<String>,
}

impl StepSummary {
    /// The identity of a step check in the known-misses list, like a row's:
    /// `step qwen2-7b bf16 4096 time/floor`.
    pub fn check_key(&self, check: &StepCheck) -> String {
        format!(
            "step {} {} {} {}",
            self.step.model.cli_name(),
            self.dtype.short_name(),
            self.step.tokens,
            check.target
        )
    }
}

/// The step of `step` in `dtype` from the report's rows (matched by op, dtype and origin).
pub fn summarise(step: &Step, dtype: DType, rows: &[Row]) -> StepSummary {
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for launch in step.launches() {
        let origin = launch.origin(step.model);
        let row = rows.iter().find(|r| r.op == launch.op && r.dtype == dtype && r.origin == origin);
        let Some((row, time)) = row.and_then(|r| r.time_us.map(|t| (r, t))) else {
            missing.push(format!("{} ({origin})", launch.op));
            continue;
        };
        out.push(StepRow {
            shape: launch.first.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x"),
            time_us: Span { low: time.low, mid: time.mid, high: time.high },
            floor_us: row.floor_us,
            gm_bytes: row.gm_bytes,
            min_bytes: row.min_bytes,
            bound: row.cycle.map_or("", |c| c.bound).to_string(),
            eager: row.eager.as_ref().map(|e| (e.launches, e.bytes, e.estimate.total_us)),
            cann: row.cann.as_ref().map(|c| (c.launches, c.modelled.time_us.mid)),
            launch,
        });
    }
    let forward = StepTotal::of(out.iter().filter(|r| r.launch.pass == Pass::Forward));
    let backward = StepTotal::of(out.iter().filter(|r| r.launch.pass == Pass::Backward));
    let total = StepTotal::of(out.iter());
    let checks = step_checks(&total, &missing);
    StepSummary { step: *step, dtype, rows: out, forward, backward, total, checks, missing }
}

fn step_checks(total: &StepTotal, missing: &[String]) -> Vec<StepCheck> {
    let mid = total.time_us.mid;
    let incomplete = (!missing.is_empty())
        .then(|| format!("{} launch(es) did not run: {}", missing.len(), missing.join(", ")));
    let floor = match &incomplete {
        Some(why) => StepCheck { target: "time/floor", met: None, detail: why.clone() },
        None => StepCheck {
            target: "time/floor",
            met: Some(mid <= STEP_FLOOR_TARGET * total.floor_us),
            detail: format!(
                "step mid {mid:.1} µs = {:.2}x its floors' sum {:.1} µs (target ≤ {STEP_FLOOR_TARGET}x)",
                mid / total.floor_us,
                total.floor_us
            ),
        },
    };
    let eager = match (&incomplete, total.eager_us) {
        (Some(why), _) => StepCheck { target: "vs eager", met: None, detail: why.clone() },
        (None, None) => StepCheck {
            target: "vs eager",
            met: None,
            detail: format!("no eager sequence is modelled for {}", total.eager_missing.join(", ")),
        },
        (None, Some(e)) => StepCheck {
            target: "vs eager",
            met: Some(e >= STEP_EAGER_TARGET * mid),
            detail: format!(
                "eager {e:.1} µs = {:.2}x the step's mid {mid:.1} µs (target ≥ {STEP_EAGER_TARGET}x)",
                e / mid
            ),
        },
    };
    vec![floor, eager]
}

fn opt_us(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{v:.1}"))
}

/// The marker line before a step's Markdown table in a file (`--table`).
pub fn table_marker(s: &StepSummary) -> String {
    format!("<!-- step table: {} {} {} -->", s.step.model.cli_name(), s.dtype.short_name(), s.step.tokens)
}

/// The marker line after it.
pub const TABLE_END: &str = "<!-- end of step table -->";

/// A file without the marker lines the step's table goes between (the begin marker it lacks).
#[derive(Debug, Clone, PartialEq)]
pub struct NoTableMarkers(pub String);

impl std::fmt::Display for NoTableMarkers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no `{}` ... `{TABLE_END}` lines to hold the step's table", self.0)
    }
}

impl std::error::Error for NoTableMarkers {}

/// `text` with the step's table between its markers replaced by [`markdown`]'s.
pub fn replace_table(text: &str, s: &StepSummary) -> Result<String, NoTableMarkers> {
    let begin = table_marker(s);
    let missing = || NoTableMarkers(begin.clone());
    let start = text.find(&begin).ok_or_else(missing)? + begin.len();
    let end = start + text[start..].find(TABLE_END).ok_or_else(missing)?;
    Ok(format!("{}\n{}{}", &text[..start], markdown(s), &text[end..]))
}

/// The step as a Markdown table (µs rounded to whole µs, ratios to 2 decimals): a row per
/// launch, then the forward, backward and step totals.
pub fn markdown(s: &StepSummary) -> String {
    let us = |v: f64| format!("{v:.0}");
    let span = |t: &Span| format!("{} ({}–{})", us(t.mid), us(t.low), us(t.high));
    let ratio =
        |num: Option<f64>, den: f64| num.map_or_else(|| "–".to_string(), |n| format!("{:.2}x", n / den));
    let mut out = String::from(
        "| pass | module | op | shape | µs mid (low–high) | floor µs | × floor | eager µs | vs eager | CANN µs |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in &s.rows {
        let l = &r.launch;
        let module = if l.part == "decoder" { l.role.to_string() } else { format!("{}: {}", l.part, l.role) };
        let eager = r.eager.map(|e| e.2);
        out.push_str(&format!(
            "| {} | {module} | {} | {} | {} | {} | {:.2} | {} | {} | {} |\n",
            l.pass.name(),
            l.op,
            r.shape,
            span(&r.time_us),
            us(r.floor_us),
            r.time_us.mid / r.floor_us,
            eager.map_or_else(|| "–".to_string(), us),
            ratio(eager, r.time_us.mid),
            r.cann.map_or_else(|| "–".to_string(), |c| us(c.1)),
        ));
    }
    for (name, t) in [("forward", &s.forward), ("backward", &s.backward), ("step", &s.total)] {
        out.push_str(&format!(
            "| **{name}** | | {} launches | | {} | {} | {:.2} | {} | {} | {} |\n",
            t.launches,
            span(&t.time_us),
            us(t.floor_us),
            t.time_us.mid / t.floor_us,
            t.eager_us.map_or_else(|| "–".to_string(), us),
            ratio(t.eager_us, t.time_us.mid),
            t.cann_us.map_or_else(|| "–".to_string(), us),
        ));
    }
    out
}

/// The step as a table: a line per launch, then the totals and the targets.
pub fn text(s: &StepSummary) -> String {
    let mut out = format!(
        "\nOne training step of a {} layer, {}, {} tokens (modelled µs; floor = minimum bytes at the HBM bandwidth + one launch of {} µs per kernel)\n",
        s.step.model.label(),
        s.dtype.short_name(),
        s.step.tokens,
        super::model::LAUNCH_OVERHEAD_US
    );
    out.push_str(&format!(
        "  {:<4} {:<8} {:<37} {:<18} {:<16} {:>25} {:>8} {:>6} {:>9} {:>7} {:>9}\n",
        "pass",
        "part",
        "module",
        "op",
        "shape",
        "mid (low–high)",
        "floor",
        "xfloor",
        "eager",
        "vs eag",
        "CANN"
    ));
    for r in &s.rows {
        let l = &r.launch;
        out.push_str(&format!(
            "  {:<4} {:<8} {:<37} {:<18} {:<16} {:>25} {:>8.1} {:>6.2} {:>9} {:>7} {:>9}\n",
            l.pass.name(),
            l.part,
            l.role,
            l.op,
            r.shape,
            format!("{:.1} ({:.1}–{:.1})", r.time_us.mid, r.time_us.low, r.time_us.high),
            r.floor_us,
            r.time_us.mid / r.floor_us,
            opt_us(r.eager.map(|e| e.2)),
            r.eager.map_or_else(|| "–".to_string(), |e| format!("{:.2}x", e.2 / r.time_us.mid)),
            opt_us(r.cann.map(|c| c.1)),
        ));
    }
    for (name, t) in [("forward", &s.forward), ("backward", &s.backward), ("step", &s.total)] {
        let eager = match t.eager_us {
            Some(e) => {
                format!("eager {e:.1} µs in {} launches ({:.2}x)", t.eager_launches, e / t.time_us.mid)
            }
            None if t.launches == 0 => "eager –".to_string(),
            None => format!("eager – (none modelled for {})", t.eager_missing.join(", ")),
        };
        let cann = match t.cann_us {
            Some(c) => format!("CANN {c:.1} µs ({:.2}x)", c / t.time_us.mid),
            None if t.cann_missing.len() == t.launches => "CANN – (no launch has a design)".to_string(),
            None => format!(
                "CANN – (no design for {}); the other {} launches: CANN {:.1} µs against mid {:.1} µs ({:.2}x)",
                t.cann_missing.join(", "),
                t.launches - t.cann_missing.len(),
                t.cann_covered_us,
                t.mid_covered_us,
                t.cann_covered_us / t.mid_covered_us
            ),
        };
        out.push_str(&format!(
            "  {name:<8}: {} launches, mid {:.1} µs ({:.1}–{:.1}), floor {:.1} µs ({:.2}x), {:.1} MiB of {:.1} MiB minimum; {eager}; {cann}\n",
            t.launches,
            t.time_us.mid,
            t.time_us.low,
            t.time_us.high,
            t.floor_us,
            t.time_us.mid / t.floor_us,
            t.gm_bytes as f64 / (1024.0 * 1024.0),
            t.min_bytes as f64 / (1024.0 * 1024.0),
        ));
    }
    for c in &s.checks {
        let verdict = match c.met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "n/a",
        };
        out.push_str(&format!("  target {:<10} {verdict}: {}\n", c.target, c.detail));
    }
    for m in &s.missing {
        out.push_str(&format!("  did not run: {m}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_name_round_trips_and_an_unknown_one_is_none() {
        for m in StepModel::ALL {
            assert_eq!(StepModel::parse(m.cli_name()), Some(m));
        }
        assert_eq!(StepModel::parse("llama-8b"), None);
    }

    #[test]
    fn qwen2_layer_is_five_forward_launches_and_their_grads_in_reverse() {
        let l = StepModel::Qwen2_7b.launches(4096);
        let ops: Vec<(&str, Pass)> = l.iter().map(|l| (l.op.as_str(), l.pass)).collect();
        use Pass::*;
        assert_eq!(
            ops,
            vec![
                ("rms_norm", Forward),
                ("rotary_mul", Forward),
                ("rotary_mul", Forward),
                ("add_rms_norm", Forward),
                ("swiglu", Forward),
                ("swiglu_grad", Backward),
                ("add_rms_norm_grad", Backward),
                ("rotary_mul_grad", Backward),
                ("rotary_mul_grad", Backward),
                ("rms_norm_grad", Backward),
            ]
        );
        // Qwen2-7B's config: hidden 3584, 28 q / 4 kv heads of 128, intermediate 18944.
        assert_eq!(l[0].first, vec![4096, 3584]);
        assert_eq!(l[1].first, vec![1, 4096, 28, 128]);
        assert_eq!(l[2].first, vec![1, 4096, 4, 128]);
        assert_eq!(l[4].first, vec![4096, 18944]);
        assert_eq!(l[5].first, l[4].first);
    }

    #[test]
    fn qwen3_norms_each_head_and_vl_adds_a_vision_block() {
        let q3 = StepModel::Qwen3_8b.launches(16);
        let q_norm = q3.iter().find(|l| l.role == "q_norm" && l.pass == Pass::Forward).unwrap();
        let k_norm = q3.iter().find(|l| l.role == "k_norm" && l.pass == Pass::Forward).unwrap();
        assert_eq!((q_norm.first.clone(), k_norm.first.clone()), (vec![16 * 32, 128], vec![16 * 8, 128]));
        assert_eq!(q3.len(), 14);
        let vl = StepModel::Qwen3Vl8b.launches(16);
        assert_eq!(vl.len(), 20);
        let vision: Vec<&str> = vl.iter().filter(|l| l.part == "vision").map(|l| l.op.as_str()).collect();
        assert_eq!(
            vision,
            vec![
                "layer_norm",
                "layer_norm",
                "gelu_tanh",
                "gelu_tanh_grad",
                "layer_norm_grad",
                "layer_norm_grad"
            ]
        );
        // Every origin is unique, so a row is matched to exactly one launch.
        let mut origins: Vec<String> = vl.iter().map(|l| l.origin(StepModel::Qwen3Vl8b)).collect();
        origins.sort();
        origins.dedup();
        assert_eq!(origins.len(), vl.len());
        assert_eq!(Step { model: StepModel::Qwen3Vl8b, tokens: 16 }.ops().len(), 12);
    }

    fn row(op: &str, pass: Pass, mid: f64, floor: f64, eager: Option<f64>) -> StepRow {
        StepRow {
            launch: StepLaunch { part: "decoder", role: "r", op: op.into(), pass, first: vec![1] },
            shape: "1".into(),
            time_us: Span { low: mid - 1.0, mid, high: mid + 1.0 },
            floor_us: floor,
            gm_bytes: 10,
            min_bytes: 8,
            bound: "HBM".into(),
            eager: eager.map(|e| (3, 30, e)),
            cann: None,
        }
    }

    #[test]
    fn totals_sum_the_launches_and_an_eager_gap_is_named_not_summed() {
        let rows =
            [row("a", Pass::Forward, 10.0, 8.0, Some(40.0)), row("a_grad", Pass::Backward, 30.0, 10.0, None)];
        let t = StepTotal::of(rows.iter());
        assert_eq!(t.time_us, Span { low: 38.0, mid: 40.0, high: 42.0 });
        assert_eq!((t.floor_us, t.gm_bytes, t.min_bytes, t.launches), (18.0, 20, 16, 2));
        assert_eq!(t.eager_us, None);
        assert_eq!(t.eager_missing, vec!["a_grad r".to_string()]);
        let checks = step_checks(&t, &[]);
        // 40 > 1.3 * 18: missed; no eager total: not judged.
        assert_eq!(checks[0].met, Some(false));
        assert_eq!(checks[1].met, None);
        let fwd = StepTotal::of(rows[..1].iter());
        assert_eq!(fwd.eager_us, Some(40.0));
        let checks = step_checks(&fwd, &[]);
        // 10 ≤ 1.3 * 8 = 10.4 and 40 ≥ 2 * 10.
        assert_eq!((checks[0].met, checks[1].met), (Some(true), Some(true)));
        let checks = step_checks(&fwd, &["x (y)".to_string()]);
        assert_eq!((checks[0].met, checks[1].met), (None, None));
    }

    #[test]
    fn the_markdown_table_goes_between_its_markers_and_nowhere_else() {
        let rows = vec![
            row("a", Pass::Forward, 10.4, 8.0, Some(40.0)),
            row("a_grad", Pass::Backward, 30.0, 10.0, None),
        ];
        let summary = StepSummary {
            step: Step { model: StepModel::Qwen2_7b, tokens: 16 },
            dtype: DType::BFloat16,
            forward: StepTotal::of(rows[..1].iter()),
            backward: StepTotal::of(rows[1..].iter()),
            total: StepTotal::of(rows.iter()),
            rows,
            checks: Vec::new(),
            missing: Vec::new(),
        };
        let table = markdown(&summary);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2 + 2 + 3, "{table}");
        // 10.4 µs over a floor of 8: 1.30x; eager 40 / 10.4 = 3.85x; no eager for the grad.
        assert_eq!(lines[2], "| fwd | r | a | 1 | 10 (9–11) | 8 | 1.30 | 40 | 3.85x | – |");
        assert_eq!(lines[3], "| bwd | r | a_grad | 1 | 30 (29–31) | 10 | 3.00 | – | – | – |");
        assert_eq!(lines[6], "| **step** | | 2 launches | | 40 (38–42) | 18 | 2.24 | – | – | – |");
        let marker = "<!-- step table: qwen2-7b bf16 16 -->";
        assert_eq!(table_marker(&summary), marker);
        let doc = format!("intro\n{marker}\nold\n{TABLE_END}\nafter {TABLE_END}\n");
        let new = replace_table(&doc, &summary).unwrap();
        assert_eq!(new, format!("intro\n{marker}\n{table}{TABLE_END}\nafter {TABLE_END}\n"));
        assert_eq!(replace_table(&new, &summary).unwrap(), new);
        let err = replace_table("no markers\n", &summary).unwrap_err().to_string();
        assert!(err.contains(marker) && err.contains(TABLE_END), "{err}");
    }

    #[test]
    fn a_cann_total_with_a_gap_compares_only_the_launches_with_a_design() {
        let mut with = row("a", Pass::Backward, 10.0, 8.0, None);
        with.cann = Some((1, 25.0));
        let without = row("b", Pass::Backward, 30.0, 10.0, None);
        let t = StepTotal::of([with.clone(), without].iter());
        assert_eq!(t.cann_us, None);
        assert_eq!(t.cann_missing, vec!["b r".to_string()]);
        // 25 µs of CANN against the 10 µs mid of the one launch it covers, not the 40 of both.
        assert_eq!((t.cann_covered_us, t.mid_covered_us), (25.0, 10.0));
        let full = StepTotal::of([with].iter());
        assert_eq!(full.cann_us, Some(25.0));
    }
}
