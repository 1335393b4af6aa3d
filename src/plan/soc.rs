//! The SoCs the generator plans for. Core counts, UB sizes and clocks are read from CANN
//! 8.1.RC1's `data/platform_config/<SoC>.ini` (research/ascendc-api.md §6.1). HBM bandwidth
//! has no official public figure: those numbers are marked as assumptions.
//!
//! The performance model of `opgen report` (src/report/model.rs, ARCHITECTURE.md "Performance
//! model") reads its hardware numbers from here:
//! - `gm_read_bytes_per_cycle` / `gm_write_bytes_per_cycle` are the .ini's
//!   `[AICoreMemoryRates] ddr_read_rate` and `ub_to_ddr_rate` (910B1..B4, 910_93: 32 and 64;
//!   310P3: 17 and 17). The .ini gives no unit. **Assumption:** bytes per core clock cycle per
//!   core, at `clock_mhz` (so 32 B/cycle x 1.8 GHz = 57.6 GB/s of MTE2 per vector core; 48 cores
//!   together could ask for 2.8 TB/s, more than the HBM delivers, which is what one expects).
//! - `vector_bytes_per_cycle`: one 256-byte repeat per cycle (`ONE_REPEAT_BYTE_SIZE` = 256,
//!   `vec_calc_size=128` fp16 elements in the .ini). **Assumption:** every vector API, including
//!   Exp/Ln/Div and ReduceSum, retires one repeat per cycle (optimistic for transcendentals).
//! - `l2_bytes`: the .ini's `l2_size`; the model does not use it (no L2 hits are assumed).

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Soc {
    /// The SOC_VERSION spelling (`Ascend910B2`).
    pub name: &'static str,
    /// CANN compute unit (`ascend910b`), the value of ASCEND_COMPUTE_UNIT / AddConfig.
    pub compute_unit: &'static str,
    /// Vector (AIV) cores: the block dim ceiling of an AIV-only kernel.
    pub vector_cores: u32,
    /// Physical unified buffer per vector core, bytes.
    pub ub_bytes: u64,
    /// Vector core clock, MHz (`cube_freq` of the .ini).
    pub clock_mhz: u32,
    /// Device HBM bandwidth, GB/s.
    pub hbm_gbps: f64,
    /// False when `hbm_gbps` is an assumption rather than a published figure.
    pub hbm_gbps_sourced: bool,
    /// Whether DataCopyPad (unaligned GM copies) exists.
    pub has_data_copy_pad: bool,
    /// L2 cache bytes (`l2_size` of the .ini). Reported, not modelled.
    pub l2_bytes: u64,
    /// GM→UB (MTE2) bytes per cycle per core: the .ini's `ddr_read_rate` (unit assumed).
    pub gm_read_bytes_per_cycle: u32,
    /// UB→GM (MTE3) bytes per cycle per core: the .ini's `ub_to_ddr_rate` (unit assumed).
    pub gm_write_bytes_per_cycle: u32,
    /// Vector bytes per cycle per core: one 256-byte repeat (assumption, see the module doc).
    pub vector_bytes_per_cycle: u32,
}

impl Soc {
    /// Per-core MTE2 rate, GB/s, under the unit assumption above.
    pub fn gm_read_gbps_per_core(&self) -> f64 {
        f64::from(self.gm_read_bytes_per_cycle) * f64::from(self.clock_mhz) / 1000.0
    }
    /// Per-core MTE3 rate, GB/s, under the unit assumption above.
    pub fn gm_write_gbps_per_core(&self) -> f64 {
        f64::from(self.gm_write_bytes_per_cycle) * f64::from(self.clock_mhz) / 1000.0
    }
    /// float32 elements one vector core processes per cycle (a 256-byte repeat = 64 floats).
    pub fn vector_f32_per_cycle(&self) -> f64 {
        f64::from(self.vector_bytes_per_cycle) / 4.0
    }
}

/// The top of UB that some APIs use as scratch (Select, Compare, int32 binary ops on dav-c220,
/// TMP_UB_OFFSET): every generated TilingFunc plans below it (`UB_RESERVED_BYTES` in the host
/// templates comes from here).
pub const UB_API_SCRATCH_BYTES_A2: u64 = 8 * 1024;

/// The planning budget of UB per core: the 192 KiB UB less the API scratch, so InitBuffer
/// allocations stay below 184 KiB (research/ascendc-api.md §6.2).
pub const UB_PLAN_BYTES_A2: u64 = 192 * 1024 - UB_API_SCRATCH_BYTES_A2;

