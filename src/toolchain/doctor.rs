//! `opgen doctor`: what this machine has for the CANN side of the project, and what is missing.

use std::fmt::Write as _;
use std::path::Path;

use super::cann::{self, CannToolkit, Need, SearchEnv};
use super::command::{find_in_path, Cmd};

/// The oldest CMake the generated project configures with: build.sh and build-npu use
/// `cmake --preset`, new in 3.19 (the project's CMakeLists.txt and CMakePresets.json say so too).
pub const CMAKE_MIN_VERSION: (u32, u32) = (3, 19);

/// The version in `cmake --version`'s first line (`cmake version 3.22.1`, `cmake3 version
/// 3.19.0-rc1`), as (major, minor, patch); None when the text has no such line.
pub fn parse_cmake_version(output: &str) -> Option<(u32, u32, u32)> {
    let line = output.lines().find(|l| l.trim_start().starts_with("cmake"))?;
    let version = line.split_whitespace().skip_while(|w| *w != "version").nth(1)?;
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    let mut next = || parts.next().and_then(|p| p.parse::<u32>().ok());
    let major = next()?;
    let minor = next()?;
    Some((major, minor, next().unwrap_or(0)))
}

/// Why a cmake cannot configure the generated project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmakeVersionError {
    /// Older than [`CMAKE_MIN_VERSION`].
    TooOld((u32, u32, u32)),
    /// `cmake --version` printed no version (its first line).
    Unreadable(String),
}

impl std::fmt::Display for CmakeVersionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (min_major, min_minor) = CMAKE_MIN_VERSION;
        match self {
            CmakeVersionError::TooOld((major, minor, patch)) => write!(
                f,
                "version {major}.{minor}.{patch} is too old: the project configures with `cmake --preset`, \
                 which needs {min_major}.{min_minor} or newer (pip install cmake gives a current one)"
            ),
            CmakeVersionError::Unreadable(first) => write!(
                f,
                "`cmake --version` printed no version ({first:?}); {min_major}.{min_minor} or newer is needed"
            ),
        }
    }
}

impl std::error::Error for CmakeVersionError {}

/// Whether the cmake that printed `output` (for `--version`) can configure the generated
/// project: Ok with its version, or why not, for the doctor's line and build-npu's refusal.
pub fn cmake_version_verdict(output: &str) -> Result<String, CmakeVersionError> {
    match parse_cmake_version(output) {
        Some((major, minor, patch)) if (major, minor) >= CMAKE_MIN_VERSION => {
            Ok(format!("{major}.{minor}.{patch}"))
        }
        Some(version) => Err(CmakeVersionError::TooOld(version)),
        None => Err(CmakeVersionError::Unreadable(output.lines().next().unwrap_or("").trim().to_string())),
    }
}

/// Host programs the CANN side uses, and what for.
const HOST_TOOLS: &[(&str, &str)] = &[
    ("g++", "check-cann, verify"),
    ("cmake", "build-npu"),
    ("make", "build-npu"),
    ("python3", "build-npu (CANN's build scripts), the torch extension"),
];

/// What the doctor found: the text it prints and whether `build-npu` could run here.
#[derive(Debug, Clone)]
pub struct DoctorReport {
    pub text: String,
    /// A toolkit complete for a build (compiler, host architecture) and every host tool
    /// build-npu runs. `opgen doctor` exits 0 only then: a script that asks "can I build?"
    /// must not be told yes by a header-only copy or a missing cmake.
    pub build_npu_ready: bool,
}

/// The doctor's report for the real environment: the toolkit found (root, version, compiler,
/// SoCs), what check-cann and build-npu can do with it, every place looked at, and the host
/// tools; or, without a toolkit, where we looked and how to get one.
pub fn doctor_report(explicit: Option<&Path>) -> DoctorReport {
    doctor_report_in(explicit, &SearchEnv::from_process(), std::env::var_os("PATH").as_deref())
}

