//! `cargo xtask <command>`: the project's developer entry points. Thin: every command is a
//! call into the ascend-opgen library.

use ascend_opgen::app::{
    self, build_npu::BuildNpuOptions, check_cann::CheckCannOptions, gen::GenOptions,
    torch_cpu::TorchCpuOptions,
};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "ascend-opgen developer tasks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate the CANN custom-op project from kernels/*.toml (and refresh the golden copy).
    GenOps {
        /// Output directory (default: target/opgen).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Only these ops, comma separated.
        #[arg(long, value_delimiter = ',')]
        ops: Vec<String>,
        /// Fail if the committed golden copy (tests/golden/project) is stale; write nothing.
        #[arg(long)]
        check: bool,
    },
    /// Build every generated kernel and op_host on the CPU twin, run the sweep, compare with
    /// the references and print the table; exits non-zero on any failure.
    Verify(app::args::VerifyArgs),
    /// The mutation suite (tests/mutants/mutants.toml): each mutant of a generated kernel is
    /// verified with `verify --from`; prints every verdict and the kill rate, exits 1 when a
    /// non-equivalent mutant survives.
    Mutants {
        /// Only mutants whose id or category contains this text, or whose op is this.
        #[arg(long)]
        filter: Option<String>,
        /// Another mutant list.
        #[arg(long)]
        list: Option<PathBuf>,
        /// quick (default) or full.
        #[arg(long, value_parser = app::args::parse_sweep)]
        sweep: Option<ascend_opgen::verify::Sweep>,
    },
    /// The whole test run (what CI runs): cargo test, the report's targets at the model shapes,
    /// the torch extension link check (check-torch-ext), the torch CPU backend; ends with passed/failed/ignored counts and skip reasons.
    Test,
    /// Build the generated project with CANN into custom_opp_<os>_<arch>.run, install it, build
    /// and install the torch extension, and print the lines to source. Without CANN: exit 2.
    BuildNpu {
        /// The SoC (SOC_VERSION spelling); its compute unit is what the kernels are built for.
        #[arg(long, default_value = ascend_opgen::plan::soc::DEFAULT_SOC)]
        soc: String,
        #[arg(long, value_delimiter = ',')]
        ops: Vec<String>,
        /// A spec file or directory instead of the catalogue in kernels/ (its project.toml
        /// names the vendor, package and torch library).
        #[arg(long)]
        specs: Option<PathBuf>,
        /// Install directory (default: target/opgen/install).
        #[arg(long)]
        install: Option<PathBuf>,
        /// The toolkit root (default: ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME, standard roots).
        #[arg(long)]
        cann: Option<PathBuf>,
        /// Print every command with its working directory and environment; run none.
        #[arg(long)]
        dry_run: bool,
    },
    /// Build the opgen_torch package for a CPU-only PyTorch: the generated kernels and op_host
    /// code compiled against the CPU twin, registered for the CPU, Meta and Autograd keys.
    TorchCpu {
        /// The Python whose torch the extension is built for (e.g. the cached venv's).
        #[arg(long)]
        python: PathBuf,
        /// The directory that receives the package (opgen_torch/ by default; use it as PYTHONPATH).
        #[arg(long)]
        out: PathBuf,
        #[arg(long, value_delimiter = ',')]
        ops: Vec<String>,
        /// A spec file or directory instead of the catalogue in kernels/ (its project.toml
        /// names the package and the torch library).
        #[arg(long)]
        specs: Option<PathBuf>,
        /// Also build the package's wheel into this directory.
        #[arg(long)]
        wheel: Option<PathBuf>,
    },
    /// Download (once) and unpack the torch and torch_npu wheels the generated extension builds
    /// against (cache: $OPGEN_CACHE, default ~/.cache/ascend-opgen); prints `export TORCH_PATH=…`
    /// and `export TORCH_NPU_PATH=…`.
    FetchWheels,
    /// The NPU-less torch extension check: generate the project, compile and link its torch/
    /// against the wheels, check its NEEDED entries, run the Meta kernels in the wheel's libtorch
    /// and the Python package's loader tests.
    CheckTorchExt {
        /// Work directory (default: target/opgen-torch-check).
        #[arg(long)]
        work: Option<PathBuf>,
    },
    /// The ACL bindings (cfg opgen_acl) built, linted and tested against the torch_npu wheel's
    /// ACL headers, in target/acl.
    CheckAcl,
    /// Syntax-check every generated file against a real CANN toolkit's headers.
    CheckCann {
        /// The toolkit root (default: ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME, standard roots).
        #[arg(long)]
        cann: Option<PathBuf>,
        /// A spec file or directory instead of the catalogue in kernels/.
        #[arg(long)]
        specs: Option<PathBuf>,
        #[arg(long, value_delimiter = ',')]
        ops: Vec<String>,
    },
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::GenOps { out, ops, check } => {
            app::gen::gen_ops(&GenOptions { specs: None, out, ops, check })
        }
        Command::Verify(args) => app::verify::verify(&args.options()),
        Command::Mutants { filter, list, sweep } => {
            app::mutants::mutants(&app::mutants::MutantsOptions { list, filter, sweep, ..Default::default() })
        }
        Command::Test => app::test_suite::run_tests(),
        Command::BuildNpu { soc, ops, specs, install, cann, dry_run } => {
            app::build_npu::build_npu(&BuildNpuOptions {
                soc,
                ops,
                specs,
                install,
                cann,
                dry_run,
                ..Default::default()
            })
        }
        Command::TorchCpu { python, out, ops, specs, wheel } => {
            app::torch_cpu::torch_cpu(&TorchCpuOptions { python, out, ops, specs, wheel })
        }
        Command::FetchWheels => app::host_checks::fetch_wheels(),
        Command::CheckTorchExt { work } => app::host_checks::check_torch_ext(work),
        Command::CheckAcl => app::host_checks::check_acl(),
        Command::CheckCann { cann, specs, ops } => {
            app::check_cann::check_cann(&CheckCannOptions { cann, specs, ops })
        }
    };
    std::process::exit(app::exit_code(result));
}
