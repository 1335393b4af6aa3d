//! `opgen report --calibration FILE` (issue 26 item 5): the cycle model against real
//! measurements. Each point of the fixture (tests/perf-calibration/cann-bench-910b2.csv: measured
//! durations of CANN's own RmsNorm and SwiGlu kernels on 910B2, with their sources) is modelled
//! with the CANN design the measured torch_npu call runs ([`crate::perf::cann`]), and the report
//! prints measured / modelled mid per point, whether the measurement lies inside the modelled
//! low–high band, the in-band count, and the error and band width per regime: the regimes are
//! where the model's unknowns act differently (per-row scalar round trips, batched short rows,
//! short DMA blocks, HBM-bound streams), so one regime's error says which constants are off.

use crate::perf::{self, cann, CannModelled};
use crate::plan::soc::Soc;
use crate::DType;
use serde::Serialize;

/// A CANN built-in the fixture has measurements of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Builtin {
    RmsNorm,
    SwiGlu,
}

impl Builtin {
    fn parse(text: &str) -> Option<Builtin> {
        match text {
            "RmsNorm" => Some(Builtin::RmsNorm),
            "SwiGlu" => Some(Builtin::SwiGlu),
            _ => None,
        }
    }
}

/// One measured kernel duration (a row of the fixture with `real = yes`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    pub builtin: Builtin,
    pub case: String,
    /// The first input's shape (RmsNorm's x; SwiGlu's input holding gate and up).
    pub shape: Vec<u64>,
    pub dtype: DType,
    /// SwiGlu: the axis whose halves are gate and up; RmsNorm: the last axis.
    pub split_dim: usize,
    /// The kernels the measurement times (`RmsNormx1`, `Slice+SwiGlux1`).
    pub kernels: String,
    pub measured_us: f64,
    pub source: String,
}

impl Point {
    /// `32x128x768 bf16` for tables and messages.
    pub fn label(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(u64::to_string).collect();
        format!("{:?} case {} {} {}", self.builtin, self.case, dims.join("x"), self.dtype.short_name())
    }

    /// Rows and columns as the built-in's tiling sees them: RmsNorm normalises the last axis;
    /// SwiGlu's tiling folds the axes before `split_dim` into rows and the rest into twice the
    /// columns (ops-nn swi_glu_tiling.cpp `SetTotalShape`).
    fn rows_cols(&self) -> (u64, u64) {
        let before: u64 = self.shape[..self.split_dim].iter().product();
        let after: u64 = self.shape[self.split_dim..].iter().product();
        match self.builtin {
            Builtin::RmsNorm => (before, after),
            Builtin::SwiGlu => (before, after / 2),
        }
    }

    /// Bytes a single pass moves through HBM: RmsNorm x in and y out, SwiGlu the input in and
    /// half of it out (rstd and gamma are < 1%).
    fn stream_bytes(&self) -> u64 {
        let n: u64 = self.shape.iter().product::<u64>() * self.dtype.size_bytes() as u64;
        match self.builtin {
            Builtin::RmsNorm => 2 * n,
            Builtin::SwiGlu => n + n / 2,
        }
    }

    /// Whether the measurement times the built-in alone (a `Slice+SwiGlu` case also times the
    /// copy that makes a middle-axis split contiguous, which no design here models).
    fn single_kernel(&self) -> bool {
        let name = match self.builtin {
            Builtin::RmsNorm => "RmsNorm",
            Builtin::SwiGlu => "SwiGlu",
        };
        self.kernels == format!("{name}x1")
    }
}

/// Why the fixture could not be read: the file, line and field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for FixtureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

impl std::error::Error for FixtureError {}

/// The fixture's columns this reader needs (others are documentation for the reader).
const NEEDED: [&str; 8] =
    ["builtin", "case", "shape", "dtype", "split_dim", "kernels", "measured_us", "real"];

