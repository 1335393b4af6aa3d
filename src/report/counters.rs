//! The twin runner's per-core counters (the protocol's `CoreCounters`,
//! src/verify/protocol.rs) and what one launch adds up to.

use super::ReportError;
pub use crate::verify::protocol::CoreCounters;
use crate::verify::protocol::RunnerReport;
use serde::Serialize;
use std::collections::BTreeMap;

/// GM buffers the runner passes besides the spec's tensors; their traffic is reported apart.
pub const RUNNER_BUFFERS: [&str; 2] = ["workspace", "tiling"];

impl CoreCounters {
    /// The core moved data or computed something.
    pub fn has_work(&self) -> bool {
        self.transfers_in + self.transfers_out + self.vector_instructions.values().sum::<u64>() > 0
    }

    /// Copy-ins that had a predecessor in their queue: the ones that could overlap.
    pub fn copy_in_followers(&self) -> u64 {
        self.copy_in_total.saturating_sub(self.copy_in_queues)
    }

    /// Tiles per queue (copy-ins per queue that had any), at least 1.
    pub fn tiles(&self) -> u64 {
        (self.copy_in_total / self.copy_in_queues.max(1)).max(1)
    }

    /// `None` when no queue had a second copy-in (nothing to overlap); otherwise whether every
    /// copy-in that followed another one in its queue went into the other buffer.
    pub fn double_buffered(&self) -> Option<bool> {
        let followers = self.copy_in_followers();
        (followers > 0).then_some(self.copy_in_overlapped == followers)
    }

    pub fn vector_elements_total(&self) -> u64 {
        self.vector_elements.values().sum()
    }
}

/// One launch: the plan the runner reported and every core's counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Launch {
    pub block_dim: u64,
    pub tiling: BTreeMap<String, f64>,
    pub cores: Vec<CoreCounters>,
}

/// Per-tensor totals of a launch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TensorTraffic {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_transfers: u64,
    pub write_transfers: u64,
    /// Cores that read or wrote the tensor.
    pub cores: u64,
}

impl TensorTraffic {
    pub fn bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }
    pub fn transfers(&self) -> u64 {
        self.read_transfers + self.write_transfers
    }
}

impl Launch {
    /// From the runner's report: its plan and the counters of every core.
    pub fn from_report(report: &RunnerReport) -> Result<Launch, ReportError> {
        if !report.launched {
            return Err(ReportError::NotLaunched);
        }
        let counters = report.counters.as_ref().ok_or(ReportError::NoCounters)?;
        // Numeric fields only: an array field has no one value to print or check.
        let tiling = report.tiling.iter().filter_map(|(k, v)| v.as_f64().map(|v| (k.clone(), v))).collect();
        Ok(Launch { block_dim: report.block_dim, tiling, cores: counters.cores.clone() })
    }

    pub fn tiling_field(&self, name: &str) -> Option<f64> {
        self.tiling.get(name).copied()
    }

    /// Traffic per GM buffer over all cores (spec tensors and the runner's own buffers).
    pub fn traffic(&self) -> BTreeMap<String, TensorTraffic> {
        let mut out: BTreeMap<String, TensorTraffic> = BTreeMap::new();
        for c in &self.cores {
            for (name, b) in &c.gm_read_bytes {
                out.entry(name.clone()).or_default().read_bytes += b;
            }
            for (name, b) in &c.gm_write_bytes {
                out.entry(name.clone()).or_default().write_bytes += b;
            }
            for (name, n) in &c.gm_read_transfers {
                out.entry(name.clone()).or_default().read_transfers += n;
            }
            for (name, n) in &c.gm_write_transfers {
                out.entry(name.clone()).or_default().write_transfers += n;
            }
            let mut touched: Vec<&String> = c.gm_read_bytes.keys().chain(c.gm_write_bytes.keys()).collect();
            touched.sort();
            touched.dedup();
            for name in touched {
                out.entry(name.clone()).or_default().cores += 1;
            }
        }
        out
    }

    /// GM bytes moved for the spec's tensors (the runner's workspace and tiling buffers apart).
    pub fn tensor_bytes(&self) -> u64 {
        self.traffic()
            .iter()
            .filter(|(n, _)| !RUNNER_BUFFERS.contains(&n.as_str()))
            .map(|(_, t)| t.bytes())
            .sum()
    }

    pub fn cores_with_work(&self) -> u64 {
        self.cores.iter().filter(|c| c.has_work()).count() as u64
    }

    pub fn transfers(&self) -> u64 {
        self.cores.iter().map(|c| c.transfers_in + c.transfers_out).sum()
    }

    pub fn transfer_bytes(&self) -> u64 {
        self.cores.iter().map(|c| c.transfer_in_bytes + c.transfer_out_bytes).sum()
    }

    /// Mean bytes per GM↔UB transfer over every transfer of the launch.
    pub fn mean_transfer_bytes(&self) -> f64 {
        let n = self.transfers();
        if n == 0 {
            0.0
        } else {
            self.transfer_bytes() as f64 / n as f64
        }
    }

    /// The main stream: the spec tensor with the most GM bytes, and its mean transfer size.
    pub fn main_stream(&self) -> Option<(String, f64)> {
        self.traffic()
            .into_iter()
            .filter(|(n, t)| !RUNNER_BUFFERS.contains(&n.as_str()) && t.transfers() > 0)
            .max_by_key(|(_, t)| t.bytes())
            .map(|(n, t)| (n, t.bytes() as f64 / t.transfers() as f64))
    }

    pub fn ub_high_water_bytes(&self) -> u64 {
        self.cores.iter().map(|c| c.ub_high_water_bytes).max().unwrap_or(0)
    }

