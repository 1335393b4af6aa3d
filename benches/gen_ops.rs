//! `cargo bench --bench gen_ops`: how long generating the whole catalogue's project takes —
//! loading and validating the specs, rendering every file (`render_project`), and writing the
//! tree atomically.

use ascend_opgen::app::gen::{load_specs, render};
use ascend_opgen::codegen::write_atomically;
use std::time::Instant;

/// Runs `f` repeatedly for about `seconds` (at least 3 times) and returns the mean ms per call.
fn time_ms(seconds: f64, mut f: impl FnMut()) -> (f64, u32) {
    f();
    let started = Instant::now();
    let mut n = 0u32;
    while n < 3 || started.elapsed().as_secs_f64() < seconds {
        f();
        n += 1;
    }
    (started.elapsed().as_secs_f64() * 1000.0 / f64::from(n), n)
}

fn main() {
    let specs = load_specs(None, &[]).expect("catalogue");
    let project = render(&specs).expect("render");
    let out = ascend_opgen::repo_root().join("target").join("opgen-bench").join("gen-ops");
    let (load, n_load) = time_ms(1.0, || {
        load_specs(None, &[]).expect("catalogue");
    });
    let (rend, n_rend) = time_ms(2.0, || {
        render(&specs).expect("render");
    });
    let (write, n_write) = time_ms(1.0, || {
        write_atomically(&out, &project).expect("write");
    });
    let (all, n_all) = time_ms(2.0, || {
        let specs = load_specs(None, &[]).expect("catalogue");
        let project = render(&specs).expect("render");
        write_atomically(&out, &project).expect("write");
    });
    println!("gen-ops for the whole catalogue ({} ops, {} files)", specs.len(), project.files.len());
    println!("  load + validate specs   {load:>8.2} ms  ({n_load} runs)");
    println!("  render_project          {rend:>8.2} ms  ({n_rend} runs)");
    println!("  write the tree          {write:>8.2} ms  ({n_write} runs)");
    println!("  all three (gen-ops)     {all:>8.2} ms  ({n_all} runs)");
}