/// Reads the fixture: `#` lines are comments, the first other line names the columns, fields
/// hold no commas. Rows with `real` other than `yes` (a capped or derived value) are dropped.
pub fn parse_fixture(file: &str, text: &str) -> Result<Vec<Point>, FixtureError> {
    let err = |line: usize, message: String| FixtureError { file: file.to_string(), line, message };
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    let (header_at, header) = lines.next().ok_or_else(|| err(1, "no header line".into()))?;
    let columns: Vec<&str> = header.split(',').map(str::trim).collect();
    let mut index = std::collections::BTreeMap::new();
    for name in NEEDED {
        let at = columns
            .iter()
            .position(|c| *c == name)
            .ok_or_else(|| err(header_at + 1, format!("no `{name}` column in the header")))?;
        index.insert(name, at);
    }
    let mut points = Vec::new();
    for (at, line) in lines {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != columns.len() {
            return Err(err(at + 1, format!("{} fields, the header has {}", fields.len(), columns.len())));
        }
        let field = |name: &str| fields[index[name]];
        let bad = |name: &str, why: &str| err(at + 1, format!("field `{name}` = `{}`: {why}", field(name)));
        if field("real") != "yes" {
            continue;
        }
        let builtin =
            Builtin::parse(field("builtin")).ok_or_else(|| bad("builtin", "not RmsNorm or SwiGlu"))?;
        let shape = field("shape")
            .split('x')
            .map(|d| d.parse::<u64>().ok().filter(|&d| d > 0))
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| bad("shape", "not dims like 32x128x768"))?;
        let dtype = DType::parse(field("dtype"))
            .filter(|d| d.is_float())
            .ok_or_else(|| bad("dtype", "not f16, bf16 or f32"))?;
        let split_dim = field("split_dim")
            .parse::<usize>()
            .ok()
            .filter(|&d| d < shape.len())
            .ok_or_else(|| bad("split_dim", "not an axis of the shape"))?;
        if builtin == Builtin::RmsNorm && split_dim + 1 != shape.len() {
            return Err(bad("split_dim", "RmsNorm normalises the last axis"));
        }
        if builtin == Builtin::SwiGlu && shape[split_dim..].iter().product::<u64>() % 2 != 0 {
            return Err(bad("shape", "SwiGlu's split axes must hold an even number of elements"));
        }
        let measured_us = field("measured_us")
            .parse::<f64>()
            .ok()
            .filter(|t| *t > 0.0 && t.is_finite())
            .ok_or_else(|| bad("measured_us", "not a positive number of µs"))?;
        let source = columns
            .iter()
            .position(|c| *c == "measured_source")
            .map(|i| fields[i].to_string())
            .unwrap_or_default();
        points.push(Point {
            builtin,
            case: field("case").to_string(),
            shape,
            dtype,
            split_dim,
            kernels: field("kernels").to_string(),
            measured_us,
            source,
        });
    }
    Ok(points)
}

/// Where the model's unknowns act differently; a point belongs to the first that applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Regime {
    /// RmsNorm Normal: one row per pass, the scalar unit waits for every row's sum.
    RmsNormPerRow,
    /// ≥ 50 MB through HBM: the sustained bandwidth decides.
    Stream,
    /// RmsNorm MergeN: rows batched per pass, vector rstd.
    RmsNormBatchedRows,
    /// SwiGlu with half rows under 512 B: every tile is many short DMA blocks.
    SwiGluShortRows,
    /// SwiGlu with longer rows below the stream size.
    SwiGluTiles,
}

/// Bytes through HBM from which a point is a stream (issue 26: "≥ 50 MB streams").
pub const STREAM_BYTES: u64 = 50_000_000;
/// A SwiGlu half row shorter than this is one short strided block per row.
pub const SHORT_ROW_BYTES: u64 = 512;

impl Regime {
    pub fn name(self) -> &'static str {
        match self {
            Regime::Stream => "streams >= 50 MB",
            Regime::RmsNormPerRow => "RmsNorm per-row (Normal)",
            Regime::RmsNormBatchedRows => "RmsNorm batched short rows (MergeN)",
            Regime::SwiGluShortRows => "SwiGlu half rows < 512 B",
            Regime::SwiGluTiles => "SwiGlu tiles < 50 MB",
        }
    }

    fn of(point: &Point, mode: &str) -> Regime {
        let (_, cols) = point.rows_cols();
        match point.builtin {
            // Per-row rows stay per-row at any size: the scalar round trip per row, not HBM,
            // is what the design spends its time on.
            Builtin::RmsNorm if mode == "Normal" => Regime::RmsNormPerRow,
            _ if point.stream_bytes() >= STREAM_BYTES => Regime::Stream,
            Builtin::RmsNorm => Regime::RmsNormBatchedRows,
            Builtin::SwiGlu if cols * (point.dtype.size_bytes() as u64) < SHORT_ROW_BYTES => {
                Regime::SwiGluShortRows
            }
            Builtin::SwiGlu => Regime::SwiGluTiles,
        }
    }
}

/// One point against its modelled design.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compared {
    pub point: Point,
    pub regime: Regime,
    pub mode: String,
    pub low_us: f64,
    pub mid_us: f64,
    pub high_us: f64,
    /// measured / modelled mid (> 1: the model is too fast).
    pub ratio: f64,
    pub in_band: bool,
}

