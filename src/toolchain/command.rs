//! The one runner for external commands (compilers, cmake, the twin runner, pip, ...).
//!
//! Every process the project starts goes through [`Cmd`], so every failure is reported the
//! same way: the shell-quoted command line (with working directory and environment
//! overrides), the exit code or signal, and the captured stdout and stderr. `clippy.toml`
//! forbids `std::process::Command::new` everywhere else.
//!
//! ```no_run
//! use std::time::Duration;
//! use ascend_opgen::toolchain::command::Cmd;
//!
//! let out = Cmd::new("g++")
//!     .args(["-fsyntax-only", "-std=c++17", "kernel.cpp"])
//!     .cwd("/tmp/project")
//!     .env("LC_ALL", "C")
//!     .timeout(Duration::from_secs(120))
//!     .stdin_null()
//!     .run_checked()?;
//! println!("{}", out.stderr_lossy());
//! # Ok::<(), ascend_opgen::toolchain::command::CommandError>(())
//! ```
//!
//! Timeouts: with [`Cmd::timeout`] the child is started in its own process group, polled with
//! `try_wait`, and on expiry the whole group (the child and everything it started) is killed
//! with SIGKILL. stdout and stderr are always drained on their own threads so a chatty child can
//! never block on a full pipe, and the partial output is part of the timeout error. A side
//! effects of the separate process group: a Ctrl-C in the terminal reaches this process but not
//! the child, which then runs until it ends or its time limit expires; and the child cannot
//! read the terminal, so its stdin is /dev/null unless [`Cmd::stdin_bytes`] feeds it.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How many bytes of each output stream an error message shows; the rest is cut (see
/// [`clip_output`]). The error values themselves keep the full text.
pub const SHOWN_OUTPUT_BYTES: usize = 8 * 1024;

/// After a kill, how long the reader threads get to drain what is left in the pipes.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, PartialEq, Eq)]
enum StdinMode {
    Inherit,
    Null,
    Bytes(Vec<u8>),
}

/// A command to run: program, arguments, working directory, environment overrides, time
/// limit and stdin. Built by value (`Cmd::new("x").arg("y")`), run any number of times.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct Cmd {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    /// `Some(v)`: set, `None`: removed. In the order given; a later entry for the same key wins.
    env: Vec<(OsString, Option<OsString>)>,
    timeout: Option<Duration>,
    stdin: StdinMode,
    /// Also copy the child's output to ours as it arrives (long builds and test runs).
    echo: bool,
}

impl Cmd {
    /// A command running `program`: a bare name is looked up in `PATH` (the `PATH` override
    /// given with [`Cmd::env`] if any), a name with a `/` is a path (relative to the working
    /// directory given with [`Cmd::cwd`], if any).
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Cmd {
            program: program.as_ref().to_os_string(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            timeout: None,
            stdin: StdinMode::Inherit,
            echo: false,
        }
    }

