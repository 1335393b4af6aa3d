//! `opgen`: generate, verify, run and plan fused AscendC operators from specs.

use ascend_opgen::app::args::UnknownValue;
use ascend_opgen::app::{self, gen::GenOptions, plan::PlanOptions, run::RunOptions, run_npu::RunNpuOptions};
use ascend_opgen::plan::soc::DEFAULT_SOC;
use ascend_opgen::report::step::{Step, StepModel};
use ascend_opgen::report::ShapeSet;
use ascend_opgen::DType;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "opgen",
    version,
    about = "Fused AscendC operators from declarative specs, verified on a CPU twin"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

fn parse_shape_set(text: &str) -> Result<ShapeSet, UnknownValue> {
    ShapeSet::parse(text).ok_or_else(|| UnknownValue::new("shape set", text, "sweep, model, all"))
}

fn parse_step_model(text: &str) -> Result<StepModel, UnknownValue> {
    StepModel::parse(text)
        .ok_or_else(|| UnknownValue::new("step model", text, "qwen2-7b, qwen3-8b, qwen3-vl-8b"))
}

fn parse_bf16_npy(text: &str) -> Result<ascend_opgen::npy::Bf16Npy, UnknownValue> {
    ascend_opgen::npy::Bf16Npy::parse(text)
        .ok_or_else(|| UnknownValue::new("bfloat16 spelling", text, "ml_dtypes, u2"))
}

/// Where `opgen run` runs the op.
#[derive(Clone, Copy, Debug)]
enum Device {
    Twin,
    Npu(i32),
}

fn parse_device(text: &str) -> Result<Device, UnknownValue> {
    match text {
        "twin" | "cpu" => Ok(Device::Twin),
        "npu" => Ok(Device::Npu(0)),
        _ => text
            .strip_prefix("npu:")
            .and_then(|n| n.parse().ok())
            .map(Device::Npu)
            .ok_or_else(|| UnknownValue::new("device", text, "twin, npu, npu:N")),
    }
}

