//! `cargo xtask test`: the project's whole test run, the README's test command and what CI
//! runs. Every step goes through the one command runner, shown live.

use super::AppError;
use crate::toolchain::command::Cmd;
use std::time::Instant;

/// One step of the test run: a name and the command.
fn steps() -> Vec<(&'static str, Cmd)> {
    let root = crate::repo_root();
    let mut steps = vec![(
        "cargo test --workspace",
        Cmd::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["test", "--workspace"])
            .cwd(root),
    )];
    // The torch extension link check: downloads (once, cached) the torch and torch_npu wheels
    // and links the generated extension against them.
    let torch = root.join("scripts").join("check_torch_extension.sh");
    if torch.exists() {
        steps.push(("torch extension link check", Cmd::new("bash").arg(torch).cwd(root)));
    }
    // The torch CPU backend: the generated kernels under a real CPU PyTorch (a cached venv;
    // OPGEN_SKIP_TORCH_CPU=1 skips it locally, never in CI).
    let torch_cpu = root.join("scripts").join("check_torch_cpu.sh");
    if torch_cpu.exists() {
        steps.push(("torch CPU backend", Cmd::new("bash").arg(torch_cpu).cwd(root)));
    }
    steps
}

pub fn run_tests() -> Result<(), AppError> {
    for (name, cmd) in steps() {
        println!("== {name}: {}", cmd.display());
        let started = Instant::now();
        cmd.echo().stdin_null().run_checked().map_err(|e| {
            AppError::failed(format!("{name} failed after {:.0} s:\n{e}", started.elapsed().as_secs_f64()))
        })?;
        println!("== {name}: ok in {:.0} s", started.elapsed().as_secs_f64());
    }
    Ok(())
}