    /// Shows the child's stdout and stderr live on ours while still capturing them, so a
    /// long run shows progress and a failure still reports everything.
    pub fn echo(mut self) -> Self {
        self.echo = true;
        self
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// Appends several arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// Runs the command in `dir`.
    pub fn cwd(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Sets an environment variable for the child (the rest of the environment is inherited).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().to_os_string(), Some(value.as_ref().to_os_string())));
        self
    }

    /// Sets several environment variables.
    pub fn envs<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (k, v) in vars {
            self = self.env(k, v);
        }
        self
    }

    /// Removes an environment variable from the child's environment.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().to_os_string(), None));
        self
    }

    /// Kills the child (and every process it started) when it has not finished after `limit`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Connects the child's stdin to /dev/null. The default is to inherit ours, except with a
    /// [`Cmd::timeout`], where stdin is /dev/null unless [`Cmd::stdin_bytes`] is given.
    pub fn stdin_null(mut self) -> Self {
        self.stdin = StdinMode::Null;
        self
    }

    /// Feeds `data` to the child's stdin, then closes it.
    pub fn stdin_bytes(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.stdin = StdinMode::Bytes(data.into());
        self
    }

    /// The program as given to [`Cmd::new`].
    pub fn get_program(&self) -> &OsStr {
        &self.program
    }

    /// The arguments.
    pub fn get_args(&self) -> &[OsString] {
        &self.args
    }

    /// The working directory, if one was set.
    pub fn get_cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// The environment overrides, in order (`None` = removed).
    pub fn get_envs(&self) -> &[(OsString, Option<OsString>)] {
        &self.env
    }

    /// The time limit, if one was set.
    pub fn get_timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The command as one shell line that does the same thing when pasted into `sh`:
    /// `(cd DIR && env -u GONE KEY=VALUE program args...)`; the `cd` part and `env -u` only
    /// when a working directory or a removal was given. Used by `--dry-run` and in errors.
    pub fn display(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let removed: Vec<&OsString> =
            self.effective_env().into_iter().filter_map(|(k, v)| v.is_none().then_some(k)).collect();
        if !removed.is_empty() {
            parts.push("env".to_string());
            for k in removed {
                parts.push("-u".to_string());
                parts.push(shell_quote(k));
            }
        }
        for (k, v) in self.effective_env() {
            if let Some(v) = v {
                parts.push(format!("{}={}", k.to_string_lossy(), shell_quote(v.as_os_str())));
            }
        }
        parts.push(shell_quote(&self.program));
        parts.extend(self.args.iter().map(|a| shell_quote(a)));
        let line = parts.join(" ");
        match &self.cwd {
            Some(dir) => format!("(cd {} && {})", shell_quote(dir.as_os_str()), line),
            None => line,
        }
    }

    /// Runs the command to completion and captures stdout and stderr.
    ///
    /// `Ok` whenever the process ran and ended by itself, whatever its exit code or signal
    /// (see [`Output::status`]); `Err` when it could not be found or started, when it was
    /// killed for exceeding the time limit, or on an I/O error while waiting for it.
    pub fn run(&self) -> Result<Output, CommandError> {
        let command = self.display();
        let exe = self.resolve_program().map_err(|searched| CommandError::NotFound {
            program: self.program.to_string_lossy().into_owned(),
            searched,
            command: command.clone(),
        })?;
        if let Some(dir) = &self.cwd {
            if !dir.is_dir() {
                return Err(CommandError::SpawnFailed {
                    command,
                    source: io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("working directory {} does not exist", dir.display()),
                    ),
                });
            }
        }

        #[allow(clippy::disallowed_methods)]
        // Reason: this module is the one place allowed to create processes; everything else
        // goes through `Cmd`, which adds uniform error reporting, timeouts and pipe draining.
        let mut std_cmd = std::process::Command::new(&exe);
        std_cmd.args(&self.args);
        if let Some(dir) = &self.cwd {
            std_cmd.current_dir(dir);
        }
        for (k, v) in &self.env {
            match v {
                Some(v) => std_cmd.env(k, v),
                None => std_cmd.env_remove(k),
            };
        }
        std_cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        std_cmd.stdin(match self.stdin {
            // In its own process group (see below) the child could not read a terminal anyway:
            // it would be stopped by SIGTTIN and sit there until the time limit.
            StdinMode::Inherit if self.timeout.is_some() => Stdio::null(),
            StdinMode::Inherit => Stdio::inherit(),
            StdinMode::Null => Stdio::null(),
            StdinMode::Bytes(_) => Stdio::piped(),
        });
        #[cfg(unix)]
        if self.timeout.is_some() {
            use std::os::unix::process::CommandExt;
            // Own process group, so that a timeout can kill the whole tree.
            std_cmd.process_group(0);
        }

        let start = Instant::now();
        let deadline = self.timeout.map(|t| start + t);
        let mut child = std_cmd
            .spawn()
            .map_err(|source| CommandError::SpawnFailed { command: command.clone(), source })?;

        if let StdinMode::Bytes(data) = &self.stdin {
            if let Some(mut stdin) = child.stdin.take() {
                let data = data.clone();
                // A child that exits without reading its input gives EPIPE: not our error.
                thread::spawn(move || {
                    let _ = stdin.write_all(&data);
                });
            }
        }
        let mut stdout = Capture::start(child.stdout.take(), self.echo.then_some(Echo::Stdout));
        let mut stderr = Capture::start(child.stderr.take(), self.echo.then_some(Echo::Stderr));

        let status = match deadline {
            None => child.wait().map(Some),
            Some(deadline) => wait_until(&mut child, deadline),
        };
        let status = match status {
            Ok(s) => s,
            Err(source) => {
                kill_tree(&mut child, self.timeout.is_some());
                return Err(CommandError::Io { command, source });
            }
        };

        let timed_out = |child: &mut Child, stdout: Capture, stderr: Capture| {
            kill_tree(child, true);
            let grace = Instant::now() + DRAIN_GRACE;
            CommandError::TimedOut {
                command: command.clone(),
                limit: self.timeout.unwrap_or_default(),
                stdout: lossy(stdout.finish(Some(grace)).0),
                stderr: lossy(stderr.finish(Some(grace)).0),
            }
        };
        let Some(status) = status else {
            return Err(timed_out(&mut child, stdout, stderr));
        };
        // The child has ended; its own children may still hold the pipes open. (A little
        // grace so that a child ending just before the limit still counts as done.)
        if let Some(deadline) = deadline {
            let deadline = deadline.max(Instant::now() + Duration::from_millis(50));
            if !stdout.wait_done(deadline) || !stderr.wait_done(deadline) {
                return Err(timed_out(&mut child, stdout, stderr));
            }
        }
        let (stdout, _) = stdout.finish(None);
        let (stderr, _) = stderr.finish(None);
        Ok(Output { command, status, stdout, stderr, duration: start.elapsed() })
    }

    /// Like [`Cmd::run`], and a non-zero exit or a death by signal is an error too.
    pub fn run_checked(&self) -> Result<Output, CommandError> {
        let out = self.run()?;
        if out.status.success() {
            return Ok(out);
        }
        if let Some(code) = out.status.code() {
            return Err(CommandError::NonZeroExit {
                command: out.command,
                code,
                stdout: lossy(out.stdout),
                stderr: lossy(out.stderr),
            });
        }
        let (signal, core_dumped) = signal_of(&out.status).unwrap_or((0, false));
        Err(CommandError::Signaled {
            command: out.command,
            signal,
            core_dumped,
            stdout: lossy(out.stdout),
            stderr: lossy(out.stderr),
        })
    }

    /// The environment overrides with later entries for a key replacing earlier ones, in
    /// first-mention order.
    fn effective_env(&self) -> Vec<(&OsString, Option<&OsString>)> {
        let mut out: Vec<(&OsString, Option<&OsString>)> = Vec::new();
        for (k, v) in &self.env {
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some(slot) => slot.1 = v.as_ref(),
                None => out.push((k, v.as_ref())),
            }
        }
        out
    }

    /// The `PATH` the child will see (an override wins over ours).
    fn child_path_var(&self) -> Option<OsString> {
        match self.effective_env().into_iter().find(|(k, _)| *k == "PATH") {
            Some((_, v)) => v.cloned(),
            None => std::env::var_os("PATH"),
        }
    }

    /// The executable to start, or every place looked at.
    fn resolve_program(&self) -> Result<PathBuf, Vec<PathBuf>> {
        let program = Path::new(&self.program);
        if self.program.is_empty() {
            return Err(Vec::new());
        }
        if program.components().count() > 1 || program.is_absolute() {
            let full = match &self.cwd {
                Some(dir) if program.is_relative() => dir.join(program),
                _ => program.to_path_buf(),
            };
            return if is_executable(&full) { Ok(full) } else { Err(vec![full]) };
        }
        find_in_path(&self.program, self.child_path_var().as_deref())
    }
}

