//! CANN toolkit discovery: order of the places looked at, what makes a root usable, the report
//! and the error. Fake trees run everywhere; the real 8.1.RC1 tree only where it exists.

use std::path::{Path, PathBuf};

use ascend_opgen::toolchain::cann::{discover_in, inspect_root_for, Need, SearchEnv, Source, Verdict};

use crate::support;
use support::{fake_toolkit, real_cann_root, Fake, TempDir};

fn host() -> String {
    std::env::consts::ARCH.to_string()
}

fn env_with(home: Option<&Path>, toolkit_home: Option<&Path>, standard: &[&Path]) -> SearchEnv {
    SearchEnv {
        ascend_home_path: home.map(Path::to_path_buf),
        ascend_toolkit_home: toolkit_home.map(Path::to_path_buf),
        standard_roots: standard.iter().map(|p| p.to_path_buf()).collect(),
        host_arch: host(),
    }
}

fn verdict_of<'a>(d: &'a ascend_opgen::toolchain::cann::Discovery, path: &Path) -> &'a Verdict {
    &d.candidates
        .iter()
        .find(|c| c.path.as_deref() == Some(path))
        .unwrap_or_else(|| panic!("{} not among the candidates:\n{d}", path.display()))
        .verdict
}

#[test]
fn full_fake_toolkit_is_found_with_everything() {
    let tmp = TempDir::new("cann-full");
    let root = tmp.path().join("latest");
    fake_toolkit(&root, &Fake::default());
    let d = discover_in(Some(&root), Need::Build, &SearchEnv::empty());
    let t = d.toolkit.clone().unwrap_or_else(|| panic!("{d}"));
    assert_eq!(t.root, root);
    assert_eq!(t.version, "8.1.RC1");
    assert_eq!(t.inner_version.as_deref(), Some("1.0.0.0.1"));
    assert_eq!(t.version_file, root.join("version.cfg"));
    assert_eq!(t.arch_dir, format!("{}-linux", host()));
    assert_eq!(t.arch(), host());
    assert!(t.matches_host());
    assert_eq!(t.compiler, Some(root.join("compiler/ccec_compiler/bin/bisheng")));
    assert_eq!(t.socs, vec!["Ascend910B2", "Ascend910_9392"]);
    assert!(t.has_soc("ascend910b2"));
    let arch = root.join(&t.arch_dir);
    assert_eq!(
        t.kernel_include_dirs,
        vec![
            arch.join("ascendc/include/basic_api"),
            arch.join("ascendc/include/basic_api/interface"),
            arch.join("ascendc/include/basic_api/impl"),
            arch.join("ascendc/include/highlevel_api"),
            root.join("tools/tikicpulib/lib/include"),
            arch.join("include"),
        ]
    );
    assert_eq!(t.host_include_dirs, vec![arch.join("include"), arch.join("ascendc/include/highlevel_api")]);
    assert_eq!(verdict_of(&d, &root), &Verdict::Chosen);
}

#[test]
fn header_only_copy_serves_checks_but_not_builds() {
    let tmp = TempDir::new("cann-headers");
    let root = tmp.path().join("8.1.RC1");
    fake_toolkit(
        &root,
        &Fake { compiler: false, version_cfg: None, install_info: Some("8.1.RC1"), ..Fake::default() },
    );
    let t = inspect_root_for(&root, Need::Headers, &host()).unwrap();
    assert_eq!(t.version, "8.1.RC1");
    assert_eq!(t.compiler, None);
    assert!(t.version_file.ends_with(format!("{}-linux/ascend_toolkit_install.info", host())));

    let err = discover_in(Some(&root), Need::Build, &SearchEnv::empty()).into_result().unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("no device compiler"), "{msg}");
    assert!(msg.contains("bisheng"), "{msg}");
    assert!(msg.contains("compiler/ccec_compiler/bin"), "{msg}");
}

#[test]
fn other_architecture_is_fine_for_headers_only() {
    let tmp = TempDir::new("cann-arch");
    let other = if host() == "aarch64" { "x86_64" } else { "aarch64" };
    fake_toolkit(tmp.path(), &Fake { arch: other, ..Fake::default() });
    let t = inspect_root_for(tmp.path(), Need::Headers, &host()).unwrap();
    assert_eq!(t.arch_dir, format!("{other}-linux"));
    assert!(!t.matches_host());
    let reasons = inspect_root_for(tmp.path(), Need::Build, &host()).unwrap_err();
    assert!(reasons.iter().any(|r| r.contains(&format!("toolkit is for {other}-linux"))), "{reasons:?}");
}