/// A regime's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegimeSummary {
    pub regime: Regime,
    pub name: &'static str,
    pub points: usize,
    pub in_band: usize,
    /// measured / modelled mid: median, smallest, largest.
    pub ratio_median: f64,
    pub ratio_min: f64,
    pub ratio_max: f64,
    /// Median of modelled high / low: how wide the band is.
    pub band_median: f64,
}

/// A point the comparison leaves out, with the reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    pub point: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    pub soc: &'static str,
    pub points: Vec<Compared>,
    pub skipped: Vec<Skipped>,
    pub in_band: usize,
    pub ratio_median: f64,
    pub regimes: Vec<RegimeSummary>,
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Why a point has no modelled time: no design covers its shape, or the simulator refused it.
#[derive(Debug, Clone, PartialEq)]
pub enum NotModelled {
    Design(cann::NoDesign),
    Perf(perf::PerfError),
}

impl std::fmt::Display for NotModelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotModelled::Design(e) => e.fmt(f),
            NotModelled::Perf(e) => e.fmt(f),
        }
    }
}

/// The CANN design the point's measured call runs (npu_rms_norm: RmsNorm, npu_swiglu: SwiGlu).
fn model(soc: &Soc, point: &Point) -> Result<CannModelled, NotModelled> {
    let (rows, cols) = point.rows_cols();
    let sz = point.dtype.size_bytes() as u64;
    let design = match point.builtin {
        Builtin::RmsNorm => cann::rms_norm(soc, &point.shape, sz),
        Builtin::SwiGlu => cann::swiglu(soc, rows, cols, sz),
    }
    .map_err(NotModelled::Design)?;
    // cann-bench times each kernel repeated alone (docs/calibration.md).
    perf::cann_design_as(soc, &design, perf::sim::Residency::RepeatedAlone).map_err(NotModelled::Perf)
}

/// Models every point and sums the figures up per regime.
pub fn compare(soc: &'static Soc, points: &[Point]) -> Calibration {
    let mut compared = Vec::new();
    let mut skipped = Vec::new();
    for point in points {
        if !point.single_kernel() {
            skipped.push(Skipped {
                point: point.label(),
                reason: format!("times {} (no design models the extra kernel)", point.kernels),
            });
            continue;
        }
        match model(soc, point) {
            Ok(m) => {
                let t = m.modelled.time_us;
                compared.push(Compared {
                    point: point.clone(),
                    regime: Regime::of(point, &m.mode),
                    mode: m.mode.clone(),
                    low_us: t.low,
                    mid_us: t.mid,
                    high_us: t.high,
                    ratio: point.measured_us / t.mid,
                    in_band: t.low <= point.measured_us && point.measured_us <= t.high,
                });
            }
            Err(e) => skipped.push(Skipped { point: point.label(), reason: e.to_string() }),
        }
    }
    let mut regimes = Vec::new();
    let mut kinds: Vec<Regime> = compared.iter().map(|c| c.regime).collect();
    kinds.sort();
    kinds.dedup();
    for regime in kinds {
        let of: Vec<&Compared> = compared.iter().filter(|c| c.regime == regime).collect();
        let mut ratios: Vec<f64> = of.iter().map(|c| c.ratio).collect();
        let mut bands: Vec<f64> = of.iter().map(|c| c.high_us / c.low_us).collect();
        regimes.push(RegimeSummary {
            regime,
            name: regime.name(),
            points: of.len(),
            in_band: of.iter().filter(|c| c.in_band).count(),
            ratio_min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ratio_max: ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ratio_median: median(&mut ratios),
            band_median: median(&mut bands),
        });
    }
    let mut ratios: Vec<f64> = compared.iter().map(|c| c.ratio).collect();
    Calibration {
        soc: soc.name,
        in_band: compared.iter().filter(|c| c.in_band).count(),
        ratio_median: median(&mut ratios),
        points: compared,
        skipped,
        regimes,
    }
}