impl fmt::Display for Cmd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

/// Looks `program` (a bare name) up in the directories of `path_var` (a `PATH` value; `None`
/// means the usual `/usr/local/bin:/usr/bin:/bin`). Returns the first executable file, or every
/// directory searched.
pub fn find_in_path(program: &OsStr, path_var: Option<&OsStr>) -> Result<PathBuf, Vec<PathBuf>> {
    let default = OsString::from("/usr/local/bin:/usr/bin:/bin");
    let path_var = path_var.unwrap_or(&default);
    let mut searched = Vec::new();
    for dir in std::env::split_paths(path_var) {
        // An empty PATH entry means the current directory.
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        let candidate = dir.join(program);
        if is_executable(&candidate) {
            return Ok(candidate);
        }
        searched.push(dir);
    }
    Err(searched)
}

/// Looks `program` up in this process's `PATH` (see [`find_in_path`]).
pub fn which(program: impl AsRef<OsStr>) -> Option<PathBuf> {
    find_in_path(program.as_ref(), std::env::var_os("PATH").as_deref()).ok()
}

fn is_executable(path: &Path) -> bool {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                meta.permissions().mode() & 0o111 != 0
            }
            #[cfg(not(unix))]
            {
                true
            }
        }
        _ => false,
    }
}

/// Waits for `child` until `deadline`: `Ok(None)` when it is still running then.
fn wait_until(child: &mut Child, deadline: Instant) -> io::Result<Option<ExitStatus>> {
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(25));
    }
}

