//! Finding a CANN toolkit on this machine.
//!
//! Places looked at, in order: an explicit `--cann DIR`, `$ASCEND_HOME_PATH`,
//! `$ASCEND_TOOLKIT_HOME` (both set by CANN's `set_env.sh`), then the standard install roots
//! ([`standard_roots`]). When `--cann` is given it is the only place looked at: a mistyped path
//! must fail, not silently pick another toolkit. The environment and standard roots fall
//! through to the next place when they do not hold a usable toolkit.
//!
//! A directory is a toolkit root when it has an `<arch>-linux/` directory with the headers,
//! and a version file. Both layouts of an install are accepted: the `latest` directory
//! (`…/ascend-toolkit/latest`, with `version.cfg`) and a version directory
//! (`…/ascend-toolkit/8.1.RC1`, versioned by `<arch>-linux/ascend_toolkit_install.info`).
//! A directory above those (`…/ascend-toolkit` or `/usr/local/Ascend`) is searched for
//! `latest` and then for version directories, newest first.
//!
//! Every candidate gets a verdict with its reasons ([`Discovery`]), which `opgen doctor` prints
//! and which the error names when nothing fits.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// The msOpGen template of a toolkit, whose `cmake/` and `scripts/` build-npu copies into the
/// generated project (relative to the toolkit root).
pub const MSOPGEN_TEMPLATE: &str = "tools/op_project_templates/ascendc/customize";

/// What the caller is going to do with the toolkit, hence what it must contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Headers only (syntax checks of kernels and op_host files: `check-cann`).
    Headers,
    /// Headers and the device compiler, for this machine's architecture (`build-npu`).
    Build,
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Need::Headers => "the headers, for check-cann",
            Need::Build => "the headers and the bisheng compiler, for build-npu",
        })
    }
}

/// A CANN toolkit found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CannToolkit {
    /// The toolkit root: the directory holding `<arch>-linux/`, `compiler/`, `tools/`.
    pub root: PathBuf,
    /// The CANN release, e.g. `8.1.RC1`.
    pub version: String,
    /// The component build version when the version file gives one, e.g. `7.7.0.1.238`.
    pub inner_version: Option<String>,
    /// The file the version was read from.
    pub version_file: PathBuf,
    /// The architecture directory name, e.g. `aarch64-linux` or `x86_64-linux`.
    pub arch_dir: String,
    /// Include directories for syntax-checking kernels in CPU-debug mode, in `-I` order:
    /// `<arch>/ascendc/include/basic_api{,/interface,/impl}`, `<arch>/ascendc/include/highlevel_api`,
    /// `tools/tikicpulib/lib/include`, `<arch>/include`.
    pub kernel_include_dirs: Vec<PathBuf>,
    /// Include directories for op_host files, in `-I` order: `<arch>/include`,
    /// `<arch>/ascendc/include/highlevel_api`.
    pub host_include_dirs: Vec<PathBuf>,
    /// The device compiler (`bisheng`, else `ccec`), absent in a header-only copy.
    pub compiler: Option<PathBuf>,
    /// Where the compiler was looked for, in order.
    pub compiler_candidates: Vec<PathBuf>,
    /// SoC names with a platform config (`<arch>/data/platform_config/*.ini`), sorted.
    pub socs: Vec<String>,
    /// The `set_env.sh` that belongs to this install, when there is one.
    pub set_env: Option<PathBuf>,
}

impl CannToolkit {
    /// `root/<arch_dir>`.
    pub fn arch_path(&self) -> PathBuf {
        self.root.join(&self.arch_dir)
    }

    /// The architecture, e.g. `aarch64`.
    pub fn arch(&self) -> &str {
        self.arch_dir.strip_suffix("-linux").unwrap_or(&self.arch_dir)
    }

    /// Whether the toolkit's binaries are for this machine.
    pub fn matches_host(&self) -> bool {
        self.arch() == std::env::consts::ARCH
    }

    /// Whether a platform config exists for `soc` (case-insensitive, `Ascend910B2` = `ascend910b2`).
    pub fn has_soc(&self, soc: &str) -> bool {
        self.socs.iter().any(|s| s.eq_ignore_ascii_case(soc))
    }
}

