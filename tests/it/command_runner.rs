//! The external-command runner: every way a command can fail is reported with the command
//! line and what the process said.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ascend_opgen::toolchain::command::{which, Cmd, CommandError};

use crate::support;
use support::TempDir;

#[test]
fn captures_stdout_and_stderr() {
    let out = Cmd::new("sh").args(["-c", "echo hello; echo oops >&2"]).stdin_null().run_checked().unwrap();
    assert!(out.success());
    assert_eq!(out.code(), Some(0));
    assert_eq!(out.stdout_lossy(), "hello\n");
    assert_eq!(out.stderr_lossy(), "oops\n");
    assert!(out.command.starts_with("sh -c "), "{}", out.command);
}

#[test]
fn cwd_env_and_stdin_reach_the_child() {
    let dir = TempDir::new("cwd");
    let out = Cmd::new("sh")
        .args(["-c", "pwd; echo \"$OPGEN_TEST_VAR\"; cat"])
        .cwd(&dir.0)
        .env("OPGEN_TEST_VAR", "value with spaces")
        .stdin_bytes("from stdin")
        .run_checked()
        .unwrap();
    let text = out.stdout_lossy();
    let mut lines = text.lines();
    let pwd = PathBuf::from(lines.next().unwrap());
    assert_eq!(pwd.canonicalize().unwrap(), dir.0.canonicalize().unwrap(), "{text}");
    assert_eq!(lines.next(), Some("value with spaces"));
    assert_eq!(lines.next(), Some("from stdin"));
}

#[test]
fn missing_program() {
    let err = Cmd::new("opgen-no-such-program-xyz").arg("--version").run().unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("unable to find `opgen-no-such-program-xyz`"), "{msg}");
    // The PATH that was searched is part of the message.
    let first_dir = std::env::split_paths(&std::env::var_os("PATH").unwrap()).next().unwrap();
    assert!(msg.contains(&first_dir.display().to_string()), "{msg}");
    assert!(msg.contains("opgen-no-such-program-xyz --version"), "{msg}");

    // A program given as a path that does not exist.
    let err = Cmd::new("/nonexistent/dir/tool").run().unwrap_err();
    assert!(err.is_not_found());
    assert!(err.to_string().contains("unable to find `/nonexistent/dir/tool`"), "{err}");
}

#[test]
fn missing_working_directory_is_a_start_failure() {
    let err = Cmd::new("sh").args(["-c", "true"]).cwd("/nonexistent/opgen/dir").run().unwrap_err();
    assert!(matches!(err, CommandError::SpawnFailed { .. }), "{err:?}");
    assert!(err.to_string().contains("/nonexistent/opgen/dir"), "{err}");
}

