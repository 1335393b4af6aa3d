//! The twin runner's report (`--report <path.json>`): what the runner writes
//! (kernels/twin/src/host_report.cpp `plan_json`, kernels/twin/src/runtime_counters.cpp
//! `write_counters`, both through the one JSON writer, kernels/twin/src/host_json.cpp) and what
//! Rust reads, as serde structs. Every field is required and no other is accepted
//! (`deny_unknown_fields`), so a field renamed, added or dropped on one side of the protocol
//! fails to parse, naming the field, instead of reading as 0 or being ignored.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The whole report of one runner call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerReport {
    /// The op type (`OpgenRmsNorm`).
    pub op: String,
    pub soc: String,
    pub block_dim: u64,
    pub tiling_key: u64,
    pub workspace_bytes: u64,
    pub tiling_data_bytes: u64,
    /// The TilingFunc's fields by name: numbers, booleans, arrays of them (the op's own
    /// fields, named by its family's `TILING_FIELDS`), or the strings "nan", "inf", "-inf".
    pub tiling: BTreeMap<String, serde_json::Value>,
    /// The InferShape/InferDataType result per output.
    pub outputs: Vec<OutputPlan>,
    /// Whether the kernel ran (false under --plan-only or an empty launch).
    pub launched: bool,
    /// Present exactly when the kernel ran.
    #[serde(default)]
    pub counters: Option<Counters>,
}

/// One output as the host code planned it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputPlan {
    pub name: String,
    /// The dtype in the spelling `DType::parse` reads (`float16`, `int8`, ...).
    pub dtype: String,
    pub shape: Vec<usize>,
}

/// `{"cores": [...]}`: the counters of every simulated core that ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counters {
    pub cores: Vec<CoreCounters>,
}

/// The counters of one simulated core (kernels/twin/include/opgen_twin/runtime.h `Counters`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreCounters {
    pub core: u64,
    pub gm_read_bytes: BTreeMap<String, u64>,
    pub gm_write_bytes: BTreeMap<String, u64>,
    pub gm_read_transfers: BTreeMap<String, u64>,
    pub gm_write_transfers: BTreeMap<String, u64>,
    pub transfers_in: u64,
    pub transfer_in_bytes: u64,
    pub transfers_out: u64,
    pub transfer_out_bytes: u64,
    pub transfer_in_min_bytes: u64,
    pub transfer_in_max_bytes: u64,
    pub transfer_out_min_bytes: u64,
    pub transfer_out_max_bytes: u64,
    pub vector_instructions: BTreeMap<String, u64>,
    pub vector_elements: BTreeMap<String, u64>,
    pub scalar_gm_accesses: u64,
    pub scalar_ub_accesses: u64,
    pub ub_high_water_bytes: u64,
    pub queue_handoffs: u64,
    pub barriers: u64,
    pub copy_in_overlapped: u64,
    pub copy_in_total: u64,
    pub copy_in_queues: u64,
    pub flag_waits: BTreeMap<String, u64>,
    /// SetFlag/WaitFlag pairs inside AscendC APIs on dav_c220 (ReduceSum/ReduceMax/ReduceMin:
    /// V_S, S_V, S_MTE3 per call), apart from the kernel's own `flag_waits`.
    pub hidden_flag_waits: BTreeMap<String, u64>,
}

/// A report that does not match the protocol: serde's message names the field (`unknown field
/// `pipe_barriers``, `missing field `copy_in_total``) with its line and column.
#[derive(Debug)]
pub struct ProtocolError {
    pub source: serde_json::Error,
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the twin runner's report does not match the protocol (src/verify/protocol.rs): {}",
            self.source
        )
    }
}

impl std::error::Error for ProtocolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl RunnerReport {
    /// Reads the runner's JSON text.
    pub fn parse(text: &str) -> Result<RunnerReport, ProtocolError> {
        serde_json::from_str(text).map_err(|source| ProtocolError { source })
    }

    /// Reads an already parsed document (the `CaseRun::report` tests index into).
    pub fn from_value(value: &serde_json::Value) -> Result<RunnerReport, ProtocolError> {
        RunnerReport::deserialize(value).map_err(|source| ProtocolError { source })
    }
}