/// Where a candidate directory came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `--cann DIR`.
    Flag,
    /// An environment variable (name).
    Env(&'static str),
    /// One of [`standard_roots`].
    Standard,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag => f.write_str("--cann"),
            Source::Env(name) => write!(f, "${name}"),
            Source::Standard => f.write_str("standard root"),
        }
    }
}

/// What was decided about one candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The flag was not given / the variable is not set.
    NotSet,
    /// Not looked at because `--cann` was given.
    NotConsulted,
    /// The same directory as an earlier candidate.
    Duplicate,
    /// Not a toolkit root itself, but an install directory: the candidates found inside it
    /// follow, marked with [`Candidate::inside`].
    Container,
    /// The toolkit used.
    Chosen,
    /// Would be usable, but an earlier candidate was chosen.
    AlsoUsable,
    /// Not usable, with every reason.
    Rejected(Vec<String>),
}

/// One place looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub source: Source,
    /// `None` when the source gave no directory ([`Verdict::NotSet`]).
    pub path: Option<PathBuf>,
    /// The directory given by the source, when this candidate was found inside it.
    pub inside: Option<PathBuf>,
    pub verdict: Verdict,
}

/// The outcome of a search: every candidate with its verdict, and the toolkit chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    pub need: Need,
    pub candidates: Vec<Candidate>,
    pub toolkit: Option<CannToolkit>,
}

impl Discovery {
    /// The chosen toolkit, or the error that explains where we looked.
    pub fn into_result(self) -> Result<CannToolkit, CannNotFound> {
        match self.toolkit {
            Some(t) => Ok(t),
            None => Err(CannNotFound { discovery: Box::new(self) }),
        }
    }
}

impl fmt::Display for Discovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = |c: &Candidate| match &c.inside {
            Some(_) => "  (inside)".to_string(),
            None => c.source.to_string(),
        };
        let width = self.candidates.iter().map(|c| label(c).len()).max().unwrap_or(0);
        for c in &self.candidates {
            let path = c.path.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
            let verdict = match &c.verdict {
                Verdict::NotSet => match c.source {
                    Source::Flag => "not given".to_string(),
                    _ => "not set".to_string(),
                },
                Verdict::NotConsulted => "not consulted (--cann given)".to_string(),
                Verdict::Duplicate => "same directory as above".to_string(),
                Verdict::Container => "install directory, looked inside:".to_string(),
                Verdict::Chosen => "toolkit found, used".to_string(),
                Verdict::AlsoUsable => "usable (an earlier one is used)".to_string(),
                Verdict::Rejected(reasons) => format!("rejected: {}", reasons.join("; ")),
            };
            let sep = if path.is_empty() { "" } else { ": " };
            writeln!(f, "  {:<width$}  {path}{sep}{verdict}", label(c))?;
        }
        Ok(())
    }
}

/// No usable toolkit: the message names every place looked at, why each was rejected, and
/// how to get a toolkit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CannNotFound {
    pub discovery: Box<Discovery>,
}

impl fmt::Display for CannNotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "no usable CANN toolkit found (needed: {})", self.discovery.need)?;
        writeln!(f, "places looked at, in order:")?;
        write!(f, "{}", self.discovery)?;
        f.write_str(&how_to_get_toolkit(self.discovery.need))
    }
}

impl std::error::Error for CannNotFound {}

/// The advice printed when no toolkit is usable.
pub fn how_to_get_toolkit(need: Need) -> String {
    let arch = std::env::consts::ARCH;
    let mut s = format!(
        "how to get a toolkit:\n  \
         - install the CANN toolkit (Ascend-cann-toolkit_<version>_linux-{arch}.run from the Ascend \
         community downloads, 8.1.RC1 or newer)\n    \
         and run `source /usr/local/Ascend/ascend-toolkit/set_env.sh` (or the set_env.sh of \
         your install directory),\n    which sets ASCEND_HOME_PATH;\n  \
         - or pass --cann DIR, DIR being a toolkit root (the directory holding {arch}-linux/, \
         e.g. /usr/local/Ascend/ascend-toolkit/latest).\n"
    );
    if need == Need::Headers {
        s.push_str(
            "  - check-cann needs only the headers: a copy of a toolkit root (any <arch>) with \
             <arch>-linux/include,\n    <arch>-linux/ascendc/include, \
             tools/tikicpulib/lib/include and its version file\n    \
             (version.cfg or <arch>-linux/ascend_toolkit_install.info) is enough.\n",
        );
    }
    s
}

