//! `opgen report` on small shapes: the counters the twin takes while running the generated
//! kernels add up to exact GM traffic, and the report's checks, eager baseline and outputs
//! (text, JSON, SVG) follow from them. The runners are the sanitized ones `verify` builds (one
//! object cache), so these tests add little build time.

use ascend_opgen::app::gen::{load_specs, render};
use ascend_opgen::app::report::{self as app_report, Report};
use ascend_opgen::plan::soc;
use ascend_opgen::report::{self, ReportCase, Row};
use ascend_opgen::spec::AttrValue;
use ascend_opgen::toolchain::command::Cmd;
use ascend_opgen::verify::{self, BuildOptions, CaseInput};
use ascend_opgen::DType;

fn row(op: &str, dtype: DType, first: &[usize]) -> Row {
    row_with(op, dtype, first, &[])
}

/// The row at `first` with `attrs` set over the spec's defaults.
fn row_with(op: &str, dtype: DType, first: &[usize], attrs: &[(&str, AttrValue)]) -> Row {
    let specs = load_specs(None, &[op.to_string()]).expect("catalogue");
    let spec = &specs[0];
    let project = render(&specs).expect("render");
    let column = spec.column_for(dtype).expect("dtype registered");
    let runner = verify::build_runner(&project, spec, column, BuildOptions::default()).expect("twin build");
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let mut case = ReportCase::new(spec, "test", first);
    for (name, value) in attrs {
        case.attrs.retain(|(n, _)| n != name);
        case.attrs.push((name.to_string(), value.clone()));
    }
    let (inputs, valid) = report::case_inputs(spec, column, &case);
    let run = verify::run_case(
        &runner,
        spec,
        soc,
        &CaseInput { inputs: &inputs, attrs: &case.attrs, inplace: &[] },
        false,
    )
    .expect("twin run");
    report::build_row(soc, spec, column, &case, &run.report, valid).expect("row")
}

fn check<'a>(row: &'a Row, target: &str) -> &'a report::Check {
    row.checks
        .iter()
        .find(|c| c.target == target)
        .unwrap_or_else(|| panic!("no `{target}` check in {:?}", row.checks))
}

#[test]
fn rms_norm_moves_each_streamed_byte_once_on_every_core() {
    // 960 rows over 48 cores = 20 rows each; the plan fits 12 rows of 896 half per pass, so
    // every core runs two tiles and must double-buffer them.
    let r = row("rms_norm", DType::Float16, &[960, 896]);
    let n = 960 * 896 * 2;
    assert_eq!(r.tensors["x"].traffic.read_bytes, n);
    assert_eq!(r.tensors["x"].traffic.write_bytes, 0);
    assert_eq!(r.tensors["y"].traffic.write_bytes, n);
    assert_eq!(r.tensors["rstd"].traffic.write_bytes, 960 * 4);
    // gamma: once per core with work, the only traffic above the minimum.
    assert_eq!(r.cores_with_work, 48);
    assert_eq!(r.cores_launched, 48);
    assert_eq!(r.tensors["gamma"].traffic.read_bytes, 48 * 896 * 2);
    assert_eq!(r.gm_bytes - r.min_bytes, 47 * 896 * 2);
    assert_eq!(r.tensors["gamma"].traffic.cores, 48);
    assert!(!r.split_d);
    assert_eq!(r.plan, "12 rows/pass");
    // Two tiles per core, each copied into the other buffer of the double-buffered queue.
    assert_eq!(r.double_buffered_cores, (48, 48));
    assert_eq!(r.copy_ins_overlapped, (48, 48));
    assert_eq!(check(&r, "double buffering").met, Some(true));
    assert!(r.ub_high_water_bytes <= 184 * 1024 && check(&r, "UB").met == Some(true));
    assert_eq!(check(&r, "cores").met, Some(true));
    // The eager sequence: HF Qwen2RMSNorm is 8 kernels and ~9x the bytes in half.
    let eager = r.eager.as_ref().expect("eager sequence");
    assert_eq!(eager.launches, 8);
    assert!(r.traffic_ratio.unwrap() > 8.0, "{:?}", r.traffic_ratio);
    // The model: never faster than the roofline bound, and the twin's transfers add up.
    assert!(r.fused.total_us >= r.roofline_us && r.roofline_fraction <= 1.0);
    assert_eq!(r.transfers, r.tensors.values().map(|t| t.traffic.transfers()).sum::<u64>());
    // Whole rows: the row sums are WholeReduceSum on the vector unit (no level-2 ReduceSum and
    // its hidden V_S since the long-row change), the 16-bit output one Cast.
    assert!(
        r.vector.contains_key("WholeReduceSum") && r.vector.contains_key("Cast"),
        "{:?}",
        r.vector.keys()
    );
}

