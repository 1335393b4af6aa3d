//! Command-line value parsers shared by `opgen` and `cargo xtask`, so both accept and reject
//! the same spellings with the same message.

use crate::verify::Sweep;
use crate::DType;

/// A command-line value that names nothing known: what kind of value, the text, the spellings
/// accepted. clap prints it after the option (`invalid value 'x' for '--dtypes': ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownValue {
    pub what: &'static str,
    pub text: String,
    pub accepted: &'static str,
}

impl UnknownValue {
    pub fn new(what: &'static str, text: &str, accepted: &'static str) -> Self {
        UnknownValue { what, text: text.to_string(), accepted }
    }
}

impl std::fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown {} `{}` ({})", self.what, self.text, self.accepted)
    }
}

impl std::error::Error for UnknownValue {}

pub fn parse_dtype(text: &str) -> Result<DType, UnknownValue> {
    DType::parse(text).ok_or_else(|| UnknownValue::new("dtype", text, "f16, bf16, f32, i8, i32, i64"))
}

pub fn parse_sweep(text: &str) -> Result<Sweep, UnknownValue> {
    Sweep::parse(text).ok_or_else(|| UnknownValue::new("sweep", text, "quick, full"))
}

/// The options of `opgen verify` and `cargo xtask verify`: one definition, so the two commands
/// take the same flags with the same defaults and help.
#[derive(Debug, Clone, clap::Args)]
pub struct VerifyArgs {
    /// A spec file or directory instead of the catalogue in kernels/.
    #[arg(long)]
    pub specs: Option<std::path::PathBuf>,
    /// Verify the kernels of an existing generated project (e.g. one edited by hand) instead of
    /// rendering them: its op_kernel/ and op_host/ files are built against the twin and checked
    /// against the references, which still come from the ops' names.
    #[arg(long)]
    pub from: Option<std::path::PathBuf>,
    /// Only these ops, comma separated.
    #[arg(long, value_delimiter = ',')]
    pub ops: Vec<String>,
    /// Only these dtypes (of the first input), comma separated: f16,bf16,f32.
    #[arg(long, value_delimiter = ',', value_parser = parse_dtype)]
    pub dtypes: Vec<DType>,
    /// quick (default) or full.
    #[arg(long, default_value = "quick", value_parser = parse_sweep)]
    pub sweep: Sweep,
    /// Build the twin without AddressSanitizer/UBSan (faster, less strict).
    #[arg(long)]
    pub no_sanitize: bool,
    #[arg(long, default_value = crate::plan::soc::DEFAULT_SOC)]
    pub soc: String,
    /// Runner processes at once.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Perturbed numerics: move the float32 results of Exp, Ln, Sqrt, Rsqrt, Reciprocal and Div
    /// by up to K float32 ULP (deterministic), as hardware that is not libm-exact would.
    #[arg(long, value_name = "K")]
    pub perturb: Option<u32>,
    /// Numeric profiles the A2 docs leave open: `ftz` (float32 subnormals flushed to zero),
    /// `saturate` (overflow to the largest finite value, NaN to 0); comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PROFILE")]
    pub profile: Vec<crate::verify::NumericProfile>,
    /// Stop at the first failing case (later cases and dtype combinations are not run).
    #[arg(long)]
    pub fail_fast: bool,
}

impl VerifyArgs {
    pub fn options(self) -> crate::verify::VerifyOptions {
        crate::verify::VerifyOptions {
            specs: self.specs,
            from: self.from,
            ops: self.ops,
            dtypes: self.dtypes,
            sweep: self.sweep,
            sanitize: !self.no_sanitize,
            soc: self.soc,
            jobs: self.jobs,
            perturb: self.perturb,
            profiles: self.profile,
            fail_fast: self.fail_fast,
            ..Default::default()
        }
    }
}