/// The standard install roots, in the order they are tried.
pub fn standard_roots(home: Option<&Path>) -> Vec<PathBuf> {
    let mut roots = vec![
        PathBuf::from("/usr/local/Ascend/ascend-toolkit/latest"),
        PathBuf::from("/usr/local/Ascend/cann"),
    ];
    if let Some(home) = home {
        roots.push(home.join("Ascend/ascend-toolkit/latest"));
    }
    roots
}

/// The inputs of a search, so that tests need not touch the process environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchEnv {
    /// `$ASCEND_HOME_PATH`.
    pub ascend_home_path: Option<PathBuf>,
    /// `$ASCEND_TOOLKIT_HOME`.
    pub ascend_toolkit_home: Option<PathBuf>,
    /// Tried after the variables.
    pub standard_roots: Vec<PathBuf>,
    /// This machine's architecture (`x86_64`, `aarch64`): preferred `<arch>-linux` directory,
    /// and required for [`Need::Build`].
    pub host_arch: String,
}

impl SearchEnv {
    /// The real environment of this process.
    pub fn from_process() -> SearchEnv {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        SearchEnv {
            ascend_home_path: var("ASCEND_HOME_PATH"),
            ascend_toolkit_home: var("ASCEND_TOOLKIT_HOME"),
            standard_roots: standard_roots(var("HOME").as_deref()),
            host_arch: std::env::consts::ARCH.to_string(),
        }
    }

    /// No variables, no standard roots: only an explicit directory is looked at.
    pub fn empty() -> SearchEnv {
        SearchEnv {
            ascend_home_path: None,
            ascend_toolkit_home: None,
            standard_roots: Vec::new(),
            host_arch: std::env::consts::ARCH.to_string(),
        }
    }
}

/// Searches the real environment; see the module documentation for the order.
pub fn discover(explicit: Option<&Path>, need: Need) -> Discovery {
    discover_in(explicit, need, &SearchEnv::from_process())
}

/// [`discover`], then the chosen toolkit or the error naming every place looked at.
pub fn find_toolkit(explicit: Option<&Path>, need: Need) -> Result<CannToolkit, CannNotFound> {
    discover(explicit, need).into_result()
}

/// Searches with the given inputs instead of the process environment.
pub fn discover_in(explicit: Option<&Path>, need: Need, env: &SearchEnv) -> Discovery {
    let mut sources: Vec<(Source, Option<PathBuf>)> = vec![
        (Source::Flag, explicit.map(Path::to_path_buf)),
        (Source::Env("ASCEND_HOME_PATH"), env.ascend_home_path.clone()),
        (Source::Env("ASCEND_TOOLKIT_HOME"), env.ascend_toolkit_home.clone()),
    ];
    sources.extend(env.standard_roots.iter().map(|r| (Source::Standard, Some(r.clone()))));

    let mut candidates = Vec::new();
    let mut toolkit: Option<CannToolkit> = None;
    let mut seen: Vec<PathBuf> = Vec::new();
    for (source, path) in sources {
        if explicit.is_some() && source != Source::Flag {
            candidates.push(Candidate { source, path, inside: None, verdict: Verdict::NotConsulted });
            continue;
        }
        let Some(path) = path else {
            candidates.push(Candidate { source, path: None, inside: None, verdict: Verdict::NotSet });
            continue;
        };
        let key = path.canonicalize().unwrap_or_else(|_| path.clone());
        if seen.contains(&key) {
            candidates.push(Candidate {
                source,
                path: Some(path),
                inside: None,
                verdict: Verdict::Duplicate,
            });
            continue;
        }
        seen.push(key);

        for (found, inside, result) in evaluate(&path, need, env) {
            let verdict = match result {
                Ok(Some(t)) if toolkit.is_none() => {
                    toolkit = Some(t);
                    Verdict::Chosen
                }
                Ok(Some(_)) => Verdict::AlsoUsable,
                Ok(None) => Verdict::Container,
                Err(reasons) => Verdict::Rejected(reasons),
            };
            candidates.push(Candidate { source: source.clone(), path: Some(found), inside, verdict });
        }
    }
    Discovery { need, candidates, toolkit }
}