/// [`doctor_report`] with the given search inputs and PATH instead of the process environment.
pub fn doctor_report_in(
    explicit: Option<&Path>,
    env: &SearchEnv,
    path_var: Option<&std::ffi::OsStr>,
) -> DoctorReport {
    let discovery = cann::discover_in(explicit, Need::Headers, env);
    let mut s = String::new();
    let mut toolkit_builds = false;
    match &discovery.toolkit {
        Some(t) => toolkit_builds = write_toolkit(&mut s, t, env),
        None => {
            let _ = writeln!(s, "CANN toolkit: not found");
            let _ = writeln!(s, "  check-cann: not possible (no CANN headers)");
            let _ = writeln!(s, "  build-npu:  not possible (no CANN toolkit)");
        }
    }
    let _ = writeln!(s, "places looked at, in order:");
    let _ = write!(s, "{discovery}");
    if discovery.toolkit.is_none() {
        s.push_str(&cann::how_to_get_toolkit(Need::Headers));
    }
    let _ = writeln!(s, "host tools:");
    let mut build_tools = true;
    for (tool, used_by) in HOST_TOOLS {
        let found = find_in_path(tool.as_ref(), path_var);
        let _ = match found {
            Ok(p) if *tool == "cmake" => match cmake_version_verdict(&run_version(&p)) {
                Ok(version) => writeln!(s, "  {tool:<8} {} ({version})", p.display()),
                Err(why) => {
                    build_tools = false;
                    writeln!(s, "  {tool:<8} {}: {why}", p.display())
                }
            },
            Ok(p) => writeln!(s, "  {tool:<8} {}", p.display()),
            Err(_) => {
                build_tools &= !used_by.contains("build-npu");
                writeln!(s, "  {tool:<8} missing from PATH (needed by {used_by})")
            }
        };
    }
    let build_npu_ready = toolkit_builds && build_tools;
    let _ = if build_npu_ready {
        writeln!(s, "verdict: build-npu can run here")
    } else if !toolkit_builds {
        writeln!(s, "verdict: build-npu cannot run here: no CANN toolkit usable for a build (above)")
    } else {
        writeln!(s, "verdict: build-npu cannot run here: a host tool it needs is missing or too old (above)")
    };
    DoctorReport { text: s, build_npu_ready }
}

/// What `program --version` prints (stdout then stderr), or the reason it could not run.
/// `program --version`'s output (or why it did not run).
pub fn run_version(program: &Path) -> String {
    match Cmd::new(program).arg("--version").stdin_null().timeout(std::time::Duration::from_secs(30)).run() {
        Ok(out) => out.combined_lossy(),
        Err(e) => e.to_string(),
    }
}