    /// (cores whose multi-tile queues were all double-buffered, cores with a multi-tile queue).
    pub fn double_buffering(&self) -> (u64, u64) {
        let multi: Vec<bool> = self.cores.iter().filter_map(CoreCounters::double_buffered).collect();
        (multi.iter().filter(|b| **b).count() as u64, multi.len() as u64)
    }

    /// Vector instructions and elements per API over all cores.
    pub fn vector(&self) -> BTreeMap<String, (u64, u64)> {
        let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for c in &self.cores {
            for (api, n) in &c.vector_instructions {
                out.entry(api.clone()).or_default().0 += n;
            }
            for (api, n) in &c.vector_elements {
                out.entry(api.clone()).or_default().1 += n;
            }
        }
        out
    }

    pub fn scalar_accesses(&self) -> (u64, u64) {
        (
            self.cores.iter().map(|c| c.scalar_gm_accesses).sum(),
            self.cores.iter().map(|c| c.scalar_ub_accesses).sum(),
        )
    }

    pub fn flag_waits(&self) -> BTreeMap<String, u64> {
        sum_maps(self.cores.iter().map(|c| &c.flag_waits))
    }

    /// The waits AscendC APIs perform inside (dav_c220), all cores.
    pub fn hidden_flag_waits(&self) -> BTreeMap<String, u64> {
        sum_maps(self.cores.iter().map(|c| &c.hidden_flag_waits))
    }
}

fn sum_maps<'a>(maps: impl Iterator<Item = &'a BTreeMap<String, u64>>) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for m in maps {
        for (e, n) in m {
            *out.entry(e.clone()).or_default() += n;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn core(i: u64, total: u64, overlapped: u64, queues: u64) -> Value {
        serde_json::json!({
            "core": i, "gm_read_bytes": {"x": 1024, "tiling": 40}, "gm_write_bytes": {"y": 1024},
            "gm_read_transfers": {"x": 2}, "gm_write_transfers": {"y": 2},
            "transfers_in": 2, "transfer_in_bytes": 1024, "transfers_out": 2, "transfer_out_bytes": 1024,
            "vector_instructions": {"Muls": 2}, "vector_elements": {"Muls": 256},
            "ub_high_water_bytes": 4096 + i, "copy_in_total": total, "copy_in_overlapped": overlapped,
            "copy_in_queues": queues, "transfer_in_min_bytes": 512, "transfer_in_max_bytes": 512,
            "transfer_out_min_bytes": 512, "transfer_out_max_bytes": 512, "scalar_gm_accesses": 0,
            "scalar_ub_accesses": 0, "queue_handoffs": 4, "barriers": 0, "flag_waits": {},
            "hidden_flag_waits": {}
        })
    }

    /// A runner report with these cores (None: not launched, no counters).
    fn report(block_dim: u64, tiling: Value, cores: Option<Vec<Value>>) -> RunnerReport {
        let mut doc = serde_json::json!({
            "op": "OpgenX", "soc": "Ascend910B2", "block_dim": block_dim, "tiling_key": 0,
            "workspace_bytes": 0, "tiling_data_bytes": 4, "tiling": tiling, "outputs": [],
            "launched": cores.is_some()
        });
        if let Some(cores) = cores {
            doc["counters"] = serde_json::json!({ "cores": cores });
        }
        RunnerReport::from_value(&doc).unwrap()
    }

    #[test]
    fn a_launch_adds_up_over_its_cores() {
        let r = report(
            3,
            serde_json::json!({"mode": 1.0}),
            Some(vec![core(0, 2, 1, 1), core(1, 2, 0, 1), core(2, 1, 0, 1)]),
        );
        let launch = Launch::from_report(&r).unwrap();
        assert_eq!(launch.cores.len(), 3);
        assert_eq!(launch.block_dim, 3);
        assert_eq!(launch.tiling_field("mode"), Some(1.0));
        assert_eq!(launch.tensor_bytes(), 3 * 2048);
        assert_eq!(launch.traffic()["tiling"].read_bytes, 120);
        assert_eq!(launch.traffic()["x"].cores, 3);
        assert_eq!(launch.cores_with_work(), 3);
        assert_eq!(launch.mean_transfer_bytes(), 512.0);
        assert_eq!(launch.main_stream().unwrap().1, 512.0);
        assert_eq!(launch.ub_high_water_bytes(), 4098);
        // Core 0 double-buffered its second tile, core 1 did not, core 2 had one tile.
        assert_eq!(launch.double_buffering(), (1, 2));
        assert_eq!(launch.vector()["Muls"], (6, 768));
    }

    #[test]
    fn kernel_and_hidden_flag_waits_are_kept_apart() {
        let mut a = core(0, 1, 0, 1);
        a["flag_waits"] = serde_json::json!({"V_S": 2});
        a["hidden_flag_waits"] = serde_json::json!({"V_S": 3, "S_V": 3, "S_MTE3": 3});
        let mut b = core(1, 1, 0, 1);
        b["hidden_flag_waits"] = serde_json::json!({"V_S": 1});
        let launch = Launch::from_report(&report(2, serde_json::json!({}), Some(vec![a, b]))).unwrap();
        assert_eq!(launch.flag_waits()["V_S"], 2);
        assert_eq!(launch.hidden_flag_waits()["V_S"], 4);
        assert_eq!(launch.hidden_flag_waits()["S_MTE3"], 3);
        assert!(!launch.flag_waits().contains_key("S_V"));
    }

    #[test]
    fn an_empty_launch_is_an_error() {
        let err = Launch::from_report(&report(1, serde_json::json!({}), None)).unwrap_err();
        assert!(matches!(err, ReportError::NotLaunched), "{err}");
    }
}