/// Kills the child, and with `group` its whole process group (it was started as the leader of
/// its own group), then reaps it.
fn kill_tree(child: &mut Child, group: bool) {
    #[cfg(unix)]
    if group {
        extern "C" {
            fn kill(pid: std::os::raw::c_int, sig: std::os::raw::c_int) -> std::os::raw::c_int;
        }
        const SIGKILL: std::os::raw::c_int = 9;
        if let Ok(pgid) = std::os::raw::c_int::try_from(child.id()) {
            // SAFETY: kill(2) takes two integers and touches no memory of ours. (Which processes
            // it reaches: the child was started with process_group(0), so its pid is the id of
            // its group. Either the child is not reaped yet, or it is and we only get here
            // because its output pipes are still held open, i.e. some process it started is
            // alive; a process-group id is not reused while any member of the group lives.)
            unsafe {
                kill(-pgid, SIGKILL);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = group;
    let _ = child.kill();
    let _ = child.wait();
}

/// One output stream read on its own thread into a shared buffer, so that a partial copy can
/// be taken while the thread is still blocked on the pipe.
struct Capture {
    buf: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
    finished: bool,
    handle: Option<thread::JoinHandle<()>>,
}

/// Where an echoed stream goes.
#[derive(Debug, Clone, Copy)]
enum Echo {
    Stdout,
    Stderr,
}

impl Echo {
    fn write(self, data: &[u8]) {
        // Echo is best effort: a closed terminal must not fail the command.
        let _ = match self {
            Echo::Stdout => io::stdout().write_all(data).and_then(|()| io::stdout().flush()),
            Echo::Stderr => io::stderr().write_all(data),
        };
    }
}

impl Capture {
    fn start<R: Read + Send + 'static>(pipe: Option<R>, echo: Option<Echo>) -> Capture {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = mpsc::channel();
        let handle = pipe.map(|mut pipe| {
            let buf = Arc::clone(&buf);
            thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                loop {
                    match pipe.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(n) => {
                            if let Some(echo) = echo {
                                echo.write(&chunk[..n]);
                            }
                            buf.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(&chunk[..n])
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
                let _ = tx.send(());
            })
        });
        Capture { buf, done, finished: handle.is_none(), handle }
    }

    /// Waits until the stream is closed or `deadline`; true when closed.
    fn wait_done(&mut self, deadline: Instant) -> bool {
        if !self.finished {
            let left = deadline.saturating_duration_since(Instant::now());
            self.finished = self.done.recv_timeout(left).is_ok();
        }
        self.finished
    }

    /// The bytes read, and whether the stream was read to its end. With `deadline`, gives up
    /// waiting then (the reader thread is left behind, blocked on a pipe nobody writes to).
    fn finish(mut self, deadline: Option<Instant>) -> (Vec<u8>, bool) {
        let complete = match deadline {
            None => true,
            Some(d) => self.finished || self.wait_done(d),
        };
        if complete {
            if let Some(h) = self.handle.take() {
                let _ = h.join();
            }
        }
        let data = std::mem::take(&mut *self.buf.lock().unwrap_or_else(|e| e.into_inner()));
        (data, complete)
    }
}

fn lossy(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

#[cfg(unix)]
fn signal_of(status: &ExitStatus) -> Option<(i32, bool)> {
    use std::os::unix::process::ExitStatusExt;
    status.signal().map(|s| (s, status.core_dumped()))
}

#[cfg(not(unix))]
fn signal_of(_status: &ExitStatus) -> Option<(i32, bool)> {
    None
}

/// A finished process: exit status, everything it wrote, how long it took.
#[derive(Debug, Clone)]
pub struct Output {
    /// The command line, as [`Cmd::display`] gives it.
    pub command: String,
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub duration: Duration,
}

impl Output {
    /// Exit code 0.
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// The exit code, `None` when the process died from a signal.
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// The signal that ended the process, if one did.
    pub fn signal(&self) -> Option<i32> {
        signal_of(&self.status).map(|(s, _)| s)
    }

    /// stdout as text (invalid UTF-8 replaced).
    pub fn stdout_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.stdout)
    }

    /// stderr as text (invalid UTF-8 replaced).
    pub fn stderr_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.stderr)
    }

    /// stderr then stdout, as one text (what a compiler said, whichever stream it used).
    pub fn combined_lossy(&self) -> String {
        let mut s = self.stderr_lossy().into_owned();
        let out = self.stdout_lossy();
        if !out.is_empty() {
            if !s.is_empty() && !s.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(&out);
        }
        s
    }
}

