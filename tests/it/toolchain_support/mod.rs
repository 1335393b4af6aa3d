//! Helpers shared by the toolchain tests: temp dirs, fake toolkit trees (placeholder files
//! only, nothing from CANN) and the location of a real CANN tree when this machine has one.

#![allow(dead_code)] // each test crate uses a different subset

use std::path::{Path, PathBuf};

/// A directory under the system temp dir, removed on drop: when the test passes and when it
/// panics. With `OPGEN_KEEP_TEMP=1` in the environment a panicking test keeps its directory
/// (and prints where it is) so its generated project can be inspected.
pub struct TempDir(pub PathBuf);

/// The environment variable that keeps a failed test's directory.
pub const KEEP_TEMP_VAR: &str = "OPGEN_KEEP_TEMP";

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "opgen-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `<dir>/<name>`, created (with its parents).
    pub fn subdir(&self, name: &str) -> PathBuf {
        let dir = self.0.join(name);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        dir
    }

    /// The path as text, for a command-line argument.
    pub fn arg(&self, rel: &str) -> String {
        self.0.join(rel).display().to_string()
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() && std::env::var_os(KEEP_TEMP_VAR).is_some_and(|v| !v.is_empty()) {
            eprintln!("{KEEP_TEMP_VAR}: kept {}", self.0.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `text` (the contents of `what`: a generated kernel, an op_host file, a template, a spec)
/// with `needle` replaced by `with`, where the needle occurs exactly once. A needle that no
/// longer matches would leave the text as it was and make a mutant test that cannot fail, so
/// it fails here, naming the file, the needle and how many matches there were.
#[track_caller]
pub fn patch(what: &str, text: &str, needle: &str, with: &str) -> String {
    patch_all(what, text, needle, with, 1)
}

/// [`patch`] for a needle that occurs exactly `count` times, every occurrence replaced.
#[track_caller]
pub fn patch_all(what: &str, text: &str, needle: &str, with: &str, count: usize) -> String {
    assert!(!needle.is_empty(), "{what}: an empty needle");
    let found = text.matches(needle).count();
    assert_eq!(
        found, count,
        "{what}: the needle {needle:?} occurs {found} time(s), the patch expects {count}"
    );
    text.replace(needle, with)
}

pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// What a fake toolkit root gets.
pub struct Fake<'a> {
    pub arch: &'a str,
    /// `Some(release)`: a `version.cfg` (the `latest` form); `None`: an
    /// `<arch>-linux/ascend_toolkit_install.info` (the version-directory form).
    pub version_cfg: Option<&'a str>,
    pub install_info: Option<&'a str>,
    pub headers: bool,
    pub compiler: bool,
    pub socs: &'a [&'a str],
}

impl Default for Fake<'_> {
    fn default() -> Self {
        Fake {
            arch: std::env::consts::ARCH,
            version_cfg: Some("8.1.RC1"),
            install_info: None,
            headers: true,
            compiler: true,
            socs: &["Ascend910B2", "Ascend910_9392"],
        }
    }
}

/// Builds a fake toolkit root at `root`: the directory shape discovery looks for, with
/// placeholder headers written here (a few declarations of our own so that test kernels and
/// op_host files can be compiled without CANN).
pub fn fake_toolkit(root: &Path, fake: &Fake) {
    let arch = root.join(format!("{}-linux", fake.arch));
    std::fs::create_dir_all(&arch).unwrap();
    if let Some(v) = fake.version_cfg {
        write(&root.join("version.cfg"), &format!("# fake\ntoolkit_running_version=[1.0.0.0.1:{v}]\n"));
    }
    if let Some(v) = fake.install_info {
        write(&arch.join("ascend_toolkit_install.info"), &format!("package_name=fake\nversion={v}\n"));
    }
    if fake.headers {
        let ascendc = arch.join("ascendc/include");
        write(&ascendc.join("basic_api/kernel_operator.h"), "#pragma once\n#include \"fake_kernel_api.h\"\n");
        write(
            &ascendc.join("basic_api/interface/fake_kernel_api.h"),
            "#pragma once\n#define __aicore__\n#define __global__\n\
             typedef unsigned char *GM_ADDR;\nstruct half { unsigned short bits; };\n",
        );
        std::fs::create_dir_all(ascendc.join("basic_api/impl")).unwrap();
        std::fs::create_dir_all(ascendc.join("highlevel_api")).unwrap();
        std::fs::create_dir_all(root.join("tools/tikicpulib/lib/include")).unwrap();
        write(
            &arch.join("include/register/op_def_registry.h"),
            "#pragma once\nnamespace ops { struct OpDef { explicit OpDef(const char *) {} }; }\n",
        );
    }
    if fake.compiler {
        let bisheng = root.join("compiler/ccec_compiler/bin/bisheng");
        write(&bisheng, "#!/bin/sh\nexit 0\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&bisheng, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    for soc in fake.socs {
        write(&arch.join(format!("data/platform_config/{soc}.ini")), "[fake]\n");
    }
}

/// The real CANN tree of the ignored CANN tests: OPGEN_TEST_CANN_ROOT, else the machine's
/// standard 8.1.RC1 location. Panics when there is none: these tests run only when asked for
/// (`--ignored`, or `cargo xtask test` with OPGEN_REQUIRE_CANN=1), and then a missing tree is a
/// failure, never a silent pass.
pub fn real_cann_root(test: &str) -> PathBuf {
    let root = std::env::var_os("OPGEN_TEST_CANN_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/cann/Ascend/ascend-toolkit/8.1.RC1"));
    assert!(
        root.join("aarch64-linux/include").is_dir() || root.join("x86_64-linux/include").is_dir(),
        "{test}: no CANN tree at {} (set OPGEN_TEST_CANN_ROOT to a toolkit root)",
        root.display()
    );
    root
}