#[test]
fn split_d_add_rms_norm_with_the_sum_resident_reads_its_inputs_once() {
    // A 32768-element float16 row does not fit one pass; its rounded sum (64 KiB) stays in UB
    // between the passes, so x1 and x2 are read once and x_sum written once, in one transfer.
    let r = row("add_rms_norm", DType::Float16, &[1, 32768]);
    assert!(r.split_d, "{}", r.plan);
    assert_eq!(r.tiling["rowResident"], 1.0, "{}", r.plan);
    let n = 32768 * 2;
    for x in ["x1", "x2"] {
        assert_eq!(r.tensors[x].traffic.read_bytes, n, "{x}");
    }
    assert_eq!(r.tensors["y"].traffic.write_bytes, n);
    assert_eq!(r.tensors["x_sum"].traffic.write_bytes, n);
    assert_eq!(r.tensors["x_sum"].traffic.write_transfers, 1);
    assert_eq!(r.tensors["gamma"].traffic.read_bytes, n);
    assert!((r.bytes_ratio - 1.0).abs() < 1e-3, "{}", r.bytes_ratio);
    assert_eq!(check(&r, "bytes/min").met, Some(true));
    assert_eq!(r.eager.as_ref().unwrap().launches, 9);
}

#[test]
fn split_d_add_rms_norm_reads_its_inputs_twice_when_the_row_cannot_stay() {
    // 65536 float32 (256 KiB) cannot stay in UB: pass 2 reads x1 and x2 again.
    let r = row("add_rms_norm", DType::Float32, &[1, 65536]);
    assert!(r.split_d, "{}", r.plan);
    assert_eq!(r.tiling["rowResident"], 0.0, "{}", r.plan);
    let n = 65536 * 4;
    for x in ["x1", "x2"] {
        assert_eq!(r.tensors[x].traffic.read_bytes, 2 * n, "{x}");
    }
    assert_eq!(r.tensors["y"].traffic.write_bytes, n);
    assert_eq!(r.tensors["x_sum"].traffic.write_bytes, n);
    assert_eq!(r.tensors["gamma"].traffic.read_bytes, n);
    // (2 + 2 + 1 + 1 + 1) / (1 + 1 + 1 + 1 + 1) streams of n bytes, plus 4 bytes of rstd.
    assert!((r.bytes_ratio - 1.4).abs() < 1e-3, "{}", r.bytes_ratio);
    assert_eq!(check(&r, "bytes/min").met, Some(true));
}