#[test]
fn incomplete_roots_are_rejected_with_every_reason() {
    let tmp = TempDir::new("cann-incomplete");
    // An <arch>-linux dir, no version file, no headers.
    std::fs::create_dir_all(tmp.path().join(format!("{}-linux/bin", host()))).unwrap();
    let reasons = inspect_root_for(tmp.path(), Need::Headers, &host()).unwrap_err();
    let all = reasons.join("\n");
    assert!(all.contains("no version file"), "{all}");
    assert!(all.contains("version.cfg"), "{all}");
    assert!(all.contains("ascend_toolkit_install.info"), "{all}");
    assert!(all.contains("missing include dirs"), "{all}");
    assert!(all.contains("tools/tikicpulib/lib/include"), "{all}");

    let empty = TempDir::new("cann-empty");
    let d = discover_in(Some(empty.path()), Need::Headers, &SearchEnv::empty());
    match verdict_of(&d, empty.path()) {
        Verdict::Rejected(r) => assert!(r[0].contains("not a toolkit root"), "{r:?}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn search_order_and_fall_through() {
    let tmp = TempDir::new("cann-order");
    let bad = tmp.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    let good = tmp.path().join("good");
    fake_toolkit(&good, &Fake::default());
    let standard = tmp.path().join("standard");
    fake_toolkit(&standard, &Fake::default());
    let missing = tmp.path().join("missing");

    let env = env_with(Some(&bad), Some(&good), &[&missing, &standard]);
    let d = discover_in(None, Need::Headers, &env);
    assert_eq!(d.toolkit.as_ref().unwrap().root, good, "{d}");
    let sources: Vec<(Source, Option<PathBuf>)> =
        d.candidates.iter().map(|c| (c.source.clone(), c.path.clone())).collect();
    assert_eq!(
        sources,
        vec![
            (Source::Flag, None),
            (Source::Env("ASCEND_HOME_PATH"), Some(bad.clone())),
            (Source::Env("ASCEND_TOOLKIT_HOME"), Some(good.clone())),
            (Source::Standard, Some(missing.clone())),
            (Source::Standard, Some(standard.clone())),
        ]
    );
    assert_eq!(d.candidates[0].verdict, Verdict::NotSet);
    assert!(matches!(verdict_of(&d, &bad), Verdict::Rejected(_)));
    assert_eq!(verdict_of(&d, &good), &Verdict::Chosen);
    assert_eq!(verdict_of(&d, &missing), &Verdict::Rejected(vec!["does not exist".into()]));
    assert_eq!(verdict_of(&d, &standard), &Verdict::AlsoUsable);

    // ASCEND_HOME_PATH first when both are good.
    let env = env_with(Some(&standard), Some(&good), &[]);
    assert_eq!(discover_in(None, Need::Headers, &env).toolkit.unwrap().root, standard);

    // set_env.sh sets both variables to the same directory: looked at once.
    let env = env_with(Some(&good), Some(&good), &[]);
    let d = discover_in(None, Need::Headers, &env);
    assert_eq!(d.candidates[2].verdict, Verdict::Duplicate, "{d}");
}

#[test]
fn explicit_directory_is_the_only_place_looked_at() {
    let tmp = TempDir::new("cann-explicit");
    let good = tmp.path().join("good");
    fake_toolkit(&good, &Fake::default());
    let typo = tmp.path().join("goood");
    let env = env_with(Some(&good), None, &[&good]);

    let d = discover_in(Some(&typo), Need::Headers, &env);
    assert!(d.toolkit.is_none(), "{d}");
    assert!(d.candidates[1..].iter().all(|c| c.verdict == Verdict::NotConsulted));
    let msg = d.into_result().unwrap_err().to_string();
    assert!(msg.contains("no usable CANN toolkit found"), "{msg}");
    assert!(msg.contains(&format!("{}: rejected: does not exist", typo.display())), "{msg}");
    assert!(msg.contains("not consulted (--cann given)"), "{msg}");

    let d = discover_in(Some(&good), Need::Headers, &env);
    assert_eq!(d.toolkit.unwrap().root, good);
}

#[test]
fn install_directory_forms_are_searched_inside() {
    let tmp = TempDir::new("cann-install");
    let toolkit_dir = tmp.path().join("Ascend/ascend-toolkit");
    // A `latest` without headers, and two version directories.
    std::fs::create_dir_all(toolkit_dir.join(format!("latest/{}-linux/bin", host()))).unwrap();
    support::write(&toolkit_dir.join("latest/version.cfg"), "toolkit_running_version=[1:8.1.RC1]\n");
    let version_form = Fake { version_cfg: None, install_info: Some("8.1.RC1"), ..Fake::default() };
    fake_toolkit(&toolkit_dir.join("8.1.RC1"), &version_form);
    fake_toolkit(&toolkit_dir.join("8.0.RC3"), &Fake { install_info: Some("8.0.RC3"), ..version_form });
    support::write(&toolkit_dir.join("set_env.sh"), "# fake\n");

    for given in [toolkit_dir.clone(), tmp.path().join("Ascend")] {
        let d = discover_in(Some(&given), Need::Headers, &SearchEnv::empty());
        let t = d.toolkit.clone().unwrap_or_else(|| panic!("{d}"));
        assert_eq!(t.root, toolkit_dir.join("8.1.RC1"), "{d}");
        assert_eq!(t.version, "8.1.RC1");
        assert_eq!(t.set_env, Some(toolkit_dir.join("set_env.sh")));
        assert_eq!(verdict_of(&d, &given), &Verdict::Container);
        match verdict_of(&d, &toolkit_dir.join("latest")) {
            Verdict::Rejected(r) => {
                assert!(r.join(" ").contains("missing include dirs"), "{r:?}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(verdict_of(&d, &toolkit_dir.join("8.0.RC3")), &Verdict::AlsoUsable);
        let inside =
            d.candidates.iter().find(|c| c.path.as_deref() == Some(&toolkit_dir.join("8.1.RC1"))).unwrap();
        assert_eq!(inside.inside.as_deref(), Some(given.as_path()));
        let text = d.to_string();
        assert!(text.contains("install directory, looked inside"), "{text}");
    }
}

#[test]
fn not_found_error_names_every_place_and_the_remedy() {
    let tmp = TempDir::new("cann-none");
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    let env = env_with(Some(&a), None, &[&b]);
    let err = discover_in(None, Need::Headers, &env).into_result().unwrap_err();
    let msg = err.to_string();
    for needle in [
        "--cann",
        "not given",
        "$ASCEND_HOME_PATH",
        &a.display().to_string(),
        "$ASCEND_TOOLKIT_HOME",
        "not set",
        "standard root",
        &b.display().to_string(),
        "source /usr/local/Ascend/ascend-toolkit/set_env.sh",
        "--cann DIR",
        "check-cann needs only the headers",
    ] {
        assert!(msg.contains(needle), "missing {needle:?} in:\n{msg}");
    }
}

#[test]
#[ignore = "needs a CANN 8.1 toolkit tree: OPGEN_TEST_CANN_ROOT=<toolkit root> cargo test -- --ignored"]
fn real_cann_8_1_rc1_tree() {
    let root = real_cann_root("real_cann_8_1_rc1_tree");
    let d = discover_in(Some(&root), Need::Headers, &SearchEnv::empty());
    let t = d.toolkit.clone().unwrap_or_else(|| panic!("{d}"));
    assert_eq!(t.root, root);
    assert_eq!(t.version, "8.1.RC1");
    assert!(t.arch_dir.ends_with("-linux"));
    for dir in t.kernel_include_dirs.iter().chain(&t.host_include_dirs) {
        assert!(dir.is_dir(), "{}", dir.display());
    }
    for soc in ["Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910_9392"] {
        assert!(t.has_soc(soc), "{soc} not in {:?}", t.socs);
    }
    println!("{d}");
    println!(
        "version {} ({:?}) from {}, arch {}, compiler {:?}, {} SoCs",
        t.version,
        t.inner_version,
        t.version_file.display(),
        t.arch_dir,
        t.compiler,
        t.socs.len()
    );

    // Its parent, the install directory, works too.
    if let Some(parent) = root.parent() {
        let d = discover_in(Some(parent), Need::Headers, &SearchEnv::empty());
        assert!(d.toolkit.is_some(), "{d}");
    }
    // Through the environment, as set_env.sh would set it.
    let env = env_with(Some(&root), Some(&root), &[]);
    assert_eq!(discover_in(None, Need::Headers, &env).toolkit.unwrap().root, root);
}

/// A directory of stub host tools (executable scripts) for the doctor's PATH; cmake says it is 3.22.1.
fn stub_tools(dir: &Path, tools: &[&str]) -> std::ffi::OsString {
    stub_tools_with_cmake(dir, tools, "3.22.1")
}

/// [`stub_tools`] whose cmake prints `cmake version <cmake_version>`.
fn stub_tools_with_cmake(dir: &Path, tools: &[&str], cmake_version: &str) -> std::ffi::OsString {
    for tool in tools {
        let p = dir.join(tool);
        let body =
            if *tool == "cmake" { format!("echo 'cmake version {cmake_version}'\n") } else { String::new() };
        support::write(&p, &format!("#!/bin/sh\n{body}exit 0\n"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    dir.as_os_str().to_owned()
}

const ALL_TOOLS: &[&str] = &["g++", "cmake", "make", "python3"];

/// The msOpGen template directories build-npu copies (placeholders).
fn with_msopgen_template(root: &Path) {
    let template = root.join(ascend_opgen::toolchain::cann::MSOPGEN_TEMPLATE);
    for dir in ["cmake", "scripts"] {
        support::write(&template.join(dir).join("placeholder"), "# fake\n");
    }
}

#[test]
fn doctor_is_ready_only_when_build_npu_could_run() {
    use ascend_opgen::toolchain::doctor::doctor_report_in;
    let tmp = TempDir::new("cann-doctor");
    let full = tmp.path().join("full/latest");
    fake_toolkit(&full, &Fake::default());
    with_msopgen_template(&full);
    // A toolkit with a compiler but no msOpGen template (build-npu would stop copying it).
    let no_template = tmp.path().join("no-template/latest");
    fake_toolkit(&no_template, &Fake::default());
    let headers_only = tmp.path().join("headers/latest");
    fake_toolkit(&headers_only, &Fake { compiler: false, ..Fake::default() });
    let tools = stub_tools(&tmp.path().join("bin"), ALL_TOOLS);
    let no_cmake = stub_tools(&tmp.path().join("bin-no-cmake"), &["g++", "make", "python3"]);
    let env = SearchEnv::empty();

    let r = doctor_report_in(Some(&full), &env, Some(&tools));
    assert!(r.build_npu_ready, "{}", r.text);
    assert!(r.text.contains("verdict: build-npu can run here"), "{}", r.text);

    let r = doctor_report_in(Some(&no_template), &env, Some(&tools));
    assert!(!r.build_npu_ready, "{}", r.text);
    assert!(r.text.contains("no msOpGen template"), "{}", r.text);

    // The same toolkit, but cmake missing: build-npu's first configure step could not run.
    let r = doctor_report_in(Some(&full), &env, Some(&no_cmake));
    assert!(!r.build_npu_ready, "{}", r.text);
    assert!(r.text.contains("cmake    missing from PATH"), "{}", r.text);
    assert!(r.text.contains("a host tool it needs is missing"), "{}", r.text);

    // cmake present but older than --preset (3.19): not ready, and the line says why.
    let old_cmake = stub_tools_with_cmake(&tmp.path().join("bin-old-cmake"), ALL_TOOLS, "3.16.3");
    let r = doctor_report_in(Some(&full), &env, Some(&old_cmake));
    assert!(!r.build_npu_ready, "{}", r.text);
    assert!(r.text.contains("version 3.16.3 is too old"), "{}", r.text);
    assert!(r.text.contains("missing or too old"), "{}", r.text);
    let r = doctor_report_in(Some(&full), &env, Some(&tools));
    assert!(r.text.contains("cmake") && r.text.contains("(3.22.1)"), "{}", r.text);

    // A header-only copy serves check-cann, not build-npu.
    let r = doctor_report_in(Some(&headers_only), &env, Some(&tools));
    assert!(!r.build_npu_ready, "{}", r.text);
    assert!(r.text.contains("check-cann: ready"), "{}", r.text);
    assert!(r.text.contains("no CANN toolkit usable for a build"), "{}", r.text);

    // No toolkit at all.
    let r = doctor_report_in(Some(&tmp.path().join("nothing")), &env, Some(&tools));
    assert!(!r.build_npu_ready, "{}", r.text);
    assert!(r.text.starts_with("CANN toolkit: not found"), "{}", r.text);
}

#[test]
fn doctor_exit_code_is_zero_only_when_build_npu_could_run() {
    use ascend_opgen::toolchain::command::Cmd;
    let tmp = TempDir::new("cann-doctor-cli");
    let full = tmp.path().join("latest");
    fake_toolkit(&full, &Fake::default());
    with_msopgen_template(&full);
    let headers_only = tmp.path().join("headers");
    fake_toolkit(&headers_only, &Fake { compiler: false, ..Fake::default() });
    let tools = stub_tools(&tmp.path().join("bin"), ALL_TOOLS);
    let doctor = |root: &Path| {
        Cmd::new(env!("CARGO_BIN_EXE_opgen"))
            .arg("doctor")
            .arg("--cann")
            .arg(root)
            .env("PATH", &tools)
            .stdin_null()
            .run()
            .expect("opgen runs")
    };
    let ok = doctor(&full);
    assert_eq!(ok.code(), Some(0), "{}", ok.stdout_lossy());
    for root in [headers_only, tmp.path().join("missing")] {
        let out = doctor(&root);
        assert_eq!(out.code(), Some(2), "{}: {}", root.display(), out.stdout_lossy());
        assert!(out.stdout_lossy().contains("verdict: build-npu cannot run here"), "{}", out.stdout_lossy());
    }
}