type Evaluated = (PathBuf, Option<PathBuf>, Result<Option<CannToolkit>, Vec<String>>);

/// The verdicts for one directory given by a source: itself, or the roots inside it.
fn evaluate(path: &Path, need: Need, env: &SearchEnv) -> Vec<Evaluated> {
    if !path.exists() {
        return vec![(path.to_path_buf(), None, Err(vec!["does not exist".into()]))];
    }
    if !path.is_dir() {
        return vec![(path.to_path_buf(), None, Err(vec!["not a directory".into()]))];
    }
    if looks_like_root(path) {
        let r = inspect_root_for(path, need, &env.host_arch).map(Some);
        return vec![(path.to_path_buf(), None, r)];
    }
    let inner = roots_inside(path);
    if inner.is_empty() {
        return vec![(
            path.to_path_buf(),
            None,
            Err(vec![format!(
                "not a toolkit root (no <arch>-linux/ directory, no version.cfg) and no \
                 `latest` or version directory inside"
            )]),
        )];
    }
    let mut out = vec![(path.to_path_buf(), None, Ok(None))];
    for root in inner {
        let r = inspect_root_for(&root, need, &env.host_arch).map(Some);
        out.push((root, Some(path.to_path_buf()), r));
    }
    out
}

/// Has the shape of a toolkit root (whether complete or not).
fn looks_like_root(path: &Path) -> bool {
    path.join("version.cfg").is_file() || !arch_dirs(path).is_empty()
}

/// `<arch>-linux` directories of a root.
fn arch_dirs(root: &Path) -> Vec<String> {
    let mut dirs: Vec<String> =
        read_dir_names(root).into_iter().filter(|n| n.ends_with("-linux") && root.join(n).is_dir()).collect();
    dirs.sort();
    dirs
}

fn read_dir_names(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()).filter_map(|e| e.file_name().into_string().ok()).collect()
}

/// Toolkit roots inside an install directory: `latest`, then version directories (names
/// starting with a digit) newest first; the same under `ascend-toolkit/` for `/usr/local/Ascend`.
fn roots_inside(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for base in [dir.to_path_buf(), dir.join("ascend-toolkit")] {
        if !base.is_dir() {
            continue;
        }
        let latest = base.join("latest");
        if latest.is_dir() {
            out.push(latest);
        }
        let mut versions: Vec<String> = read_dir_names(&base)
            .into_iter()
            .filter(|n| n.starts_with(|c: char| c.is_ascii_digit()) && base.join(n).is_dir())
            .collect();
        versions.sort_by(|a, b| compare_versions(b, a));
        out.extend(versions.into_iter().map(|v| base.join(v)));
    }
    out
}

/// Orders CANN version names: dot-separated parts, numbers numerically, a number newer than a
/// word (`8.0.0` > `8.0.RC3`), words by their text then trailing number (`RC10` > `RC9`).
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn key(part: &str) -> (u8, String, u64) {
        match part.parse::<u64>() {
            Ok(n) => (1, String::new(), n),
            Err(_) => {
                let digits = part.len() - part.chars().rev().take_while(|c| c.is_ascii_digit()).count();
                let (word, num) = part.split_at(digits);
                (0, word.to_ascii_lowercase(), num.parse().unwrap_or(0))
            }
        }
    }
    let mut pa = a.split('.');
    let mut pb = b.split('.');
    loop {
        match (pa.next(), pb.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => match key(x).cmp(&key(y)) {
                Ordering::Equal => {}
                other => return other,
            },
        }
    }
}

/// Inspects one directory as a toolkit root for `need`, on this machine.
pub fn inspect_root(root: &Path, need: Need) -> Result<CannToolkit, Vec<String>> {
    inspect_root_for(root, need, std::env::consts::ARCH)
}