#[test]
fn the_report_outputs_carry_the_rows() {
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let rows = vec![row("rms_norm", DType::Float16, &[64, 896]), row("rms_norm", DType::Float16, &[3, 7])];
    let report = Report {
        targets: report::summarise(&rows),
        rows,
        failures: Vec::new(),
        steps: Vec::new(),
        seconds: 1.0,
    };
    let text = app_report::text(soc, &report);
    assert!(
        text.contains("64x896") && text.contains("1 vs 8") && text.contains("Targets (issue #5)"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&app_report::json(soc, &report)).expect("valid JSON");
    assert_eq!(json["soc"]["name"], soc.name);
    assert_eq!(json["rows"].as_array().unwrap().len(), 2);
    assert_eq!(json["rows"][0]["eager"]["launches"], 8);
    assert!(json["rows"][0]["cores"][0]["gm_read_transfers"]["x"].as_u64().unwrap() > 0);
    assert_eq!(json["model"]["launch_overhead_us"], report::model::LAUNCH_OVERHEAD_US);
    let svg = app_report::svg(soc, &report);
    assert!(svg.starts_with("<svg") && svg.contains("rms_norm f16 64x896"), "{svg}");
}

#[test]
fn the_fusion_target_ops_have_model_shapes() {
    // Qwen2-7B and Qwen3-8B at 4096 tokens; rms_norm also Qwen3's q_norm rows; rotary_mul's
    // three shapes also with rounding "hf" (its float32 kernel path differs).
    for (op, cases) in [("rms_norm", 3), ("add_rms_norm", 2), ("rotary_mul", 6)] {
        let specs = load_specs(None, &[op.to_string()]).expect("catalogue");
        let model = report::cases(&specs[0], report::ShapeSet::Model);
        assert_eq!(model.len(), cases, "{op}");
        let tokens = |s: &[usize]| s[..s.len() - 1].iter().product::<usize>();
        assert!(model.iter().all(|c| c.is_model() && tokens(&c.shapes[0].1) % 4096 == 0), "{op}: {model:?}");
        assert!(model.iter().any(|c| c.origin.starts_with("Qwen3")), "{op}: {model:?}");
    }
}

/// Issue 28 point 7: the token log-prob's model rows are the RL micro-batches over Qwen's
/// vocabulary, too large for the twin whole, so each is scaled from three runs of k, k+2, k+4
/// rows per core at the real V (k: 3 or 4, the busiest core's parity); sweep shapes run whole.
#[test]
fn the_vocab_model_rows_are_scaled_from_runs_at_the_real_row_length() {
    use ascend_opgen::report::scaled::Plan;
    let soc = ascend_opgen::plan::soc::find("Ascend910B2").unwrap();
    for op in ["logprob_entropy", "logprob_entropy_grad"] {
        let specs = load_specs(None, &[op.to_string()]).expect("catalogue");
        let model = report::cases(&specs[0], report::ShapeSet::Model);
        let firsts: Vec<&[usize]> = model.iter().map(|c| c.shapes[0].1.as_slice()).collect();
        assert_eq!(firsts, [&[4096, 151936][..], &[8192, 151936], &[16384, 151936]], "{op}");
        // 48 cores: 86, 171 and 342 rows on the busiest.
        let plans: Vec<(u64, [u64; 3])> = model
            .iter()
            .map(|c| Plan::of(soc, &specs[0], c).map(|p| (p.busiest, p.per_core)).expect("scaled"))
            .collect();
        assert_eq!(plans, [(86, [4, 6, 8]), (171, [3, 5, 7]), (342, [4, 6, 8])], "{op}");
        let plan = Plan::of(soc, &specs[0], &model[0]).unwrap();
        let proxies: Vec<Vec<usize>> =
            plan.proxies(&specs[0], &model[0]).iter().map(|c| c.shapes[0].1.clone()).collect();
        assert_eq!(proxies, [vec![192, 151936], vec![288, 151936], vec![384, 151936]], "{op}");
        let sweep = report::cases(&specs[0], report::ShapeSet::Sweep);
        assert!(sweep.iter().all(|c| Plan::of(soc, &specs[0], c).is_none()), "{op}: sweep cases run whole");
    }
    // A family that does not scale by rows runs its model shapes whole.
    let rms = load_specs(None, &["rms_norm".to_string()]).expect("catalogue");
    let mut big = report::ReportCase::new(&rms[0], "test", &[65536, 4096]);
    assert!(Plan::of(soc, &rms[0], &big).is_none());
    big.origin = "sweep".into();
    assert!(Plan::of(soc, &rms[0], &big).is_none());
}

/// Runs `op` traced at `shape` (dtype `dtype`) and checks that the trace (trace.cpp) and the
/// counters (runtime.cpp), two independent paths of the twin, tell the same story per core.
/// Returns what the cycle model needs.
fn traced_row_agrees_with_the_counters(
    op: &str,
    dtype: DType,
    shape: &[usize],
) -> (ascend_opgen::spec::OpSpec, usize, String, report::Row) {
    let specs = load_specs(None, &[op.to_string()]).expect("catalogue");
    let spec = specs[0].clone();
    let project = render(&specs).expect("render");
    let column = spec.column_for(dtype).expect("dtype registered");
    let runner = verify::build_runner(&project, &spec, column, BuildOptions::default()).expect("twin build");
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    let case = ReportCase::new(&spec, "test", shape);
    let (inputs, valid) = report::case_inputs(&spec, column, &case);
    let (run, trace) = verify::run_case_traced(
        &runner,
        &spec,
        soc,
        &CaseInput { inputs: &inputs, attrs: &case.attrs, inplace: &[] },
    )
    .expect("twin run");
    let doc = ascend_opgen::perf::trace::parse(&trace).expect("trace parses");
    let row = report::build_row(soc, &spec, column, &case, &run.report, valid).expect("row");
    assert_eq!(doc.cores.len(), row.cores.len());
    use ascend_opgen::perf::trace::Event;
    for (t, c) in doc.cores.iter().zip(&row.cores) {
        let mut vec_calls: std::collections::BTreeMap<String, u64> = Default::default();
        let (mut bytes_in, mut bytes_out, mut hidden_vs, mut kernel_waits) = (0, 0, 0, 0);
        for e in &t.events {
            match e {
                Event::Vec { api, .. } => *vec_calls.entry(api.to_string()).or_default() += 1,
                Event::Dma { pipe, bytes, .. } if pipe == "MTE2" => bytes_in += bytes,
                Event::Dma { bytes, .. } => bytes_out += bytes,
                Event::Hidden { event } if event == "V_S" => hidden_vs += 1,
                Event::Wait { key, .. } if *key < 1_000_000 => kernel_waits += 1,
                _ => {}
            }
        }
        assert_eq!(vec_calls, c.vector_instructions, "{op} core {}", c.core);
        assert_eq!(
            (bytes_in, bytes_out),
            (c.transfer_in_bytes, c.transfer_out_bytes),
            "{op} core {}",
            c.core
        );
        assert_eq!(hidden_vs, c.hidden_flag_waits.get("V_S").copied().unwrap_or(0), "{op} core {}", c.core);
        assert_eq!(kernel_waits, c.flag_waits.values().sum::<u64>(), "{op} core {}", c.core);
    }
    (spec, column, trace, row)
}

#[test]
fn the_event_trace_agrees_with_the_counters_across_a_syncall() {
    // masked_whiten's cores run up to SyncAll one after another, then on: each core's events
    // after the barrier are its own (a trace that kept the last started core's list gave that
    // core every core's second phase, and the cycle model 48x its work).
    traced_row_agrees_with_the_counters("masked_whiten", DType::Float32, &[8, 16384]);
}

#[test]
fn the_event_trace_agrees_with_the_counters_and_times_the_launch() {
    let (spec, column, trace, mut row) =
        traced_row_agrees_with_the_counters("rms_norm", DType::Float16, &[960, 896]);
    let spec = &spec;
    let soc = soc::find(soc::DEFAULT_SOC).unwrap();
    report::attach_cycle_model(&mut row, soc, spec, column, &trace);
    let t = row.time_us.unwrap_or_else(|| panic!("no cycle model: {:?}", row.cycle_missing));
    assert!(t.low <= t.mid && t.mid <= t.high, "{t:?}");
    // Never below the bytes at the full assumed bandwidth plus the low end of a launch (5 µs),
    // and the row's floor is those bytes plus one launch at the table's middle (8 µs).
    assert!(t.low >= row.roofline_us + 5.0, "{t:?} against {}", row.roofline_us);
    assert!(
        (row.floor_us - row.roofline_us - 8.0).abs() < 1e-9,
        "{} against {}",
        row.floor_us,
        row.roofline_us
    );
    let cann = row.cann.as_ref().expect("CANN RmsNorm design");
    assert_eq!(cann.mode, "MergeN");
    assert!(row.vs_cann.is_some() && row.vs_eager.is_some());
}

#[test]
fn report_refuses_an_unknown_soc() {
    let out = Cmd::new(env!("CARGO_BIN_EXE_opgen"))
        .args(["report", "--soc", "Ascend910B", "--ops", "rms_norm"])
        .stdin_null()
        .run()
        .expect("opgen runs");
    assert_eq!(out.code(), Some(2), "{}", out.stderr_lossy());
    assert!(out.stderr_lossy().contains("first-generation"));
}

#[test]
fn report_shape_takes_plans_syntax_for_one_op() {
    let run = |args: &[&str]| {
        Cmd::new(env!("CARGO_BIN_EXE_opgen")).arg("report").args(args).stdin_null().run().expect("opgen runs")
    };
    let two = run(&["--ops", "rms_norm,add_rms_norm", "--shape", "4x8"]);
    assert_eq!(two.code(), Some(2), "{}", two.stderr_lossy());
    assert!(two.stderr_lossy().contains("exactly one op"), "{}", two.stderr_lossy());
    let bad = run(&["--ops", "rms_norm", "--shape", "4xA"]);
    assert_eq!(bad.code(), Some(2), "{}", bad.stderr_lossy());
    assert!(bad.stderr_lossy().contains("bad shape `4xA`"), "{}", bad.stderr_lossy());
    let one = run(&["--ops", "rms_norm", "--dtypes", "f16", "--shape", "96x128"]);
    assert_eq!(one.code(), Some(0), "{}", one.stderr_lossy());
    let text = one.stdout_lossy();
    assert!(text.contains("96x128 (user)") && text.contains("Cycle model"), "{text}");
    assert!(text.contains("MergeN"), "the CANN RmsNorm design at D = 128: {text}");
}

/// Issue 14's targets name the ops they apply to: the CANN built-in baseline for the norms,
/// rotary, swiglu and the cache scatters, and (issue 26) the backward ops with a modelled CANN
/// grad kernel, RmsNormGrad and SwiGluGrad; the 1.2x-of-floor target for the forward norms,
/// rotary and swiglu; (issue 28) the token log-prob + entropy against CrossEntropyLoss and its
/// grad, 1.2x forward and 1.3x backward. The catalogue's ops reach those through their families, not by name.
#[test]
fn the_cann_baselines_and_floor_targets_are_the_ones_issue_14_names() {
    use ascend_opgen::family::{self, CannBuiltin};
    let specs = load_specs(None, &[]).expect("catalogue");
    let with = |pred: &dyn Fn(CannBuiltin) -> bool| {
        let mut ops: Vec<&str> = specs
            .iter()
            .filter(|s| family::cann_builtin(s).is_some_and(pred))
            .map(|s| s.name.as_str())
            .collect();
        ops.sort_unstable();
        ops
    };
    assert_eq!(
        with(&|_| true),
        [
            "add_rms_norm",
            "add_rms_norm_grad",
            "fast_gelu_grad",
            "gelu_erf_grad",
            "gelu_tanh_grad",
            "layer_norm_grad",
            "logprob_entropy",
            "logprob_entropy_grad",
            "logprob_entropy_grad_inplace",
            "reshape_and_cache",
            "reshape_and_cache_int8",
            "rms_norm",
            "rms_norm_grad",
            "rotary_mul",
            "rotary_mul_grad",
            "swiglu",
            "swiglu_grad"
        ]
    );
    // Issue 26 item 2: every grad autograd calls has a baseline (the gelu grads' is a stated
    // no-design: closed TBE kernels on 910B).
    let gelu = specs.iter().find(|s| s.name == "gelu_tanh_grad").expect("gelu_tanh_grad");
    assert_eq!(family::cann_builtin(gelu), Some(CannBuiltin::GeluGrad));
    // Issue 28: the token log-prob's targets are 1.2x forward and 1.3x backward.
    let target = |f: f64| move |b: CannBuiltin| b.floor_target() == Some(f);
    assert_eq!(with(&target(1.2)), ["add_rms_norm", "logprob_entropy", "rms_norm", "rotary_mul", "swiglu"]);
    assert_eq!(with(&target(1.3)), ["logprob_entropy_grad", "logprob_entropy_grad_inplace"]);
    let rms = specs.iter().find(|s| s.name == "rms_norm").expect("rms_norm");
    assert_eq!(family::cann_builtin(rms), Some(CannBuiltin::RmsNorm));
    let add = specs.iter().find(|s| s.name == "add_rms_norm").expect("add_rms_norm");
    assert_eq!(family::cann_builtin(add), Some(CannBuiltin::AddRmsNorm));
    let grad = specs.iter().find(|s| s.name == "rms_norm_grad").expect("rms_norm_grad");
    assert_eq!(family::cann_builtin(grad), Some(CannBuiltin::RmsNormGrad));
}

/// The floor counts what the op must move. rotary_mul_grad's dx = dy·r1 − rotate(dy·r2) does not
/// depend on x, so without table gradients x is neither read nor in the minimum bytes (it was
/// once, and the floor then sat above the modelled time); with them, dr1/dr2 = Σ dy·x·… need it.
#[test]
fn the_floor_counts_only_the_inputs_the_result_depends_on() {
    let bytes = |shape: &[usize]| shape.iter().product::<usize>() as u64 * 2;
    for table_grads in [false, true] {
        let r = row_with(
            "rotary_mul_grad",
            DType::Float16,
            &[1, 64, 4, 128],
            &[("table_grads", AttrValue::Bool(table_grads))],
        );
        let shape = |name: &str| r.shapes.iter().find(|(n, _)| n == name).map(|(_, s)| s.clone()).unwrap();
        let (dy, x, r1, r2) = (shape("dy"), shape("x"), shape("r1"), shape("r2"));
        // Read dy, r1, r2 (and x for the tables), write dx (dy's shape), dr1 and dr2 (the tables').
        let tables = bytes(&r1) + bytes(&r2);
        let want = 2 * bytes(&dy) + 2 * tables + if table_grads { bytes(&x) } else { 0 };
        assert_eq!(r.min_bytes, want, "table_grads {table_grads}: {:?}", r.tensors);
        let x_read = r.tensors.get("x").map_or(0, |t| t.traffic.bytes());
        assert_eq!(x_read > 0, table_grads, "table_grads {table_grads}: x traffic {x_read}");
    }
}

/// `report --step`: every launch of the layer's step has its row, at the layer's shapes, and the
/// step's totals are those rows' sums; `--step` with `--ops` is refused.
#[test]
fn a_step_report_runs_every_launch_of_the_layer_at_its_shapes() {
    use ascend_opgen::report::step::{Pass, Step, StepModel};
    let step = Step { model: StepModel::Qwen3_8b, tokens: 4 };
    let opts =
        app_report::ReportOptions { step: Some(step), dtypes: vec![DType::BFloat16], ..Default::default() };
    let report = app_report::run_report(&opts).expect("report runs");
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.steps.len(), 1);
    let s = &report.steps[0];
    assert!(s.missing.is_empty(), "{:?}", s.missing);
    assert_eq!(s.rows.len(), 14, "7 forward launches and their 7 grads");
    for r in &s.rows {
        let row = report
            .rows
            .iter()
            .find(|row| row.origin == r.launch.origin(StepModel::Qwen3_8b))
            .expect("the launch's report row");
        assert_eq!(row.op, r.launch.op);
        assert_eq!(row.shapes[0].1, r.launch.first, "{}", row.op);
        assert_eq!(r.time_us.mid, row.time_us.expect("cycle model").mid);
    }
    let fwd: f64 = s.rows.iter().filter(|r| r.launch.pass == Pass::Forward).map(|r| r.time_us.mid).sum();
    let floors: f64 = s.rows.iter().map(|r| r.floor_us).sum();
    assert!((s.forward.time_us.mid - fwd).abs() < 1e-9 && (s.total.floor_us - floors).abs() < 1e-9);
    assert_eq!(s.checks.iter().map(|c| c.target).collect::<Vec<_>>(), vec!["time/floor", "vs eager"]);
    let text = app_report::text(soc::find(soc::DEFAULT_SOC).unwrap(), &report);
    assert!(text.contains("One training step of a Qwen3-8B layer, bf16, 4 tokens"), "{text}");

    let refused = Cmd::new(env!("CARGO_BIN_EXE_opgen"))
        .args(["report", "--step", "qwen3-8b", "--ops", "rms_norm"])
        .stdin_null()
        .run()
        .expect("opgen runs");
    assert_eq!(refused.code(), Some(2), "{}", refused.stderr_lossy());
    assert!(refused.stderr_lossy().contains("drop --ops"), "{}", refused.stderr_lossy());
}