/// Why a command did not run to a successful end.
#[derive(Debug)]
#[non_exhaustive]
pub enum CommandError {
    /// The program is not in `PATH` (or the path given does not name an executable file).
    NotFound {
        program: String,
        /// The `PATH` directories searched, or the one path tried for a program given as a path.
        searched: Vec<PathBuf>,
        command: String,
    },
    /// The program exists but could not be started (permissions, bad format, missing cwd...).
    SpawnFailed { command: String, source: io::Error },
    /// It ran and exited with a non-zero code (only from [`Cmd::run_checked`]).
    NonZeroExit { command: String, code: i32, stdout: String, stderr: String },
    /// It was killed by a signal it did not get from us (only from [`Cmd::run_checked`]).
    Signaled { command: String, signal: i32, core_dumped: bool, stdout: String, stderr: String },
    /// It exceeded its time limit; its process group was killed. Output up to that point.
    TimedOut { command: String, limit: Duration, stdout: String, stderr: String },
    /// Waiting for the process failed.
    Io { command: String, source: io::Error },
}

impl CommandError {
    /// The command line that failed.
    pub fn command(&self) -> &str {
        match self {
            CommandError::NotFound { command, .. }
            | CommandError::SpawnFailed { command, .. }
            | CommandError::NonZeroExit { command, .. }
            | CommandError::Signaled { command, .. }
            | CommandError::TimedOut { command, .. }
            | CommandError::Io { command, .. } => command,
        }
    }

    /// The captured stdout, when the process ran.
    pub fn stdout(&self) -> Option<&str> {
        match self {
            CommandError::NonZeroExit { stdout, .. }
            | CommandError::Signaled { stdout, .. }
            | CommandError::TimedOut { stdout, .. } => Some(stdout),
            _ => None,
        }
    }

    /// The captured stderr, when the process ran.
    pub fn stderr(&self) -> Option<&str> {
        match self {
            CommandError::NonZeroExit { stderr, .. }
            | CommandError::Signaled { stderr, .. }
            | CommandError::TimedOut { stderr, .. } => Some(stderr),
            _ => None,
        }
    }

