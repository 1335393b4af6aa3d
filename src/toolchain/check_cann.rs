//! `check-cann`: syntax-checks a generated project against a real CANN toolkit's headers.
//!
//! Every `op_kernel/*.cpp` is compiled with the host g++ in AscendC CPU-debug mode, once per
//! set of dtype defines it is built for, and every `op_host/*.cpp` once; then all op_host files
//! are compiled and linked together into one throw-away shared library with `-flto
//! -Werror=odr` ([`HOST_LINK_FLAGS`]), as CANN links them into one library, so two ops' helper
//! types with one name are an error here rather than undefined behaviour there. Nothing is run. The flags (see [`KERNEL_FLAGS`], [`HOST_FLAGS`]) were checked by hand against CANN
//! 8.1.RC1. Files are compiled [`CheckOptions::jobs`] at a time, each through
//! [`Cmd`], and every outcome is kept with the compiler's output.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::cann::CannToolkit;
use super::command::{clip_output, find_in_path, Cmd, CommandError};

/// Flags for kernels: C++17, AscendC's CPU-debug mode, an A2/A3 (dav-c220) vector core.
pub const KERNEL_FLAGS: &[&str] = &[
    "-fsyntax-only",
    "-std=c++17",
    "-D__CCE_KT_TEST__=1",
    "-DASCENDC_CPU_DEBUG=1",
    "-D__CCE_AICORE__=220",
    "-D__DAV_C220__",
    "-D_GLIBCXX_USE_CXX11_ABI=0",
];

/// Flags for op_host files (CANN's opbuild compiles them as C++11).
pub const HOST_FLAGS: &[&str] = &["-fsyntax-only", "-std=c++11", "-D_GLIBCXX_USE_CXX11_ABI=0"];

/// Flags for the link of every op_host file into one shared library: link-time optimisation
/// is what lets g++ compare a type's definitions across translation units (`-Wodr`), made an
/// error. The library goes to /dev/null: only the diagnostics matter.
pub const HOST_LINK_FLAGS: &[&str] =
    &["-shared", "-fPIC", "-flto", "-O1", "-Werror=odr", "-std=c++11", "-D_GLIBCXX_USE_CXX11_ABI=0"];

/// One set of preprocessor defines: `(name, value)` pairs, full macro names
/// (`("DTYPE_X", "half")` becomes `-DDTYPE_X=half`; an empty value gives `-DNAME`).
pub type Defines = Vec<(String, String)>;

/// The define sets one kernel file is built for (one per dtype combination).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelDefines {
    /// The kernel file: relative to the project directory (`op_kernel/rms_norm.cpp`), or absolute.
    pub file: PathBuf,
    /// One compile per entry. Empty: compiled once without extra defines.
    pub variants: Vec<Defines>,
}

impl KernelDefines {
    pub fn new(file: impl Into<PathBuf>, variants: Vec<Defines>) -> KernelDefines {
        KernelDefines { file: file.into(), variants }
    }
}

impl From<(PathBuf, Vec<Defines>)> for KernelDefines {
    fn from((file, variants): (PathBuf, Vec<Defines>)) -> KernelDefines {
        KernelDefines { file, variants }
    }
}

/// How to run the check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOptions {
    /// The define sets per kernel file; kernels not listed are compiled once without defines.
    pub kernel_defines: Vec<KernelDefines>,
    /// The host C++ compiler (default `g++`).
    pub compiler: OsString,
    /// Files compiled at the same time (default 2; 0 counts as 1).
    pub jobs: usize,
    /// Time limit per compile (default 10 minutes).
    pub timeout: Duration,
}

impl Default for CheckOptions {
    fn default() -> CheckOptions {
        CheckOptions {
            kernel_defines: Vec::new(),
            compiler: "g++".into(),
            jobs: 2,
            timeout: Duration::from_secs(600),
        }
    }
}

/// Kernel, op_host, or the link of all op_host files into one library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Kernel,
    Host,
    /// Every op_host file in one `-flto -Werror=odr` link (its entry's file is `op_host/*.cpp`).
    HostLink,
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::Kernel => "kernel",
            FileKind::Host => "op_host",
            FileKind::HostLink => "op_host link (ODR)",
        })
    }
}

/// One compile to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckJob {
    /// Relative to the project directory.
    pub file: PathBuf,
    pub kind: FileKind,
    pub defines: Defines,
    pub cmd: Cmd,
}

/// The outcome of one compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckEntry {
    /// Relative to the project directory.
    pub file: PathBuf,
    pub kind: FileKind,
    pub defines: Defines,
    /// The command line, as [`Cmd::display`] gives it.
    pub command: String,
    pub passed: bool,
    /// What the compiler printed (stderr then stdout; warnings for a passing file), or the
    /// runner's message when the compile did not finish (timeout, signal).
    pub output: String,
    pub duration: Duration,
}

impl CheckEntry {
    /// The compiler's first error line (`file:line:col: error: ...`), if it printed one.
    pub fn first_error(&self) -> Option<&str> {
        self.output.lines().find(|l| l.contains(": error:") || l.contains("fatal error:"))
    }
}