#[derive(Subcommand)]
enum Command {
    /// Generate the CANN custom-op project.
    Gen {
        /// A spec file or a directory of specs (default: the catalogue in kernels/).
        #[arg(long)]
        specs: Option<PathBuf>,
        /// Output directory (default: target/opgen).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Only these ops, comma separated.
        #[arg(long, value_delimiter = ',')]
        ops: Vec<String>,
    },
    /// Build every op on the CPU twin, run the sweep, compare with the references.
    Verify(app::args::VerifyArgs),
    /// Run one op on the CPU twin with .npy inputs; writes <out>/<output>.npy, and for caches the
    /// kernel updates in place <out>/<cache>.npy (the updated cache).
    Run {
        op: String,
        #[arg(long)]
        specs: Option<PathBuf>,
        /// The dtype combination: the first input's dtype (dequant_int8: the output's). Default:
        /// the one the .npy files' dtypes (and an output-dtype attr such as out_dtype) select.
        #[arg(long, value_parser = app::args::parse_dtype)]
        dtype: Option<DType>,
        /// name=path.npy, once per input.
        #[arg(long = "input")]
        inputs: Vec<String>,
        /// name=value; attrs not given take their defaults.
        #[arg(long = "attr")]
        attrs: Vec<String>,
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value = DEFAULT_SOC)]
        soc: String,
        #[arg(long)]
        no_sanitize: bool,
        /// Where to run: `twin` (the CPU twin, default) or `npu`/`npu:N` (a real NPU through the
        /// op's aclnn API, from the package build-npu installed; needs a build with ACL).
        #[arg(long, default_value = "twin", value_parser = parse_device)]
        device: Device,
        /// How bfloat16 outputs are written: `ml_dtypes` (descr '<V2', what np.save writes for an
        /// ml_dtypes.bfloat16 array) or `u2` (the bits as '<u2'). Default: as the bfloat16
        /// inputs were, else u2. Inputs are read in either spelling.
        #[arg(long, value_parser = parse_bf16_npy)]
        bf16_npy: Option<ascend_opgen::npy::Bf16Npy>,
        /// With --device npu: build-npu's install directory (default: ASCEND_CUSTOM_OPP_PATH,
        /// then target/opgen/install).
        #[arg(long)]
        install: Option<PathBuf>,
    },
    /// Print the tiling the generated TilingFunc picks for a shape.
    Plan {
        op: String,
        #[arg(long)]
        specs: Option<PathBuf>,
        /// The dtype combination: the first input's dtype (dequant_int8: the output's).
        #[arg(long, value_parser = app::args::parse_dtype)]
        dtype: DType,
        /// The first input's shape (4x896); more as name=dims to override derived shapes.
        #[arg(long = "shape", required = true)]
        shapes: Vec<String>,
        /// Another input's dtype as name=dtype, where --dtype leaves several combinations
        /// (logprob_entropy_grad: target=i32 or target=i64).
        #[arg(long = "input-dtype")]
        input_dtypes: Vec<String>,
        #[arg(long = "attr")]
        attrs: Vec<String>,
        #[arg(long, default_value = DEFAULT_SOC)]
        soc: String,
    },
    /// Performance evidence: twin counters, bytes vs minimum, roofline model, fused vs eager.
    Report {
        #[arg(long)]
        specs: Option<PathBuf>,
        #[arg(long, value_delimiter = ',')]
        ops: Vec<String>,
        /// Only these dtypes (of the first input), comma separated: f16,bf16,f32.
        #[arg(long, value_delimiter = ',', value_parser = app::args::parse_dtype)]
        dtypes: Vec<DType>,
        #[arg(long, default_value = DEFAULT_SOC)]
        soc: String,
        /// sweep (the quick sweep's shapes), model (Qwen2-7B shapes) or all.
        #[arg(long, default_value = "all", value_parser = parse_shape_set)]
        shapes: ShapeSet,
        /// Write every figure as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write a chart (fused vs eager modeled time per op) as SVG.
        #[arg(long)]
        svg: Option<PathBuf>,
        /// Runner processes at once.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Exit 1 when a target of the report is missed (and not listed in --known-misses).
        #[arg(long)]
        check: bool,
        /// Misses accepted with their reason, one `op dtype shape target | reason` per line;
        /// with --check, an unlisted miss fails, and so does a listed one that is now met.
        #[arg(long)]
        known_misses: Option<PathBuf>,
        /// Skip cases whose largest input has more elements (each skipped case is listed).
        #[arg(long)]
        max_elements: Option<u64>,
        /// One shape instead of --shapes, in `plan`'s syntax: the first input's shape (4x896),
        /// more as name=dims to override derived shapes; needs exactly one op in --ops.
        #[arg(long = "shape")]
        shape: Vec<String>,
        /// One layer's training step instead of --shapes: qwen2-7b, qwen3-8b or qwen3-vl-8b
        /// (text decoder layer; Qwen3-VL also its vision block), forward and backward; with no
        /// --dtypes, bf16.
        #[arg(long, value_parser = parse_step_model)]
        step: Option<StepModel>,
        /// The step's tokens (the vision block's patches).
        #[arg(long, default_value_t = 4096, requires = "step")]
        tokens: usize,
        /// With --step: write the step's Markdown table into this file, between its marker
        /// lines (`<!-- step table: qwen2-7b bf16 4096 -->` and `<!-- end of step table -->`).
        #[arg(long, requires = "step")]
        table: Option<PathBuf>,
        /// With --table: compare instead of writing; exit 1 when the file's table is stale.
        #[arg(long, requires = "table")]
        table_check: bool,
        /// Instead of twin rows: model CANN's own kernels at the measured points of FILE (e.g.
        /// tests/perf-calibration/cann-bench-910b2.csv) and print measured/modelled per point,
        /// the in-band count and the error per regime.
        #[arg(long, value_name = "FILE")]
        calibration: Option<PathBuf>,
    },
    /// Find the CANN toolkit and say what is missing.
    Doctor {
        #[arg(long)]
        cann: Option<PathBuf>,
    },
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Gen { specs, out, ops } => app::gen::gen_ops(&GenOptions { specs, out, ops, check: false }),
        Command::Verify(args) => app::verify::verify(&args.options()),
        Command::Run {
            op,
            specs,
            dtype,
            inputs,
            attrs,
            out,
            soc,
            no_sanitize,
            bf16_npy,
            device,
            install,
        } => match device {
            Device::Twin => app::run::run(&RunOptions {
                specs,
                op,
                dtype,
                inputs,
                attrs,
                out,
                soc,
                sanitize: !no_sanitize,
                bf16_npy,
            }),
            Device::Npu(device) => {
                app::run_npu::run_npu(&RunNpuOptions { specs, op, inputs, attrs, out, device, install })
            }
        },
        Command::Plan { op, specs, dtype, shapes, input_dtypes, attrs, soc } => {
            app::plan::plan(&PlanOptions { specs, op, dtype, shapes, input_dtypes, attrs, soc })
        }
        Command::Report {
            specs,
            ops,
            dtypes,
            soc,
            shapes,
            json,
            svg,
            jobs,
            check,
            known_misses,
            max_elements,
            shape,
            step,
            tokens,
            table,
            table_check,
            calibration,
        } => app::report::report(&app::report::ReportOptions {
            specs,
            ops,
            dtypes: if step.is_some() && dtypes.is_empty() { vec![DType::BFloat16] } else { dtypes },
            soc,
            shapes,
            json,
            svg,
            jobs,
            check,
            known_misses,
            max_elements,
            shape,
            step: step.map(|model| Step { model, tokens }),
            table: table.map(|path| app::report::StepTable { path, check: table_check }),
            calibration,
        }),
        Command::Doctor { cann } => {
            let report = ascend_opgen::toolchain::doctor_report(cann.as_deref());
            println!("{}", report.text);
            if report.build_npu_ready {
                Ok(())
            } else {
                // Exit 2 like every other "no CANN toolkit" outcome; the report says what is missing.
                Err(app::AppError::input(
                    "doctor: build-npu cannot run on this machine (see the report above)",
                ))
            }
        }
    };
    std::process::exit(app::exit_code(result));
}
