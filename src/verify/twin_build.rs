//! Builds the CPU-twin runner of one op and dtype combination: the generated op_host and
//! op_kernel sources compiled with g++ against kernels/twin/, linked with the twin runtime and
//! runner. Objects and executables are cached in the per-user cache every clone shares
//! (`$OPGEN_CACHE/twin/<compiler>/`, [`cache_dir`]), keyed by a hash of every input (sources,
//! twin headers, flags; the compiler's `--version` names the directory), so a rebuild happens
//! only when something changed, also in a clean clone (CI).

use super::TwinError;
use crate::codegen::{render_twin_launch, Project, HOST_COMMON_HEADER, KERNEL_COMMON_HEADER};
use crate::spec::OpSpec;
use crate::toolchain::command::Cmd;
use crate::toolchain::user_cache::{compiler_cache_dir, prune_build_caches, touch, tree_hash, Fnv};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How the twin is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildOptions {
    /// AddressSanitizer + UndefinedBehaviorSanitizer (default on: every rule violation that
    /// slips past the twin's own checks still stops the run).
    pub sanitize: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions { sanitize: true }
    }
}

impl BuildOptions {
    fn flags(self) -> Vec<&'static str> {
        let twin = TwinFlags::get();
        let mut flags = twin.cxx.clone();
        flags.extend(["-O1", "-fno-omit-frame-pointer"]);
        flags.extend(twin.warnings.iter().copied());
        if self.sanitize {
            // Debug info for the sanitizers' stack traces only: it is a quarter of a kernel's
            // compile time, and the unsanitized runners (report, --no-sanitize) are for speed.
            flags.push("-g");
            flags.extend(twin.sanitize.iter().copied());
        }
        flags
    }
}

/// The twin's compiler flags, defined once in kernels/twin/cxxflags.sh (which the twin's shell
/// suites source): every build against the twin starts from them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TwinFlags {
    /// Language and numerics (`-std=c++17 -ffp-contract=off`).
    pub cxx: Vec<&'static str>,
    pub warnings: Vec<&'static str>,
    pub sanitize: Vec<&'static str>,
}

const CXXFLAGS_FILE: &str = include_str!("../../kernels/twin/cxxflags.sh");

impl TwinFlags {
    pub fn get() -> &'static TwinFlags {
        static FLAGS: std::sync::OnceLock<TwinFlags> = std::sync::OnceLock::new();
        FLAGS.get_or_init(|| TwinFlags::parse(CXXFLAGS_FILE))
    }

    /// `NAME="a b"` lines; comments and blank lines skipped. A name the file lacks is a bug of
    /// the repository, not of the input: it panics naming it.
    fn parse(text: &'static str) -> TwinFlags {
        let var = |name: &str| -> Vec<&'static str> {
            text.lines()
                .filter_map(|l| l.strip_prefix(name)?.strip_prefix("=\""))
                .filter_map(|l| l.strip_suffix('"'))
                .next()
                .unwrap_or_else(|| panic!("kernels/twin/cxxflags.sh defines no {name}"))
                .split_whitespace()
                .collect()
        };
        TwinFlags {
            cxx: var("OPGEN_TWIN_CXXFLAGS"),
            warnings: var("OPGEN_TWIN_WARNINGS"),
            sanitize: var("OPGEN_TWIN_SANITIZE"),
        }
    }
}

/// The twin sources in the repository.
pub fn twin_dir() -> PathBuf {
    crate::repo_root().join("kernels").join("twin")
}

/// The twin's object and runner cache of this machine's compiler, shared by every clone:
/// `$OPGEN_CACHE/twin/gxx-<hash of g++ --version>` ([`compiler_cache_dir`]).
pub fn cache_dir() -> PathBuf {
    compiler_cache_dir("twin")
}

/// A built runner executable.
#[derive(Debug, Clone)]
pub struct Runner {
    pub exe: PathBuf,
    pub op: String,
    pub column: usize,
    /// The perturbed-numerics mode for its runs: (k float32 ULP, seed); None: libm results
    /// (kernels/twin/include/opgen_twin/kernel/perturb.h).
    pub perturb: Option<(u32, u64)>,
    /// Numeric profiles for its runs (`ftz`, `saturate`: kernels/twin/include/opgen_twin/kernel/
    /// profile.h); empty: IEEE subnormals and the Inf/NaN overflow mode.
    pub profiles: Vec<NumericProfile>,
}