/// [`inspect_root`] for a given host architecture. `Err` lists every reason the directory is
/// not usable.
pub fn inspect_root_for(root: &Path, need: Need, host_arch: &str) -> Result<CannToolkit, Vec<String>> {
    let mut reasons = Vec::new();
    if !root.is_dir() {
        return Err(vec!["does not exist".into()]);
    }
    let host_dir = format!("{host_arch}-linux");
    let arches = arch_dirs(root);
    let arch_dir = if arches.contains(&host_dir) { Some(host_dir.clone()) } else { arches.first().cloned() };
    let Some(arch_dir) = arch_dir else {
        reasons.push(format!("no <arch>-linux directory (expected {host_dir}/ or another <arch>-linux/)"));
        if read_version(root, None).is_none() {
            reasons.push(format!("no version file ({})", version_files_tried(None)));
        }
        return Err(reasons);
    };
    let arch_path = root.join(&arch_dir);

    let version = read_version(root, Some(&arch_dir));
    if version.is_none() {
        reasons.push(format!("no version file ({})", version_files_tried(Some(&arch_dir))));
    }

    let ascendc = arch_path.join("ascendc/include");
    let kernel_include_dirs = vec![
        ascendc.join("basic_api"),
        ascendc.join("basic_api/interface"),
        ascendc.join("basic_api/impl"),
        ascendc.join("highlevel_api"),
        root.join("tools/tikicpulib/lib/include"),
        arch_path.join("include"),
    ];
    let host_include_dirs = vec![arch_path.join("include"), ascendc.join("highlevel_api")];
    let mut missing: Vec<String> = Vec::new();
    for dir in kernel_include_dirs.iter().chain(&host_include_dirs) {
        let rel = dir.strip_prefix(root).unwrap_or(dir).display().to_string();
        if !dir.is_dir() && !missing.contains(&rel) {
            missing.push(rel);
        }
    }
    if !missing.is_empty() {
        reasons.push(format!("missing include dirs: {}", missing.join(", ")));
    } else if !arch_path.join("include/register/op_def_registry.h").is_file()
        || !ascendc.join("basic_api/kernel_operator.h").is_file()
    {
        reasons.push("include dirs exist but lack kernel_operator.h or register/op_def_registry.h".into());
    }

    let compiler_candidates: Vec<PathBuf> =
        ["compiler/ccec_compiler/bin", &format!("{arch_dir}/ccec_compiler/bin"), "tools/ccec_compiler/bin"]
            .iter()
            .flat_map(|d| ["bisheng", "ccec"].map(|exe| root.join(d).join(exe)))
            .collect();
    let compiler = compiler_candidates.iter().find(|p| is_executable_file(p)).cloned();
    if need == Need::Build {
        if compiler.is_none() {
            reasons.push(format!(
                "no device compiler ({})",
                describe_compiler_search(root, &compiler_candidates)
            ));
        }
        if arch_dir != host_dir {
            reasons.push(format!("toolkit is for {arch_dir}, this machine needs {host_dir}"));
        }
    }

    let mut socs: Vec<String> = Vec::new();
    for dir in [arch_path.join("data/platform_config"), root.join("compiler/data/platform_config")] {
        for name in read_dir_names(&dir) {
            if let Some(stem) = name.strip_suffix(".ini") {
                if !socs.iter().any(|s| s == stem) {
                    socs.push(stem.to_string());
                }
            }
        }
    }
    socs.sort();

    let set_env = [root.join("set_env.sh"), root.parent().map(|p| p.join("set_env.sh")).unwrap_or_default()]
        .into_iter()
        .find(|p| p.is_file());

    if !reasons.is_empty() {
        return Err(reasons);
    }
    let (version, inner_version, version_file) = version.unwrap_or_default();
    Ok(CannToolkit {
        root: root.to_path_buf(),
        version,
        inner_version,
        version_file,
        arch_dir,
        kernel_include_dirs,
        host_include_dirs,
        compiler,
        compiler_candidates,
        socs,
        set_env,
    })
}

/// "looked for bisheng, ccec in compiler/ccec_compiler/bin, ..." (paths relative to `root`).
pub(crate) fn describe_compiler_search(root: &Path, candidates: &[PathBuf]) -> String {
    let mut names: Vec<String> = Vec::new();
    let mut dirs: Vec<String> = Vec::new();
    for c in candidates {
        let name = c.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let dir = c.parent().unwrap_or(c);
        let dir = dir.strip_prefix(root).unwrap_or(dir).display().to_string();
        if !names.contains(&name) {
            names.push(name);
        }
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    format!("looked for {} in {}", names.join(", "), dirs.join(", "))
}

fn is_executable_file(path: &Path) -> bool {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                m.permissions().mode() & 0o111 != 0
            }
            #[cfg(not(unix))]
            {
                true
            }
        }
        _ => false,
    }
}

