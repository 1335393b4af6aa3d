//! The sweep's summary: per op, dtype combination and output, the cases, the largest errors
//! against the bar, the failures, and the coverage of the TilingFunc's modes.

use super::check::CaseOutcome;
use super::coverage::ColumnCoverage;
use crate::family::Case;
use crate::spec::OpSpec;
use crate::DType;

/// The summary of one op, dtype combination and output (or in-place input: a cache the kernel
/// updates is compared like an output).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub op: String,
    pub dtype: DType,
    /// The combination's name in tables: the dtype, plus the dtypes that tell it apart from
    /// another combination of the same dtype (`float16/int64`: slot_mapping int64).
    pub label: String,
    pub output: String,
    pub cases: usize,
    pub max_ulp: u64,
    /// The largest per-case mean ULP distance (`Comparison::mean_ulp`): what a bulk bar must cover.
    pub max_mean_ulp: f64,
    pub max_mere: f64,
    pub max_mare: f64,
    pub failures: usize,
    /// The bar the output is held to (`bitwise`, `ulp<=1+CANN`, `int±1`, `CANN`).
    pub rule: String,
    /// Wall time of the combination: building its runner and running every case.
    pub seconds: f64,
    /// Near-tie acceptances over the cases (`rne` rules), and the largest distance of a
    /// near-tie element from its rounding boundary in float32 ulps of g.
    pub near_ties: usize,
    pub max_tie_distance: f64,
    /// The largest |mean signed error| / bound of the bias gate over the cases (≤ 1 passes).
    pub max_bias_ratio: f64,
}

#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    pub rows: Vec<Row>,
    /// One line per failed case: op, dtype, case, what failed.
    pub failures: Vec<String>,
    pub cases_run: usize,
    /// Cases run again on the sanitized twin as coverage witnesses (`sanitize_witnesses`).
    pub sanitized_cases: usize,
    pub seconds: f64,
    /// Per op and dtype combination, the tiling modes and UB passes its cases reached (read
    /// from each case's plan; `crate::verify::coverage`).
    pub coverage: Vec<ColumnCoverage>,
}

impl VerifyReport {
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<22} {:<13} {:<11} {:>6} {:<26} {:>8} {:>9} {:>11} {:>11} {:>12} {:>5} {:>7}  {}\n",
            "op",
            "dtype",
            "output",
            "cases",
            "rule",
            "max ULP",
            "mean ULP",
            "MERE",
            "MARE",
            "ties (dist)",
            "bias",
            "time",
            "result"
        );
        for r in &self.rows {
            s.push_str(&format!(
                "{:<22} {:<13} {:<11} {:>6} {:<26} {:>8} {:>9.3} {:>11.3e} {:>11.3e} {:>12} {:>5.2} {:>6.1}s  {}\n",
                r.op,
                r.label,
                r.output,
                r.cases,
                r.rule,
                r.max_ulp,
                r.max_mean_ulp,
                r.max_mere,
                r.max_mare,
                format!("{} ({:.1})", r.near_ties, r.max_tie_distance),
                r.max_bias_ratio,
                r.seconds,
                if r.failures == 0 { "pass".to_string() } else { format!("FAIL ({})", r.failures) }
            ));
        }
        s
    }

    /// Per op and dtype combination, the modes and most UB passes per core its cases reached.
    pub fn coverage_table(&self) -> String {
        self.coverage.iter().map(|c| format!("coverage: {}\n", c.line())).collect()
    }

    /// Where the cases miss the coverage rule (a mode, three UB passes, a remainder core).
    pub fn coverage_gaps(&self) -> Vec<String> {
        self.coverage.iter().flat_map(ColumnCoverage::gaps).collect()
    }
}

pub(crate) fn summarise(
    spec: &OpSpec,
    column: usize,
    ran: Vec<(&Case, CaseOutcome)>,
    report: &mut VerifyReport,
) {
    let (dtype, label) = (spec.column_dtype(column), spec.column_label(column));
    let mut rows: Vec<Row> = spec
        .outputs
        .iter()
        .map(|o| o.name.clone())
        .chain(spec.mutated_inputs())
        .map(|output| Row {
            op: spec.name.clone(),
            dtype,
            label: label.clone(),
            output,
            cases: 0,
            max_ulp: 0,
            max_mean_ulp: 0.0,
            max_mere: 0.0,
            max_mare: 0.0,
            failures: 0,
            rule: String::new(),
            seconds: 0.0,
            near_ties: 0,
            max_tie_distance: 0.0,
            max_bias_ratio: 0.0,
        })
        .collect();
    let mut coverage = ColumnCoverage::new(spec, column);
    for (case, outcome) in ran {
        report.cases_run += 1;
        if let Some(point) = outcome.coverage {
            coverage.add(point);
        }
        for row in rows.iter_mut() {
            row.cases += 1;
            match outcome.comparisons.iter().find(|(n, _)| *n == row.output) {
                Some((_, c)) => {
                    if row.rule.is_empty() {
                        row.rule = c.rule.to_string();
                    }
                    row.max_ulp = row.max_ulp.max(c.max_ulp);
                    row.max_mean_ulp = row.max_mean_ulp.max(c.mean_ulp);
                    row.max_mere = row.max_mere.max(c.mere);
                    row.max_mare = row.max_mare.max(c.mare);
                    row.near_ties += c.near_ties;
                    row.max_tie_distance = row.max_tie_distance.max(c.max_tie_distance);
                    if let Some(b) = &c.bias {
                        let ratio = b.mean.abs().max(b.mean_toward_away.abs()) / b.bound;
                        row.max_bias_ratio = row.max_bias_ratio.max(ratio);
                    }
                    if !c.passed() {
                        row.failures += 1;
                    }
                }
                None => row.failures += 1,
            }
        }
        if let Some(why) = outcome.failure {
            report.failures.push(format!("{} {label} {}: {why}", spec.name, case.label()));
        }
    }
    report.rows.extend(rows);
    report.coverage.push(coverage);
}