fn io_error(path: &Path, e: std::io::Error) -> TwinError {
    TwinError::Build(format!("{}: {e}", path.display()))
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), TwinError> {
    if fs::read_to_string(path).ok().as_deref() == Some(text) {
        touch(path); // in use: kept by the cache's size cap
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    }
    fs::write(path, text).map_err(|e| io_error(path, e))
}

pub(crate) struct Compile {
    pub source: PathBuf,
    pub object: PathBuf,
    pub args: Vec<String>,
}

/// Compiles (in parallel, at most `jobs` at a time) every object not in the cache yet.
pub(crate) fn compile_all(jobs: Vec<Compile>, parallel: usize) -> Result<(), TwinError> {
    let (done, todo): (Vec<Compile>, Vec<Compile>) = jobs.into_iter().partition(|c| c.object.exists());
    // Cached objects about to be linked are in use: the size cap keeps them.
    done.iter().for_each(|c| touch(&c.object));
    let chunks: Vec<&[Compile]> = todo.chunks(todo.len().div_ceil(parallel.max(1)).max(1)).collect();
    let results: Vec<Result<(), TwinError>> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    for c in chunk {
                        compile_one(c)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("compile thread panicked")).collect()
    });
    results.into_iter().collect()
}

fn compile_one(c: &Compile) -> Result<(), TwinError> {
    // A name of its own: two builds of the same object (threads or processes) must not share a temp file.
    let partial = c.object.with_extension(format!("o.part{}", unique_suffix()));
    Cmd::new("g++")
        .args(&c.args)
        .arg("-c")
        .arg(&c.source)
        .arg("-o")
        .arg(&partial)
        .timeout(Duration::from_secs(600))
        .stdin_null()
        .run_checked()
        .map_err(|e| {
            TwinError::Build(format!("compiling {} for the CPU twin failed:\n{e}", c.source.display()))
        })?;
    // Renamed only when complete, so an interrupted build never leaves a bad cache entry.
    fs::rename(&partial, &c.object).map_err(|e| io_error(&c.object, e))
}