/// Every compile of a project, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    pub project_dir: PathBuf,
    pub toolkit_root: PathBuf,
    pub toolkit_version: String,
    pub entries: Vec<CheckEntry>,
}

impl CheckReport {
    /// True when every compile passed.
    pub fn passed(&self) -> bool {
        self.entries.iter().all(|e| e.passed)
    }

    /// The compiles that failed.
    pub fn failures(&self) -> impl Iterator<Item = &CheckEntry> {
        self.entries.iter().filter(|e| !e.passed)
    }
}

fn defines_text(defines: &Defines) -> String {
    if defines.is_empty() {
        return "-".into();
    }
    defines
        .iter()
        .map(|(k, v)| if v.is_empty() { k.clone() } else { format!("{k}={v}") })
        .collect::<Vec<_>>()
        .join(" ")
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "check-cann: {} against CANN {} at {}",
            self.project_dir.display(),
            self.toolkit_version,
            self.toolkit_root.display()
        )?;
        let rows: Vec<[String; 5]> = self
            .entries
            .iter()
            .map(|e| {
                [
                    e.file.display().to_string(),
                    e.kind.to_string(),
                    defines_text(&e.defines),
                    if e.passed { "ok" } else { "FAIL" }.to_string(),
                    format!("{:.1}s", e.duration.as_secs_f64()),
                ]
            })
            .collect();
        let header = ["file", "kind", "defines", "result", "time"].map(String::from);
        let mut widths = header.clone().map(|h| h.len());
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for row in std::iter::once(&header).chain(&rows) {
            let line =
                row.iter().zip(widths).map(|(cell, w)| format!("{cell:<w$}")).collect::<Vec<_>>().join("  ");
            writeln!(f, "{}", line.trim_end())?;
        }
        let failed = self.failures().count();
        writeln!(
            f,
            "{} compiles: {} passed, {failed} failed",
            self.entries.len(),
            self.entries.len() - failed
        )?;
        for e in self.failures() {
            writeln!(f, "\nFAIL {} ({}, {})", e.file.display(), e.kind, defines_text(&e.defines))?;
            writeln!(f, "$ {}", e.command)?;
            if let Some(first) = e.first_error() {
                writeln!(f, "first error: {first}")?;
            }
            writeln!(f, "{}", clip_output(&e.output, super::command::SHOWN_OUTPUT_BYTES).trim_end())?;
        }
        Ok(())
    }
}

/// Why the check could not run at all (a file failing to compile is not an error: it is a
/// failed entry of the report).
#[derive(Debug)]
#[non_exhaustive]
pub enum CheckError {
    /// The project directory has no `op_kernel/*.cpp` and no `op_host/*.cpp`.
    NoSources { project_dir: PathBuf },
    /// Defines were given for a kernel file that is not in `op_kernel/`.
    UnknownKernel { file: PathBuf, project_dir: PathBuf },
    /// Reading the project directory failed.
    Io { path: PathBuf, source: std::io::Error },
    /// The host compiler is missing or cannot be started.
    Compiler(CommandError),
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::NoSources { project_dir } => write!(
                f,
                "{} has no op_kernel/*.cpp and no op_host/*.cpp: not a generated CANN project",
                project_dir.display()
            ),
            CheckError::UnknownKernel { file, project_dir } => write!(
                f,
                "dtype defines given for kernel {}, which is not a .cpp file in {}/op_kernel",
                file.display(),
                project_dir.display()
            ),
            CheckError::Io { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            CheckError::Compiler(e) => write!(f, "host compiler unusable: {e}"),
        }
    }
}

impl std::error::Error for CheckError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CheckError::Io { source, .. } => Some(source),
            CheckError::Compiler(e) => Some(e),
            _ => None,
        }
    }
}