fn version_files_tried(arch_dir: Option<&str>) -> String {
    let arch = arch_dir.unwrap_or("<arch>-linux");
    format!(
        "looked for version.cfg, {arch}/ascend_toolkit_install.info, compiler/version.info, \
         toolkit/version.info"
    )
}

/// (release, component version, file) from the first version file that parses:
/// `version.cfg` (`toolkit_running_version=[7.7.0.1.238:8.1.RC1]`, in `latest/`),
/// `<arch>/ascend_toolkit_install.info` (`version=8.1.RC1`), `compiler/version.info` and
/// `toolkit/version.info` (`Version=7.7.0.1.238`, `version_dir=8.1.RC1`).
fn read_version(root: &Path, arch_dir: Option<&str>) -> Option<(String, Option<String>, PathBuf)> {
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let cfg = root.join("version.cfg");
    if let Some((release, inner)) = read(&cfg).as_deref().and_then(parse_version_cfg) {
        return Some((release, inner, cfg));
    }
    // The component version, wherever it is written.
    let component = ["toolkit/version.info", "compiler/version.info"]
        .iter()
        .find_map(|f| read(&root.join(f)).and_then(|t| key_value(&t, "Version")));
    if let Some(arch) = arch_dir {
        let info = root.join(arch).join("ascend_toolkit_install.info");
        if let Some(v) = read(&info).and_then(|t| key_value(&t, "version")) {
            return Some((v, component, info));
        }
    }
    for f in ["compiler/version.info", "toolkit/version.info"] {
        let p = root.join(f);
        if let Some(v) = read(&p).and_then(|t| key_value(&t, "version_dir")) {
            return Some((v, component, p));
        }
    }
    None
}

/// `toolkit_running_version=[7.7.0.1.238:8.1.RC1]` → (`8.1.RC1`, `7.7.0.1.238`); falls back
/// to the first `*_version=[a:b]` line.
fn parse_version_cfg(text: &str) -> Option<(String, Option<String>)> {
    let parse = |value: &str| -> Option<(String, Option<String>)> {
        let inner = value.trim().strip_prefix('[')?.strip_suffix(']')?;
        match inner.split_once(':') {
            Some((component, release)) if !release.trim().is_empty() => Some((
                release.trim().to_string(),
                Some(component.trim().to_string()).filter(|c| !c.is_empty()),
            )),
            _ if !inner.trim().is_empty() => Some((inner.trim().to_string(), None)),
            _ => None,
        }
    };
    for key in ["toolkit_running_version", "toolkit_installed_version", "compiler_running_version"] {
        if let Some(v) = key_value(text, key).and_then(|v| parse(&v)) {
            return Some(v);
        }
    }
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.trim().ends_with("_version"))
        .find_map(|(_, v)| parse(v))
}

/// The value of `key=value` in a key-value file (quotes stripped), first match.
fn key_value(text: &str, key: &str) -> Option<String> {
    text.lines()
        .find_map(|line| {
            let (k, v) = line.split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
        })
        .filter(|v| !v.is_empty())
}

