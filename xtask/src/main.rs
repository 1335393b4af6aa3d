//! `cargo xtask <command>`: the project's developer entry points. Thin: every command is a
//! call into the ascend-opgen library.

use ascend_opgen::app::{self, gen::GenOptions};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "ascend-opgen developer tasks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate the CANN custom-op project from kernels/*.toml (and refresh the golden copy).
    GenOps {
        /// Output directory (default: target/opgen).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Only these ops, comma separated.
        #[arg(long, value_delimiter = ',')]
        ops: Vec<String>,
        /// Fail if the committed golden copy (tests/golden/project) is stale; write nothing.
        #[arg(long)]
        check: bool,
    },
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::GenOps { out, ops, check } => {
            app::gen::gen_ops(&GenOptions { specs: None, out, ops, check })
        }
    };
    std::process::exit(app::exit_code(result));
}
