//! `cargo bench --bench verify_sweep`: throughput of the verify sweep on the CPU twin (the
//! quick sweep of the whole catalogue, every dtype combination): cases per second and input
//! elements per second, without and with the sanitizers `verify` uses by default. Runner builds
//! are done (and cached) by a first, untimed pass.

use ascend_opgen::app::gen::load_specs;
use ascend_opgen::tensor::shape_numel;
use ascend_opgen::verify::{self, Sweep};
use ascend_opgen::verify::{run_verify, VerifyOptions};
use std::time::Instant;

fn main() {
    let specs = load_specs(None, &[]).expect("catalogue");
    let mut elements = 0u64;
    for spec in &specs {
        let per_column: u64 = verify::cases(spec, Sweep::Quick)
            .iter()
            .map(|c| c.shapes.iter().map(|(_, s)| shape_numel(s) as u64).sum::<u64>())
            .sum();
        elements += per_column * spec.columns() as u64;
    }
    println!("verify sweep throughput (quick sweep, {} ops, 2 runner processes)", specs.len());
    for sanitize in [false, true] {
        let opts = VerifyOptions { sweep: Sweep::Quick, sanitize, jobs: 2, ..VerifyOptions::default() };
        run_verify(&opts).expect("warm-up run (builds the runners)");
        let started = Instant::now();
        let report = run_verify(&opts).expect("verify");
        let seconds = started.elapsed().as_secs_f64();
        let failures = report.failures.len();
        println!(
            "  sanitizers {:<3}: {} cases in {seconds:.1} s = {:.1} cases/s, {:.2} M input elements/s{}",
            if sanitize { "on" } else { "off" },
            report.cases_run,
            report.cases_run as f64 / seconds,
            elements as f64 / seconds / 1e6,
            if failures == 0 { String::new() } else { format!(" ({failures} FAILED)") }
        );
    }
}