#[test]
fn non_zero_exit() {
    let cmd = Cmd::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]);
    // `run` reports the status without treating it as an error.
    let out = cmd.run().unwrap();
    assert_eq!(out.code(), Some(3));
    assert!(!out.success());

    let err = cmd.run_checked().unwrap_err();
    match &err {
        CommandError::NonZeroExit { code, stdout, stderr, command } => {
            assert_eq!(*code, 3);
            assert_eq!(stdout, "out\n");
            assert_eq!(stderr, "err\n");
            assert_eq!(command, "sh -c 'echo out; echo err >&2; exit 3'");
        }
        other => panic!("expected NonZeroExit, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("exit code 3"), "{msg}");
    assert!(msg.contains("sh -c 'echo out; echo err >&2; exit 3'"), "{msg}");
    assert!(msg.contains("--- stderr ---\nerr"), "{msg}");
    assert!(msg.contains("--- stdout ---\nout"), "{msg}");
}

#[test]
fn long_output_is_clipped_in_the_message_but_kept_in_the_error() {
    let err = Cmd::new("sh")
        .args([
            "-c",
            "i=0; while [ $i -lt 5000 ]; do echo \"diagnostic line $i\" >&2; i=$((i+1)); done; exit 1",
        ])
        .run_checked()
        .unwrap_err();
    let full = err.stderr().unwrap();
    assert_eq!(full.lines().count(), 5000);
    let msg = err.to_string();
    assert!(msg.len() < 10_000, "message is {} bytes", msg.len());
    assert!(msg.contains("diagnostic line 0\n"), "head kept");
    assert!(msg.contains("diagnostic line 4999"), "tail kept");
    assert!(msg.contains("cut ...]"), "{msg}");
}

#[test]
fn killed_by_signal() {
    let err = Cmd::new("sh").args(["-c", "echo before; kill -9 $$"]).run_checked().unwrap_err();
    match &err {
        CommandError::Signaled { signal, stdout, .. } => {
            assert_eq!(*signal, 9);
            assert_eq!(stdout, "before\n");
        }
        other => panic!("expected Signaled, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("signal 9 (SIGKILL)"), "{msg}");
    assert!(msg.contains("kill -9"), "{msg}");
}

#[test]
fn timeout_kills_the_process() {
    let start = Instant::now();
    let err = Cmd::new("sleep").arg("5").timeout(Duration::from_millis(200)).run().unwrap_err();
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    assert!(elapsed >= Duration::from_millis(200), "took {elapsed:?}");
    match &err {
        CommandError::TimedOut { limit, .. } => assert_eq!(*limit, Duration::from_millis(200)),
        other => panic!("expected TimedOut, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("timed out after 200 ms"), "{msg}");
    assert!(msg.contains("sleep 5"), "{msg}");
}

#[test]
fn timeout_kills_the_whole_tree_and_keeps_partial_output() {
    // The shell's child `sleep` holds the output pipes too: only killing the process group
    // ends the run quickly.
    let start = Instant::now();
    let err = Cmd::new("sh")
        .args(["-c", "echo partial; echo progress >&2; sleep 5; echo never"])
        .timeout(Duration::from_millis(300))
        .stdin_null()
        .run_checked()
        .unwrap_err();
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    match &err {
        CommandError::TimedOut { stdout, stderr, .. } => {
            assert_eq!(stdout, "partial\n");
            assert_eq!(stderr, "progress\n");
        }
        other => panic!("expected TimedOut, got {other:?}"),
    }
}

#[test]
fn background_child_holding_the_pipe_is_bounded_by_the_timeout() {
    // The direct child exits at once, a grandchild keeps stdout open.
    let start = Instant::now();
    let err = Cmd::new("sh")
        .args(["-c", "sleep 5 & echo started"])
        .timeout(Duration::from_millis(300))
        .run()
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(3));
    assert!(matches!(err, CommandError::TimedOut { .. }), "{err:?}");
    assert_eq!(err.stdout(), Some("started\n"));
}

#[test]
fn a_fast_command_is_not_affected_by_its_timeout() {
    let out =
        Cmd::new("sh").args(["-c", "echo quick"]).timeout(Duration::from_secs(30)).run_checked().unwrap();
    assert_eq!(out.stdout_lossy(), "quick\n");
    assert!(out.duration < Duration::from_secs(5));
}

#[test]
fn a_chatty_child_does_not_block_on_full_pipes() {
    // ~2 MB on each stream, far more than a pipe buffer holds.
    let out = Cmd::new("sh")
        .args(["-c", "head -c 2000000 /dev/zero | tr '\\0' a; head -c 2000000 /dev/zero | tr '\\0' b >&2"])
        .timeout(Duration::from_secs(60))
        .run_checked()
        .unwrap();
    assert_eq!(out.stdout.len(), 2_000_000);
    assert_eq!(out.stderr.len(), 2_000_000);
}

#[test]
fn compiler_error_includes_the_diagnostic() {
    // g++ is a prerequisite of the project (README set-up): its absence fails, never skips.
    assert!(which("g++").is_some(), "compiler_error_includes_the_diagnostic needs g++ on PATH");
    let dir = TempDir::new("gxx");
    std::fs::write(dir.0.join("broken.cpp"), "int main() {\n    int x = ;\n    return x;\n}\n").unwrap();
    let err = Cmd::new("g++")
        .args(["-fsyntax-only", "-std=c++17", "broken.cpp"])
        .cwd(&dir.0)
        .env("LC_ALL", "C")
        .stdin_null()
        .timeout(Duration::from_secs(120))
        .run_checked()
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, CommandError::NonZeroExit { .. }), "{err:?}");
    assert!(msg.contains("broken.cpp:2:"), "{msg}");
    assert!(msg.contains("error: expected primary-expression"), "{msg}");
    assert!(msg.contains("g++ -fsyntax-only -std=c++17 broken.cpp"), "{msg}");
    assert!(msg.contains("cd "), "{msg}");

    // And a good file passes.
    std::fs::write(dir.0.join("ok.cpp"), "int main() { return 0; }\n").unwrap();
    Cmd::new("g++").args(["-fsyntax-only", "-std=c++17", "ok.cpp"]).cwd(&dir.0).run_checked().unwrap();
}