/// `*.cpp` files directly in `dir`, sorted; none when `dir` does not exist.
fn cpp_files(dir: &Path) -> Result<Vec<PathBuf>, CheckError> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let rd = std::fs::read_dir(dir).map_err(|source| CheckError::Io { path: dir.to_path_buf(), source })?;
    let mut files = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|source| CheckError::Io { path: dir.to_path_buf(), source })?;
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "cpp") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Whether `kd` is about `kernel` (a path inside `project_dir/op_kernel`).
fn names_kernel(project_dir: &Path, kd: &KernelDefines, kernel: &Path) -> bool {
    let full = if kd.file.is_absolute() { kd.file.clone() } else { project_dir.join(&kd.file) };
    full == kernel || matches!((full.canonicalize(), kernel.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

fn include_args(dirs: &[PathBuf]) -> Vec<OsString> {
    dirs.iter().flat_map(|d| [OsString::from("-I"), d.as_os_str().to_os_string()]).collect()
}

/// The compiles [`check_project`] would run, in order, without running them (for `--dry-run`).
pub fn plan_checks(
    project_dir: &Path,
    toolkit: &CannToolkit,
    options: &CheckOptions,
) -> Result<Vec<CheckJob>, CheckError> {
    let kernels = cpp_files(&project_dir.join("op_kernel"))?;
    let hosts = cpp_files(&project_dir.join("op_host"))?;
    if kernels.is_empty() && hosts.is_empty() {
        return Err(CheckError::NoSources { project_dir: project_dir.to_path_buf() });
    }
    let rel = |p: &Path| p.strip_prefix(project_dir).unwrap_or(p).to_path_buf();
    for kd in &options.kernel_defines {
        if !kernels.iter().any(|k| names_kernel(project_dir, kd, k)) {
            return Err(CheckError::UnknownKernel {
                file: kd.file.clone(),
                project_dir: project_dir.to_path_buf(),
            });
        }
    }

    let base = |flags: &[&str]| {
        Cmd::new(&options.compiler)
            .args(flags)
            .cwd(project_dir)
            // English diagnostics, independent of the user's locale.
            .env("LC_ALL", "C")
            .timeout(options.timeout)
            .stdin_null()
    };
    let mut jobs = Vec::new();
    for kernel in &kernels {
        let rel_path = rel(kernel);
        let variants: Vec<Defines> = options
            .kernel_defines
            .iter()
            .filter(|kd| names_kernel(project_dir, kd, kernel))
            .flat_map(|kd| kd.variants.clone())
            .collect();
        let variants = if variants.is_empty() { vec![Vec::new()] } else { variants };
        for defines in variants {
            let cmd =
                base(KERNEL_FLAGS)
                    .args(defines.iter().map(|(k, v)| {
                        if v.is_empty() {
                            format!("-D{k}")
                        } else {
                            format!("-D{k}={v}")
                        }
                    }))
                    .args(include_args(&toolkit.kernel_include_dirs))
                    .arg(&rel_path);
            jobs.push(CheckJob { file: rel_path.clone(), kind: FileKind::Kernel, defines, cmd });
        }
    }
    let mut host_dirs = toolkit.host_include_dirs.clone();
    host_dirs.push(project_dir.join("op_host"));
    for host in &hosts {
        let rel_path = rel(host);
        let cmd = base(HOST_FLAGS).args(include_args(&host_dirs)).arg(&rel_path);
        jobs.push(CheckJob { file: rel_path, kind: FileKind::Host, defines: Vec::new(), cmd });
    }
    if !hosts.is_empty() {
        let cmd = base(HOST_LINK_FLAGS)
            .args(include_args(&host_dirs))
            .args(hosts.iter().map(|h| rel(h)))
            .args(["-o", "/dev/null"]);
        jobs.push(CheckJob {
            file: PathBuf::from("op_host/*.cpp"),
            kind: FileKind::HostLink,
            defines: Vec::new(),
            cmd,
        });
    }
    Ok(jobs)
}

/// Compiles every kernel (once per define set) and every op_host file of the generated project
/// in `project_dir` against `toolkit`'s headers, `options.jobs` at a time.
pub fn check_project(
    project_dir: &Path,
    toolkit: &CannToolkit,
    options: &CheckOptions,
) -> Result<CheckReport, CheckError> {
    let jobs = plan_checks(project_dir, toolkit, options)?;
    // A missing compiler would fail every job the same way: say it once.
    let compiler_path = Path::new(&options.compiler);
    if compiler_path.components().count() == 1 {
        if let Err(searched) = find_in_path(&options.compiler, std::env::var_os("PATH").as_deref()) {
            return Err(CheckError::Compiler(CommandError::NotFound {
                program: options.compiler.to_string_lossy().into_owned(),
                searched,
                command: jobs.first().map(|j| j.cmd.display()).unwrap_or_default(),
            }));
        }
    }

    let results = super::pool::map_in_order(&jobs, options.jobs, run_job);

    let mut entries = Vec::with_capacity(jobs.len());
    for result in results {
        entries.push(result.map_err(CheckError::Compiler)?);
    }
    Ok(CheckReport {
        project_dir: project_dir.to_path_buf(),
        toolkit_root: toolkit.root.clone(),
        toolkit_version: toolkit.version.clone(),
        entries,
    })
}

/// Runs one compile: `Err` only when the compiler could not be run at all.
fn run_job(job: &CheckJob) -> Result<CheckEntry, CommandError> {
    let started = std::time::Instant::now();
    let entry = |passed: bool, output: String| CheckEntry {
        file: job.file.clone(),
        kind: job.kind,
        defines: job.defines.clone(),
        command: job.cmd.display(),
        passed,
        output,
        duration: started.elapsed(),
    };
    match job.cmd.run() {
        Ok(out) => {
            let mut text = out.combined_lossy();
            if let Some(sig) = out.signal() {
                text.push_str(&format!(
                    "\n[compiler killed by signal {sig} ({})]",
                    super::command::signal_name(sig)
                ));
            }
            Ok(entry(out.success(), text))
        }
        Err(e @ (CommandError::NotFound { .. } | CommandError::SpawnFailed { .. })) => Err(e),
        Err(e) => Ok(entry(false, e.to_string())),
    }
}