/// Writes the toolkit's lines; true when the toolkit is complete for a build.
fn write_toolkit(s: &mut String, t: &CannToolkit, env: &SearchEnv) -> bool {
    let rel = |p: &Path| p.strip_prefix(&t.root).unwrap_or(p).display().to_string();
    let _ = writeln!(s, "CANN toolkit: {}", t.root.display());
    let _ = write!(s, "  version:   {}", t.version);
    if let Some(inner) = &t.inner_version {
        let _ = write!(s, " (components {inner})");
    }
    let _ = writeln!(s, ", from {}", rel(&t.version_file));
    let host_dir = format!("{}-linux", env.host_arch);
    if t.arch_dir == host_dir {
        let _ = writeln!(s, "  arch:      {}", t.arch_dir);
    } else {
        let _ = writeln!(
            s,
            "  arch:      {} (this machine is {}: headers usable, binaries not)",
            t.arch_dir, env.host_arch
        );
    }
    match &t.compiler {
        Some(c) => {
            let _ = writeln!(s, "  compiler:  {}", c.display());
        }
        None => {
            let _ = writeln!(
                s,
                "  compiler:  missing, a header-only copy? ({})",
                cann::describe_compiler_search(&t.root, &t.compiler_candidates)
            );
        }
    }
    match &t.set_env {
        Some(p) => {
            let _ = writeln!(s, "  set_env:   source {}", p.display());
        }
        None => {
            let _ = writeln!(s, "  set_env:   none next to the root");
        }
    }
    let _ = writeln!(s, "  SoCs ({}):", t.socs.len());
    let mut line = String::from("   ");
    for soc in &t.socs {
        if line.len() + soc.len() + 1 > 96 {
            let _ = writeln!(s, "{line}");
            line = String::from("   ");
        }
        line.push(' ');
        line.push_str(soc);
    }
    if t.socs.is_empty() {
        line.push_str(" none (no <arch>-linux/data/platform_config/*.ini)");
    }
    let _ = writeln!(s, "{line}");
    let _ = writeln!(s, "  check-cann: ready");
    let mut reasons = cann::inspect_root_for(&t.root, Need::Build, &env.host_arch).err().unwrap_or_default();
    // build-npu's first CANN step copies these; without them it stops at step 3.
    let template = t.root.join(cann::MSOPGEN_TEMPLATE);
    for dir in ["cmake", "scripts"] {
        if !template.join(dir).is_dir() {
            reasons.push(format!("no msOpGen template {}/{dir}", template.display()));
        }
    }
    if reasons.is_empty() {
        let _ = writeln!(s, "  build-npu:  ready");
        true
    } else {
        let _ = writeln!(s, "  build-npu:  not possible: {}", reasons.join("; "));
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmake_versions_parse_and_3_19_is_the_floor() {
        assert_eq!(parse_cmake_version("cmake version 3.22.1\n\nCMake suite maintained"), Some((3, 22, 1)));
        assert_eq!(parse_cmake_version("cmake3 version 3.19.0-rc1\n"), Some((3, 19, 0)));
        assert_eq!(parse_cmake_version("cmake version 4.0\n"), Some((4, 0, 0)));
        assert_eq!(parse_cmake_version(""), None);
        assert_eq!(parse_cmake_version("cmake: command not found"), None);
        assert_eq!(cmake_version_verdict("cmake version 3.19.0"), Ok("3.19.0".to_string()));
        assert_eq!(cmake_version_verdict("cmake version 4.4.5"), Ok("4.4.5".to_string()));
        let old = cmake_version_verdict("cmake version 3.18.4").unwrap_err().to_string();
        assert!(
            old.contains("3.18.4 is too old") && old.contains("--preset") && old.contains("3.19"),
            "{old}"
        );
        let old_major = cmake_version_verdict("cmake version 2.8.12").unwrap_err().to_string();
        assert!(old_major.contains("too old"), "{old_major}");
        let none = cmake_version_verdict("").unwrap_err().to_string();
        assert!(none.contains("printed no version"), "{none}");
    }

    #[test]
    fn no_toolkit_names_places_and_advice() {
        let env = SearchEnv {
            ascend_home_path: Some("/nonexistent/opgen-cann-a".into()),
            ascend_toolkit_home: None,
            standard_roots: vec!["/nonexistent/opgen-cann-b".into()],
            host_arch: "x86_64".into(),
        };
        let report = doctor_report_in(None, &env, std::env::var_os("PATH").as_deref());
        assert!(!report.build_npu_ready);
        let report = report.text;
        assert!(report.starts_with("CANN toolkit: not found"), "{report}");
        let line = |start: &str| {
            report
                .lines()
                .find(|l| l.trim_start().starts_with(start))
                .unwrap_or_else(|| panic!("no line starting with {start}:\n{report}"))
                .to_string()
        };
        assert!(line("$ASCEND_HOME_PATH").ends_with("/nonexistent/opgen-cann-a: rejected: does not exist"));
        assert!(line("$ASCEND_TOOLKIT_HOME").ends_with("not set"));
        assert!(line("--cann").ends_with("not given"));
        assert!(report.contains("/nonexistent/opgen-cann-b"), "{report}");
        assert!(report.contains("set_env.sh"), "{report}");
        assert!(report.contains("--cann DIR"), "{report}");
        assert!(report.contains("host tools:"), "{report}");
    }
}
