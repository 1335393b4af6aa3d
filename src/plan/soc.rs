//! The SoCs the generator plans for. Core counts, UB sizes and clocks are read from CANN
//! 8.1.RC1's `data/platform_config/<SoC>.ini` (research/ascendc-api.md §6.1). HBM bandwidth
//! has no official public figure: those numbers are marked as assumptions.

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
}

/// The planning budget of UB per core: the top 8 KiB of the 192 KiB UB is scratch for some
/// APIs (Select, Compare, int32 binary ops on dav-c220), so InitBuffer allocations stay
/// below 184 KiB (research/ascendc-api.md §6.2).
pub const UB_PLAN_BYTES_A2: u64 = 184 * 1024;

const fn a2(name: &'static str, cores: u32, clock: u32, hbm: f64) -> Soc {
    Soc {
        name,
        compute_unit: "ascend910b",
        vector_cores: cores,
        ub_bytes: 196_608,
        clock_mhz: clock,
        hbm_gbps: hbm,
        hbm_gbps_sourced: false,
        has_data_copy_pad: true,
    }
}

/// Every SoC `--soc` accepts. HBM figures: assumed 1600 GB/s for the 64 GiB parts and
/// 800 GB/s for the 32 GiB B4 parts, A3 as 1600 GB/s per die; 310P3 204.8 GB/s (LPDDR4X).
pub const SOCS: &[Soc] = &[
    a2("Ascend910B1", 48, 1850, 1600.0),
    a2("Ascend910B2", 48, 1800, 1600.0),
    a2("Ascend910B2C", 48, 1800, 1600.0),
    a2("Ascend910B3", 40, 1800, 1600.0),
    a2("Ascend910B4", 40, 1500, 800.0),
    a2("Ascend910B4-1", 40, 1500, 800.0),
    Soc { compute_unit: "ascend910_93", ..a2("Ascend910_9392", 48, 1850, 1600.0) },
    Soc { compute_unit: "ascend910_93", ..a2("Ascend910_9391", 48, 1850, 1600.0) },
    Soc {
        name: "Ascend310P3",
        compute_unit: "ascend310p",
        vector_cores: 8,
        ub_bytes: 262_144,
        clock_mhz: 1060,
        hbm_gbps: 204.8,
        hbm_gbps_sourced: false,
        has_data_copy_pad: false,
    },
];

/// The SoC the twin models unless told otherwise.
pub const DEFAULT_SOC: &str = "Ascend910B2";

/// Looks a SoC up by name (case-insensitive). `Ascend910B` without a digit is the first-
/// generation Ascend 910, not an A2 part: the error says so.
pub fn find(name: &str) -> Result<&'static Soc, String> {
    if let Some(soc) = SOCS.iter().find(|s| s.name.eq_ignore_ascii_case(name)) {
        return Ok(soc);
    }
    let known: Vec<&str> = SOCS.iter().map(|s| s.name).collect();
    let hint = if name.eq_ignore_ascii_case("Ascend910B") || name.eq_ignore_ascii_case("Ascend910") {
        " (`Ascend910B` with no digit is the first-generation Ascend 910 (dav-c100, no vector cores), not Atlas A2: pick Ascend910B1..B4)"
    } else {
        ""
    };
    Err(format!("unknown SoC `{name}`{hint}; known: {}", known.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_910b_is_rejected_with_the_reason() {
        let err = find("Ascend910B").unwrap_err();
        assert!(err.contains("first-generation"), "{err}");
        assert_eq!(find("ascend910b3").unwrap().vector_cores, 40);
    }
}