/// A masked level-0 repeat holds the vector unit for a whole 256-byte repeat, so the trace counts
/// it as one (the cycle model costs elements as float32 repeats): the log-prob forward's tile max
/// ends in a WholeReduceMax of 8 repeats of at most 24 lanes (repeat stride 0, the Sub's block),
/// which must cost 8 repeats, not its 8·(8 + k) active lanes.
#[test]
fn a_masked_level0_repeat_is_traced_as_a_whole_repeat() {
    let (_, _, trace, _) = traced_row_agrees_with_the_counters("logprob_entropy", DType::Float32, &[2, 9000]);
    let doc = ascend_opgen::perf::trace::parse(&trace).expect("trace parses");
    use ascend_opgen::perf::trace::Event;
    let whole_reduce: Vec<u64> = doc
        .cores
        .iter()
        .flat_map(|c| c.events.iter())
        .filter_map(|e| match e {
            Event::Vec { api, elements } if api.starts_with("WholeReduce") => Some(*elements),
            _ => None,
        })
        .collect();
    assert!(!whole_reduce.is_empty());
    assert!(whole_reduce.iter().all(|n| n % 64 == 0), "{whole_reduce:?}");
    assert!(whole_reduce.contains(&(8 * 64)), "the tile max's broadcast: {whole_reduce:?}");
}