/// The repository's templates (`codegen::template_sources`) with `template` patched: `needle`
/// replaced by `with`, where it occurs exactly once (see [`patch`]).
#[track_caller]
pub fn patched_templates(template: &str, needle: &str, with: &str) -> Vec<(&'static str, String)> {
    patched_templates_all(template, needle, with, 1)
}

/// [`patched_templates`] for a needle that occurs exactly `count` times in `template`.
#[track_caller]
pub fn patched_templates_all(
    template: &str,
    needle: &str,
    with: &str,
    count: usize,
) -> Vec<(&'static str, String)> {
    let mut sources = ascend_opgen::codegen::template_sources();
    let found = sources.iter().filter(|(name, _)| *name == template).count();
    assert_eq!(found, 1, "templates/{template}: {found} template(s) of that name");
    for (name, text) in &mut sources {
        if *name == template {
            *text = patch_all(&format!("templates/{template}"), text, needle, with, count);
        }
    }
    sources
}

/// [`patch`] as a method, for spec texts built in a test (`GOOD.patched(a, b).patched(c, d)`):
/// the failure names the test's line (`track_caller`), the needle and how many matches there
/// were, so an edit that no longer applies cannot leave the spec as it was and pass for it.
pub trait Patched {
    /// `needle` (occurring exactly once) replaced by `with`.
    fn patched(&self, needle: &str, with: &str) -> String;
    /// `needle` (occurring exactly `count` times) replaced by `with` everywhere.
    fn patched_all(&self, needle: &str, with: &str, count: usize) -> String;
    /// The first of `count` (exactly) occurrences of `needle` replaced by `with` (an edit of the
    /// first input of several that share a line).
    fn patched_first(&self, needle: &str, with: &str, count: usize) -> String;
}

impl Patched for str {
    #[track_caller]
    fn patched(&self, needle: &str, with: &str) -> String {
        patch_all("the spec text", self, needle, with, 1)
    }

    #[track_caller]
    fn patched_all(&self, needle: &str, with: &str, count: usize) -> String {
        patch_all("the spec text", self, needle, with, count)
    }

    #[track_caller]
    fn patched_first(&self, needle: &str, with: &str, count: usize) -> String {
        // Checked as a whole, then only the first replaced.
        patch_all("the spec text", self, needle, with, count);
        self.replacen(needle, with, 1)
    }
}

/// The errors `text`, read as the spec file `path`, is rejected with.
pub fn spec_errors(path: &str, text: &str) -> ascend_opgen::spec::SpecErrors {
    ascend_opgen::family::parse_str(Path::new(path), text).expect_err("the spec must be rejected")
}

/// `text` (the spec file `path`) is rejected with an error on `field` whose message contains
/// `words`, located in the file (at `line` when given, else some line) at a column; returns the
/// errors as shown to the user.
pub fn assert_spec_error(path: &str, text: &str, line: Option<usize>, field: &str, words: &str) -> String {
    let errs = spec_errors(path, text);
    let shown = errs.to_string();
    let e = errs
        .0
        .iter()
        .find(|e| e.field == field)
        .unwrap_or_else(|| panic!("no error for `{field}` in:\n{shown}"));
    match line {
        Some(line) => assert_eq!(e.line, line, "line of `{field}` in:\n{shown}"),
        None => assert!(e.line > 0, "line missing in:\n{shown}"),
    }
    assert!(e.column > 0, "column missing in:\n{shown}");
    assert!(e.message.contains(words), "`{words}` not in:\n{shown}");
    assert!(shown.contains(path), "file missing in:\n{shown}");
    shown
}