/// The environment CANN's `set_env.sh` would give a process for this toolkit (the variables a
/// build needs), for commands run through [`super::command::Cmd`]. PATH and LD_LIBRARY_PATH are
/// prepended to the current values.
pub fn toolkit_env(toolkit: &CannToolkit) -> Vec<(String, OsString)> {
    let root = &toolkit.root;
    let join_with = |dirs: Vec<PathBuf>, var: &str| -> OsString {
        let mut all = dirs;
        if let Some(old) = std::env::var_os(var) {
            all.extend(std::env::split_paths(&old));
        }
        std::env::join_paths(all).unwrap_or_default()
    };
    vec![
        ("ASCEND_TOOLKIT_HOME".into(), root.clone().into()),
        ("ASCEND_HOME_PATH".into(), root.clone().into()),
        ("ASCEND_OPP_PATH".into(), root.join("opp").into()),
        ("ASCEND_AICPU_PATH".into(), root.clone().into()),
        ("TOOLCHAIN_HOME".into(), root.join("toolkit").into()),
        (
            "PATH".into(),
            join_with(
                vec![
                    root.join("bin"),
                    root.join("compiler/ccec_compiler/bin"),
                    root.join("tools/ccec_compiler/bin"),
                ],
                "PATH",
            ),
        ),
        (
            "LD_LIBRARY_PATH".into(),
            join_with(
                vec![
                    root.join("lib64"),
                    root.join("lib64/plugin/opskernel"),
                    root.join("lib64/plugin/nnengine"),
                    root.join(format!(
                        "opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/{}",
                        toolkit.arch()
                    )),
                ],
                "LD_LIBRARY_PATH",
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn version_cfg_parsing() {
        let text = "# version: 1.0\nruntime_running_version=[7.7.0.1.238:8.1.RC1]\n\
                    toolkit_running_version=[7.7.0.1.238:8.1.RC1]\n";
        assert_eq!(parse_version_cfg(text), Some(("8.1.RC1".into(), Some("7.7.0.1.238".into()))));
        assert_eq!(
            parse_version_cfg("opp_running_version=[1.2:8.0.0]\n"),
            Some(("8.0.0".into(), Some("1.2".into())))
        );
        assert_eq!(parse_version_cfg("toolkit_running_version=[8.2.RC1]\n"), Some(("8.2.RC1".into(), None)));
        assert_eq!(parse_version_cfg("nothing here\n"), None);
        assert_eq!(parse_version_cfg("toolkit_running_version=[]\n"), None);
    }

    #[test]
    fn key_values() {
        let text = "package_name=x\nversion=8.1.RC1\nVersion=\"7.7\"\n";
        assert_eq!(key_value(text, "version").as_deref(), Some("8.1.RC1"));
        assert_eq!(key_value(text, "Version").as_deref(), Some("7.7"));
        assert_eq!(key_value(text, "missing"), None);
    }

    #[test]
    fn version_order() {
        assert_eq!(compare_versions("8.1.RC1", "8.0.RC3"), Ordering::Greater);
        assert_eq!(compare_versions("8.0.0", "8.0.RC3"), Ordering::Greater);
        assert_eq!(compare_versions("8.0.RC10", "8.0.RC9"), Ordering::Greater);
        assert_eq!(compare_versions("8.1.RC1", "8.1.RC1"), Ordering::Equal);
        assert_eq!(compare_versions("10.0.0", "9.1.0"), Ordering::Greater);
        assert_eq!(compare_versions("8.1", "8.1.RC1"), Ordering::Less);
    }

    #[test]
    fn toolkit_env_points_into_the_root() {
        let t = CannToolkit {
            root: PathBuf::from("/opt/cann/latest"),
            version: "8.1.RC1".into(),
            inner_version: None,
            version_file: PathBuf::from("/opt/cann/latest/version.cfg"),
            arch_dir: "x86_64-linux".into(),
            kernel_include_dirs: Vec::new(),
            host_include_dirs: Vec::new(),
            compiler: None,
            compiler_candidates: Vec::new(),
            socs: Vec::new(),
            set_env: None,
        };
        let env = toolkit_env(&t);
        let get = |k: &str| env.iter().find(|(key, _)| key == k).unwrap().1.clone();
        assert_eq!(get("ASCEND_HOME_PATH"), OsString::from("/opt/cann/latest"));
        assert_eq!(get("ASCEND_OPP_PATH"), OsString::from("/opt/cann/latest/opp"));
        let path: Vec<PathBuf> = std::env::split_paths(&get("PATH")).collect();
        assert_eq!(path[0], PathBuf::from("/opt/cann/latest/bin"));
        assert_eq!(path[1], PathBuf::from("/opt/cann/latest/compiler/ccec_compiler/bin"));
        let ld = get("LD_LIBRARY_PATH").to_string_lossy().into_owned();
        assert!(ld.contains("op_tiling/lib/linux/x86_64"), "{ld}");
    }

    #[test]
    fn standard_roots_in_order() {
        let roots = standard_roots(Some(Path::new("/home/u")));
        assert_eq!(
            roots,
            vec![
                PathBuf::from("/usr/local/Ascend/ascend-toolkit/latest"),
                PathBuf::from("/usr/local/Ascend/cann"),
                PathBuf::from("/home/u/Ascend/ascend-toolkit/latest"),
            ]
        );
        assert_eq!(standard_roots(None).len(), 2);
    }
}