    /// True for [`CommandError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, CommandError::NotFound { .. })
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::NotFound { program, searched, command } => {
                if program.contains('/') {
                    write!(f, "unable to find `{program}`: no executable file at ")?;
                    let tried: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
                    write!(f, "{}", tried.join(", "))?;
                } else if program.is_empty() {
                    write!(f, "unable to find ``: the program name is empty")?;
                } else {
                    write!(f, "unable to find `{program}` in PATH (searched: ")?;
                    if searched.is_empty() {
                        f.write_str("no directories, PATH is empty")?;
                    } else {
                        let dirs: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
                        f.write_str(&dirs.join(":"))?;
                    }
                    f.write_str(")")?;
                }
                write!(f, "\n  command: {command}")
            }
            CommandError::SpawnFailed { command, source } => {
                write!(f, "failed to start: {source}\n  command: {command}")
            }
            CommandError::NonZeroExit { command, code, stdout, stderr } => {
                write!(f, "command failed with exit code {code}\n  command: {command}")?;
                write_streams(f, stdout, stderr)
            }
            CommandError::Signaled { command, signal, core_dumped, stdout, stderr } => {
                write!(f, "command killed by signal {signal} ({})", signal_name(*signal))?;
                if *core_dumped {
                    f.write_str(", core dumped")?;
                }
                if let Some(hint) = signal_hint(*signal) {
                    write!(f, " ({hint})")?;
                }
                write!(f, "\n  command: {command}")?;
                write_streams(f, stdout, stderr)
            }
            CommandError::TimedOut { command, limit, stdout, stderr } => {
                write!(
                    f,
                    "command timed out after {} and was killed (with every process it started)\n  command: {command}",
                    format_duration(*limit)
                )?;
                write_streams(f, stdout, stderr)
            }
            CommandError::Io { command, source } => {
                write!(f, "I/O error while waiting for the command: {source}\n  command: {command}")
            }
        }
    }
}

impl std::error::Error for CommandError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CommandError::SpawnFailed { source, .. } | CommandError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn write_streams(f: &mut fmt::Formatter<'_>, stdout: &str, stderr: &str) -> fmt::Result {
    if stdout.trim().is_empty() && stderr.trim().is_empty() {
        return f.write_str("\n  (no output)");
    }
    for (name, text) in [("stderr", stderr), ("stdout", stdout)] {
        if text.trim().is_empty() {
            continue;
        }
        write!(f, "\n--- {name} ---\n")?;
        let shown = clip_output(text, SHOWN_OUTPUT_BYTES);
        f.write_str(shown.trim_end_matches('\n'))?;
    }
    Ok(())
}

