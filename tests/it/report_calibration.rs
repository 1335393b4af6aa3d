//! `opgen report --calibration` on the committed fixture of measured CANN kernel durations
//! (tests/perf-calibration/cann-bench-910b2.csv): the figures it prints come from the fixture's
//! measurements and the CANN designs' modelled times, not from constants of the printer.

use crate::support::TempDir;
use ascend_opgen::perf::{self, cann};
use ascend_opgen::plan::soc;
use ascend_opgen::toolchain::command::{Cmd, Output};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/perf-calibration/cann-bench-910b2.csv");

fn opgen(args: &[&str]) -> Output {
    Cmd::new(env!("CARGO_BIN_EXE_opgen")).args(args).stdin_null().run().expect("opgen runs")
}

/// A point's printed figures: measured, low, mid, high, measured/mid, in band.
#[derive(Debug)]
struct Printed {
    measured: f64,
    low: f64,
    mid: f64,
    high: f64,
    ratio: f64,
    in_band: bool,
}

/// The printed point lines by their label's start (`RmsNorm case 18 `), read from the right:
/// the mode and regime columns hold spaces.
fn printed_points(stdout: &str) -> Vec<(String, Printed)> {
    stdout
        .lines()
        .filter(|l| l.starts_with("RmsNorm case ") || l.starts_with("SwiGlu case "))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let n = words.len();
            let num = |i: usize| words[n - i].parse::<f64>().unwrap_or_else(|_| panic!("a number in `{l}`"));
            let label = words[..3].join(" ");
            let p = Printed {
                measured: num(6),
                low: num(5),
                mid: num(4),
                high: num(3),
                ratio: num(2),
                in_band: words[n - 1] == "yes",
            };
            (label, p)
        })
        .collect()
}

/// `in band: X/Y points` of the summary.
fn in_band_line(stdout: &str) -> (usize, usize) {
    let line = stdout.lines().find(|l| l.starts_with("in band: ")).expect("an in-band line");
    let fraction = line["in band: ".len()..].split_whitespace().next().unwrap();
    let (x, y) = fraction.split_once('/').unwrap();
    (x.parse().unwrap(), y.parse().unwrap())
}

/// The fixture's measured µs of one case, read here from the file itself.
fn fixture_measured(text: &str, builtin: &str, case: &str) -> f64 {
    let header = text.lines().find(|l| !l.starts_with('#')).unwrap();
    let col = |name: &str| header.split(',').position(|c| c == name).unwrap();
    let row = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f[col("builtin")] == builtin && f[col("case")] == case)
        .unwrap();
    row[col("measured_us")].parse().unwrap()
}

#[test]
fn calibration_prints_ratios_computed_from_the_fixture() {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let out = opgen(&["report", "--calibration", FIXTURE]);
    assert!(out.status.success(), "{}{}", out.stdout_lossy(), out.stderr_lossy());
    let points = printed_points(&out.stdout_lossy());
    // 40 real rows, six of them Slice+SwiGlu measurements (two kernels): 34 points.
    let rows = text.lines().filter(|l| l.starts_with("RmsNorm,") || l.starts_with("SwiGlu,")).count();
    let two_kernels = text.lines().filter(|l| l.contains(",Slicex1+SwiGlux1,")).count();
    assert_eq!((rows, two_kernels), (40, 6));
    assert_eq!(points.len(), rows - two_kernels);
    let (x, y) = in_band_line(&out.stdout_lossy());
    assert_eq!(y, points.len());
    assert_eq!(x, points.iter().filter(|(_, p)| p.in_band).count());
    for (label, p) in &points {
        assert_eq!(p.in_band, p.low <= p.measured && p.measured <= p.high, "{label}");
    }

    // RmsNorm case 18, 2x511x8192 bf16: 1022 rows of 8192, measured 30.40 µs. Its modelled mid
    // is the RmsNorm design's at that shape repeated alone (its 32 MiB fit 1.5 x L2: the outputs
    // stay in the L2, docs/calibration.md), and the printed ratio their quotient.
    let measured = fixture_measured(&text, "RmsNorm", "18");
    assert_eq!(measured, 30.40);
    let soc = soc::find("Ascend910B2").unwrap();
    let design = cann::rms_norm(soc, &[2 * 511, 8192], 2).unwrap();
    let mid =
        perf::cann_design_as(soc, &design, perf::sim::Residency::RepeatedAlone).unwrap().modelled.time_us.mid;
    // Inside a step the same launch writes through to HBM: slower, never faster.
    let in_step = perf::cann_design(soc, &design).unwrap().modelled.time_us.mid;
    assert!(in_step > mid, "in a step {in_step} against repeated alone {mid}");
    let (_, p18) = points.iter().find(|(l, _)| l == "RmsNorm case 18").expect("case 18 printed");
    assert_eq!(p18.measured, 30.40);
    assert!((p18.mid - mid).abs() < 0.006, "printed mid {} against the design's {mid}", p18.mid);
    assert!((p18.ratio - measured / mid).abs() < 0.0006, "printed {} against {}", p18.ratio, measured / mid);
}

#[test]
fn calibration_follows_an_edited_measurement_and_drops_unreal_rows() {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let base = printed_points(&opgen(&["report", "--calibration", FIXTURE]).stdout_lossy());
    // Case 18 measured ten times slower, and case 19 marked as not a measurement.
    let edited: String = text
        .lines()
        .map(|l| {
            if l.starts_with("RmsNorm,18,") {
                l.replace(",30.4,yes,", ",304,yes,")
            } else if l.starts_with("RmsNorm,19,") {
                l.replace(",24.34,yes,", ",24.34,no,")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(edited, text.trim_end());
    let dir = TempDir::new("calibration");
    let path = dir.path().join("edited.csv");
    std::fs::write(&path, &edited).unwrap();
    let out = opgen(&["report", "--calibration", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}{}", out.stdout_lossy(), out.stderr_lossy());
    let points = printed_points(&out.stdout_lossy());
    assert_eq!(points.len(), base.len() - 1, "the row marked real = no is no point");
    assert!(!points.iter().any(|(l, _)| l == "RmsNorm case 19"));
    let old = &base.iter().find(|(l, _)| l == "RmsNorm case 18").unwrap().1;
    let new = &points.iter().find(|(l, _)| l == "RmsNorm case 18").unwrap().1;
    assert_eq!((new.measured, new.mid), (304.0, old.mid));
    assert!((new.ratio - 10.0 * old.ratio).abs() < 0.006, "{} against 10 x {}", new.ratio, old.ratio);
    assert_eq!(new.in_band, new.low <= 304.0 && 304.0 <= new.high);
    let (x, _) = in_band_line(&out.stdout_lossy());
    assert_eq!(x, points.iter().filter(|(_, p)| p.in_band).count());
}

#[test]
fn calibration_names_the_file_line_and_field_of_a_bad_row() {
    let dir = TempDir::new("calibration-bad");
    let path = dir.path().join("bad.csv");
    std::fs::write(&path, "builtin,case,shape,dtype,split_dim,kernels,measured_us,real\nRmsNorm,1,4x8,f16,1,RmsNormx1,fast,yes\n")
        .unwrap();
    let out = opgen(&["report", "--calibration", path.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        out.stderr_lossy().contains("bad.csv:2:") && out.stderr_lossy().contains("measured_us"),
        "{}",
        out.stderr_lossy()
    );
    let out = opgen(&["report", "--calibration", FIXTURE, "--ops", "rms_norm"]);
    assert!(!out.status.success() && out.stderr_lossy().contains("--calibration"), "{}", out.stderr_lossy());
}