/// Builds (or finds in the cache) the runner for `spec` in dtype combination `column`.
pub fn build_runner(
    project: &Project,
    spec: &OpSpec,
    column: usize,
    opts: BuildOptions,
) -> Result<Runner, TwinError> {
    prune_build_caches();
    let twin = twin_dir();
    let include = twin.join("include");
    let cache = cache_dir();
    let flags: Vec<String> = opts.flags().iter().map(|s| s.to_string()).collect();
    let headers = tree_hash(&include, Fnv::new());

    // The generated sources of this op, written where the compiler can see them.
    let stem = spec.file_stem();
    // The op's sources and the project's common helper headers they include (quoted includes,
    // found beside them as in the CANN build).
    let sources = [
        format!("op_host/{stem}.cpp"),
        format!("op_host/{stem}_tiling.h"),
        format!("op_kernel/{stem}.cpp"),
        HOST_COMMON_HEADER.to_string(),
        KERNEL_COMMON_HEADER.to_string(),
    ];
    let contents = |rel: &str| project.file(rel).map(|f| f.contents.as_bytes()).unwrap_or_default();
    let src_key = sources.iter().fold(Fnv::new(), |h, rel| h.bytes(contents(rel))).hex();
    // The op's objects depend on the common headers too (the object key hashes only its source).
    let common_key =
        Fnv::new().bytes(contents(HOST_COMMON_HEADER)).bytes(contents(KERNEL_COMMON_HEADER)).hex();
    let src_dir = cache.join("src").join(format!("{stem}-{src_key}"));
    for rel in &sources {
        let file = project
            .file(rel)
            .ok_or_else(|| TwinError::Build(format!("the generated project has no {rel}")))?;
        write_if_changed(&src_dir.join(rel), &file.contents)?;
    }
    let launch = render_twin_launch(spec).map_err(|e| TwinError::Build(e.to_string()))?;
    write_if_changed(&src_dir.join("twin_launch.cpp"), &launch)?;

    let obj_dir = cache.join("obj");
    fs::create_dir_all(&obj_dir).map_err(|e| io_error(&obj_dir, e))?;
    let base_args: Vec<String> =
        flags.iter().cloned().chain(["-I".to_string(), include.display().to_string()]).collect();
    // `deps`: a hash of the headers `source` includes beside it (empty for the twin's runtime).
    // The key holds the twin headers' contents, not their path, so clones share the objects.
    let object = |source: &Path, extra: &[String], deps: &str| -> Compile {
        let key = Fnv::new()
            .bytes(&fs::read(source).unwrap_or_default())
            .bytes(deps.as_bytes())
            .bytes(headers.hex().as_bytes())
            .bytes(flags.join(" ").as_bytes())
            .bytes(extra.join(" ").as_bytes())
            .hex();
        let name = source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        Compile {
            source: source.to_path_buf(),
            object: obj_dir.join(format!("{name}-{key}.o")),
            args: base_args.iter().chain(extra).cloned().collect(),
        }
    };

    let mut jobs = Vec::new();
    let mut runtime_sources: Vec<PathBuf> = fs::read_dir(twin.join("src"))
        .map_err(|e| io_error(&twin.join("src"), e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
        .collect();
    runtime_sources.sort();
    for s in &runtime_sources {
        jobs.push(object(s, &[], ""));
    }
    let host_extra = vec!["-I".to_string(), src_dir.join("op_host").display().to_string()];
    jobs.push(object(&src_dir.join(format!("op_host/{stem}.cpp")), &host_extra, &common_key));
    let defines: Vec<String> = spec
        .column(column)
        .into_iter()
        .map(|(name, dtype)| format!("-DDTYPE_{}={}", name.to_ascii_uppercase(), dtype.cpp_type()))
        .collect();
    jobs.push(object(&src_dir.join(format!("op_kernel/{stem}.cpp")), &defines, &common_key));
    jobs.push(object(&src_dir.join("twin_launch.cpp"), &[], ""));

    let exe_key = jobs.iter().fold(Fnv::new(), |h, c| h.bytes(c.object.to_string_lossy().as_bytes())).hex();
    let exe = cache.join("bin").join(format!("{stem}-c{column}-{exe_key}"));
    let objects: Vec<PathBuf> = jobs.iter().map(|c| c.object.clone()).collect();
    if !exe.exists() {
        compile_all(jobs, 2)?;
        let bin = exe.parent().expect("bin dir");
        fs::create_dir_all(bin).map_err(|e| io_error(bin, e))?;
        let partial = exe.with_extension(format!("part{}", unique_suffix()));
        Cmd::new("g++")
            .args(&flags)
            .args(&objects)
            .arg("-o")
            .arg(&partial)
            .timeout(Duration::from_secs(300))
            .stdin_null()
            .run_checked()
            .map_err(|e| {
                TwinError::Build(format!("linking the twin runner of `{}` failed:\n{e}", spec.name))
            })?;
        fs::rename(&partial, &exe).map_err(|e| io_error(&exe, e))?;
    } else {
        // Used now: the size cap removes least recently used runners first.
        touch(&exe);
    }
    Ok(Runner { exe, op: spec.name.clone(), column, perturb: None, profiles: Vec::new() })
}

/// `<pid>-<n>`, unique per call across threads and processes.
pub(crate) fn unique_suffix() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// A numeric mode the A2 documentation leaves open, as the twin can switch it on
/// (kernels/twin/include/opgen_twin/kernel/profile.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NumericProfile {
    /// float32 vector arithmetic and Cast flush subnormal inputs and results to zero.
    Ftz,
    /// Overflow saturates to the largest finite value and NaN becomes 0 (instead of Inf/NaN).
    Saturate,
}

impl NumericProfile {
    pub fn name(self) -> &'static str {
        match self {
            NumericProfile::Ftz => "ftz",
            NumericProfile::Saturate => "saturate",
        }
    }
}