/// Shortens `text` to about `max` bytes for a message: keeps the first quarter and the last
/// three quarters (a compiler's first error is at the top, a build's failure at the bottom),
/// cut at line boundaries where possible, with a line saying how much was left out.
pub fn clip_output(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let head_budget = max / 4;
    let tail_budget = max - head_budget;
    let mut head_end = floor_char_boundary(text, head_budget);
    if let Some(nl) = text[..head_end].rfind('\n') {
        head_end = nl + 1;
    }
    let mut tail_start = ceil_char_boundary(text, text.len() - tail_budget);
    if let Some(nl) = text[tail_start..].find('\n') {
        if tail_start + nl + 1 < text.len() {
            tail_start += nl + 1;
        }
    }
    let cut = &text[head_end..tail_start];
    let cut_lines = cut.matches('\n').count();
    let mut head = text[..head_end].to_string();
    if !head.is_empty() && !head.ends_with('\n') {
        head.push('\n');
    }
    Cow::Owned(format!(
        "{head}[... {} bytes ({cut_lines} lines) cut ...]\n{}",
        cut.len(),
        &text[tail_start..]
    ))
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

fn format_duration(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Quotes one word for a POSIX shell: unchanged when it only has safe characters, otherwise
/// in single quotes (with `'` written as `'\''`).
pub fn shell_quote(word: &OsStr) -> String {
    let s = word.to_string_lossy();
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-+=/.,:@%^".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        return s.into_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The conventional name of a signal number (`SIGKILL` for 9), or `"unknown signal"`.
pub fn signal_name(signal: i32) -> &'static str {
    // Numbers shared by every Unix.
    let common = match signal {
        1 => Some("SIGHUP"),
        2 => Some("SIGINT"),
        3 => Some("SIGQUIT"),
        4 => Some("SIGILL"),
        5 => Some("SIGTRAP"),
        6 => Some("SIGABRT"),
        8 => Some("SIGFPE"),
        9 => Some("SIGKILL"),
        11 => Some("SIGSEGV"),
        13 => Some("SIGPIPE"),
        14 => Some("SIGALRM"),
        15 => Some("SIGTERM"),
        _ => None,
    };
    if let Some(name) = common {
        return name;
    }
    #[cfg(target_os = "linux")]
    {
        match signal {
            7 => "SIGBUS",
            10 => "SIGUSR1",
            12 => "SIGUSR2",
            16 => "SIGSTKFLT",
            17 => "SIGCHLD",
            18 => "SIGCONT",
            19 => "SIGSTOP",
            20 => "SIGTSTP",
            21 => "SIGTTIN",
            22 => "SIGTTOU",
            23 => "SIGURG",
            24 => "SIGXCPU",
            25 => "SIGXFSZ",
            26 => "SIGVTALRM",
            27 => "SIGPROF",
            28 => "SIGWINCH",
            29 => "SIGIO",
            30 => "SIGPWR",
            31 => "SIGSYS",
            _ => "unknown signal",
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        "unknown signal"
    }
}

fn signal_hint(signal: i32) -> Option<&'static str> {
    match signal {
        9 => Some("SIGKILL from outside: often the out-of-memory killer"),
        11 => Some("the program crashed"),
        6 => Some("the program aborted, e.g. a failed assertion"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote(OsStr::new("g++")), "g++");
        assert_eq!(shell_quote(OsStr::new("-DX=1")), "-DX=1");
        assert_eq!(shell_quote(OsStr::new("a b")), "'a b'");
        assert_eq!(shell_quote(OsStr::new("")), "''");
        assert_eq!(shell_quote(OsStr::new("it's")), r"'it'\''s'");
        assert_eq!(shell_quote(OsStr::new("$HOME")), "'$HOME'");
    }

    #[test]
    fn display_has_cwd_env_and_quotes() {
        let c = Cmd::new("g++")
            .arg("-fsyntax-only")
            .arg("my file.cpp")
            .cwd("/tmp/a b")
            .env("LC_ALL", "C")
            .env("X", "1 2")
            .env("LC_ALL", "POSIX")
            .env_remove("CPATH");
        assert_eq!(
            c.display(),
            "(cd '/tmp/a b' && env -u CPATH LC_ALL=POSIX X='1 2' g++ -fsyntax-only 'my file.cpp')"
        );
        assert_eq!(Cmd::new("ls").arg("-l").display(), "ls -l");
        assert_eq!(c.to_string(), c.display());
    }

    #[test]
    fn clip_keeps_head_and_tail() {
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let clipped = clip_output(&text, 1000);
        assert!(clipped.len() < 1200, "{}", clipped.len());
        assert!(clipped.starts_with("line 0\n"));
        assert!(clipped.ends_with("line 1999\n"));
        assert!(clipped.contains("bytes ("), "{clipped}");
        assert!(clipped.contains("lines) cut ...]"));
        assert_eq!(clip_output("short", 1000), "short");
        // Never splits a character.
        let wide = "é".repeat(3000);
        let c = clip_output(&wide, 101);
        assert!(c.contains("cut"));
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(11), "SIGSEGV");
        assert_eq!(signal_name(999), "unknown signal");
    }

    #[test]
    fn path_override_is_used_for_lookup() {
        let err = Cmd::new("sh").env("PATH", "/nonexistent-opgen-dir").run().unwrap_err();
        match &err {
            CommandError::NotFound { searched, .. } => {
                assert_eq!(searched, &[PathBuf::from("/nonexistent-opgen-dir")]);
            }
            other => panic!("expected NotFound, got {other:?}"),
        }
        assert!(err.to_string().contains("/nonexistent-opgen-dir"));
    }

    #[test]
    fn durations() {
        assert_eq!(format_duration(Duration::from_millis(200)), "200 ms");
        assert_eq!(format_duration(Duration::from_secs(5)), "5 s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5 s");
    }
}