const MIB: u64 = 1024 * 1024;

const fn a2(name: &'static str, cores: u32, clock: u32, hbm: f64, l2_mib: u64) -> Soc {
    Soc {
        name,
        compute_unit: "ascend910b",
        vector_cores: cores,
        ub_bytes: 196_608,
        clock_mhz: clock,
        hbm_gbps: hbm,
        hbm_gbps_sourced: false,
        has_data_copy_pad: true,
        l2_bytes: l2_mib * MIB,
        gm_read_bytes_per_cycle: 32,
        gm_write_bytes_per_cycle: 64,
        vector_bytes_per_cycle: 256,
    }
}

/// Every SoC `--soc` accepts. HBM figures: assumed 1600 GB/s for the 64 GiB parts and
/// 800 GB/s for the 32 GiB B4 parts, A3 as 1600 GB/s per die; 310P3 204.8 GB/s (LPDDR4X).
/// Per-core rates (ddr_read_rate 32, ub_to_ddr_rate 64 on every A2/A3 part; 17/17 on 310P3's
/// AI cores) and L2 sizes are the .ini values.
pub const SOCS: &[Soc] = &[
    a2("Ascend910B1", 48, 1850, 1600.0, 192),
    a2("Ascend910B2", 48, 1800, 1600.0, 192),
    a2("Ascend910B2C", 48, 1800, 1600.0, 192),
    a2("Ascend910B3", 40, 1800, 1600.0, 192),
    a2("Ascend910B4", 40, 1500, 800.0, 96),
    a2("Ascend910B4-1", 40, 1500, 800.0, 168),
    Soc { compute_unit: "ascend910_93", ..a2("Ascend910_9392", 48, 1850, 1600.0, 192) },
    Soc { compute_unit: "ascend910_93", ..a2("Ascend910_9391", 48, 1850, 1600.0, 192) },
    Soc {
        name: "Ascend310P3",
        compute_unit: "ascend310p",
        vector_cores: 8,
        ub_bytes: 262_144,
        clock_mhz: 1060,
        hbm_gbps: 204.8,
        hbm_gbps_sourced: false,
        has_data_copy_pad: false,
        l2_bytes: 16 * MIB,
        gm_read_bytes_per_cycle: 17,
        gm_write_bytes_per_cycle: 17,
        vector_bytes_per_cycle: 256,
    },
];

/// The SoC the twin models unless told otherwise.
pub const DEFAULT_SOC: &str = "Ascend910B2";

/// A SoC name the table does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSoc {
    pub name: String,
}

impl std::fmt::Display for UnknownSoc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = &self.name;
        let known: Vec<&str> = SOCS.iter().map(|s| s.name).collect();
        let hint = if name.eq_ignore_ascii_case("Ascend910B") || name.eq_ignore_ascii_case("Ascend910") {
            " (`Ascend910B` with no digit is the first-generation Ascend 910 (dav-c100, no vector cores), not Atlas A2: pick Ascend910B1..B4)"
        } else {
            ""
        };
        write!(f, "unknown SoC `{name}`{hint}; known: {}", known.join(", "))
    }
}

impl std::error::Error for UnknownSoc {}

/// Looks a SoC up by name (case-insensitive). `Ascend910B` without a digit is the first-
/// generation Ascend 910, not an A2 part: the error says so.
pub fn find(name: &str) -> Result<&'static Soc, UnknownSoc> {
    SOCS.iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| UnknownSoc { name: name.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_910b_is_rejected_with_the_reason() {
        let err = find("Ascend910B").unwrap_err().to_string();
        assert!(err.contains("first-generation"), "{err}");
        assert_eq!(find("ascend910b3").unwrap().vector_cores, 40);
    }

    #[test]
    fn per_core_rates_follow_the_ini_under_the_unit_assumption() {
        let b2 = find("Ascend910B2").unwrap();
        approx::assert_relative_eq!(b2.gm_read_gbps_per_core(), 57.6, max_relative = 1e-12);
        approx::assert_relative_eq!(b2.gm_write_gbps_per_core(), 115.2, max_relative = 1e-12);
        assert_eq!(b2.vector_f32_per_cycle(), 64.0);
        assert_eq!(find("Ascend910B4").unwrap().l2_bytes, 96 * MIB);
    }
}