/// The table `opgen report --calibration` prints.
pub fn text(file: &str, c: &Calibration) -> String {
    let mut out = format!(
        "calibration: {file} on {}: measured CANN kernels against the cycle model of their designs\n",
        c.soc
    );
    out.push_str(&format!(
        "{:<36} {:<21} {:<36} {:>9} {:>9} {:>9} {:>9} {:>8} {}\n",
        "point", "mode", "regime", "measured", "low", "mid", "high", "meas/mid", "in band"
    ));
    for p in &c.points {
        out.push_str(&format!(
            "{:<36} {:<21} {:<36} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>8.3} {}\n",
            p.point.label(),
            p.mode,
            p.regime.name(),
            p.point.measured_us,
            p.low_us,
            p.mid_us,
            p.high_us,
            p.ratio,
            if p.in_band { "yes" } else { "no" }
        ));
    }
    for s in &c.skipped {
        out.push_str(&format!("not compared: {}: {}\n", s.point, s.reason));
    }
    out.push_str(&format!(
        "in band: {}/{} points; measured/mid median {:.3}\n",
        c.in_band,
        c.points.len(),
        c.ratio_median
    ));
    out.push_str(&format!(
        "{:<36} {:>6} {:>7} {:>10} {:>8} {:>8} {:>10}\n",
        "regime", "points", "in band", "meas/mid", "min", "max", "high/low"
    ));
    for r in &c.regimes {
        out.push_str(&format!(
            "{:<36} {:>6} {:>7} {:>10.3} {:>8.3} {:>8.3} {:>10.3}\n",
            r.name, r.points, r.in_band, r.ratio_median, r.ratio_min, r.ratio_max, r.band_median
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::soc::find;

    const HEADER: &str = "builtin,case,shape,dtype,split_dim,kernels,measured_us,real,measured_source";

    #[test]
    fn the_reader_keeps_real_rows_and_names_file_line_and_field_of_a_bad_one() {
        let text = format!(
            "# comment\n{HEADER}\nRmsNorm,1,32x128x768,f16,2,RmsNormx1,21.16,yes,a\n\
             RmsNorm,15,1000003x2,bf16,1,RmsNormx1,23.3,no,capped\n"
        );
        let points = parse_fixture("f.csv", &text).unwrap();
        assert_eq!(points.len(), 1, "the capped row is no point");
        assert_eq!(points[0].shape, vec![32, 128, 768]);
        assert_eq!(points[0].measured_us, 21.16);
        let bad = format!("{HEADER}\nSwiGlu,2,4x7,f32,1,SwiGlux1,9.5,yes,a\n");
        let e = parse_fixture("f.csv", &bad).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("f.csv", 2));
        assert!(e.message.contains("`shape` = `4x7`"), "{e}");
        let bad = format!("{HEADER}\nRmsNorm,2,4x8,f32,1,RmsNormx1,-1,yes,a\n");
        assert!(parse_fixture("f.csv", &bad).unwrap_err().message.contains("measured_us"));
    }

    #[test]
    fn swiglu_folds_the_axes_around_its_split_like_the_tiling() {
        let p = |shape: Vec<u64>, split_dim| Point {
            builtin: Builtin::SwiGlu,
            case: "t".into(),
            shape,
            dtype: DType::BFloat16,
            split_dim,
            kernels: "SwiGlux1".into(),
            measured_us: 1.0,
            source: String::new(),
        };
        assert_eq!(p(vec![363, 367, 14], 2).rows_cols(), (363 * 367, 7));
        assert_eq!(p(vec![8192, 16384], 0).rows_cols(), (1, 8192 * 16384 / 2));
    }

    #[test]
    fn ratios_band_and_regimes_follow_the_measurements() {
        let soc = find("Ascend910B2").unwrap();
        let text = format!(
            "{HEADER}\nRmsNorm,a,1024x3584,bf16,1,RmsNormx1,100,yes,s\n\
             RmsNorm,b,1024x3584,bf16,1,RmsNormx1,200,yes,s\n\
             RmsNorm,c,4096x128,bf16,1,RmsNormx1,10,yes,s\n\
             SwiGlu,d,64x64,f32,1,Slice+SwiGlux1,10,yes,s\n"
        );
        let c = compare(soc, &parse_fixture("t.csv", &text).unwrap());
        assert_eq!(c.skipped.len(), 1, "a two-kernel measurement is not compared");
        let (a, b) = (&c.points[0], &c.points[1]);
        assert_eq!(a.mid_us, b.mid_us, "one design for one shape");
        assert!((b.ratio - 2.0 * a.ratio).abs() < 1e-12, "the ratio scales with the measurement");
        assert!((a.ratio - 100.0 / a.mid_us).abs() < 1e-12);
        assert_eq!((a.regime, c.points[2].regime), (Regime::RmsNormPerRow, Regime::RmsNormBatchedRows));
        let inside =
            c.points.iter().filter(|p| p.low_us <= p.point.measured_us && p.point.measured_us <= p.high_us);
        assert_eq!(c.in_band, inside.count());
        let per_row = &c.regimes[0];
        assert_eq!((per_row.regime, per_row.points), (Regime::RmsNormPerRow, 2));
        assert!((per_row.ratio_median - (a.ratio + b.ratio) / 2.0).abs() < 1e-12);
    }
}
