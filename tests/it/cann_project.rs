//! The generated CANN project's build files (CMake, presets, build.sh) against what CANN 8.1's
//! msOpGen machinery does with them: the rehearsal's findings (issue 24), kept fixed.

use std::path::Path;

use ascend_opgen::codegen::{render_project, Project};
use ascend_opgen::family;
use ascend_opgen::spec::OpSpec;
use ascend_opgen::toolchain::cann::MSOPGEN_TEMPLATE;
use ascend_opgen::toolchain::command::Cmd;
use ascend_opgen::toolchain::doctor::CMAKE_MIN_VERSION;

use crate::support::{write, TempDir};

fn project() -> Project {
    let specs: Vec<OpSpec> =
        family::load_catalogue(&ascend_opgen::repo_root().join("kernels")).expect("the catalogue loads");
    render_project(&specs.iter().collect::<Vec<_>>()).unwrap()
}

fn file<'a>(project: &'a Project, path: &str) -> &'a str {
    &project.file(path).unwrap_or_else(|| panic!("no {path} in the generated project")).contents
}

/// CMake code lines (comments and blank lines dropped).
fn code_lines(text: &str) -> Vec<&str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
}

#[test]
fn kernel_options_are_one_all_call_so_debug_keeps_auto_sync_off() {
    // CANN 8.1's opdesc_parser.py (_set_all_options_to_opdescs) assigns each ALL line's options,
    // so a second add_ops_compile_options(ALL ...) replaces the first: one call only, with
    // --cce-auto-sync=off in it in every build type.
    let project = project();
    let cmake = file(&project, "op_kernel/CMakeLists.txt");
    let lines = code_lines(cmake);
    let calls: Vec<&&str> = lines.iter().filter(|l| l.starts_with("add_ops_compile_options(")).collect();
    assert_eq!(calls, [&"add_ops_compile_options(ALL OPTIONS ${opgen_kernel_options})"], "{cmake}");
    assert!(lines.contains(&"set(opgen_kernel_options --cce-auto-sync=off)"), "{cmake}");
    assert!(lines.contains(&"list(APPEND opgen_kernel_options -g -O0)"), "{cmake}");
    // The options are complete before the one call, and nothing resets them after the set().
    let position = |needle: &str| lines.iter().position(|l| l.starts_with(needle)).unwrap();
    assert!(position("list(APPEND opgen_kernel_options") < position("add_ops_compile_options("));
    assert_eq!(lines.iter().filter(|l| l.contains("set(opgen_kernel_options")).count(), 1, "{cmake}");
}

#[test]
fn cmake_minimum_is_3_19_in_the_cmake_file_the_presets_and_the_doctor() {
    // build.sh and build-npu configure with --preset, which CMake has from 3.19.
    let project = project();
    let root = file(&project, "CMakeLists.txt");
    let line = code_lines(root).into_iter().find(|l| l.starts_with("cmake_minimum_required(")).unwrap();
    assert_eq!(line, "cmake_minimum_required(VERSION 3.19)");
    let presets: serde_json::Value = serde_json::from_str(file(&project, "CMakePresets.json")).unwrap();
    let min = &presets["cmakeMinimumRequired"];
    assert_eq!((min["major"].as_u64(), min["minor"].as_u64()), (Some(3), Some(19)), "{presets}");
    assert_eq!(CMAKE_MIN_VERSION, (3, 19));
}

#[test]
fn presets_carry_no_switch_the_project_does_not_support_and_cmake_rejects_them() {
    let project = project();
    let presets: serde_json::Value = serde_json::from_str(file(&project, "CMakePresets.json")).unwrap();
    let vars = presets["configurePresets"][0]["cacheVariables"].as_object().unwrap();
    for unsupported in ["ASCEND_PACK_SHARED_LIBRARY", "CMAKE_CROSS_PLATFORM_COMPILER", "ENABLE_CROSS_COMPILE"]
    {
        assert!(!vars.contains_key(unsupported), "CMakePresets.json still sets {unsupported}");
    }
    // Turned on by hand (-D...=True), they stop the configure with a message naming them.
    let root = file(&project, "CMakeLists.txt");
    let lines = code_lines(root);
    assert!(
        lines.contains(&"foreach(opgen_unsupported ENABLE_CROSS_COMPILE ASCEND_PACK_SHARED_LIBRARY)"),
        "{root}"
    );
    assert!(lines.contains(&"if(${opgen_unsupported})"), "{root}");
    assert!(
        root.contains("message(FATAL_ERROR \"${opgen_unsupported}=${${opgen_unsupported}}: not supported")
    );
}

/// A toolkit with just the msOpGen template build.sh copies, and a stub `cmake` that logs each
/// call with the environment it got.
struct BuildShFixture {
    tmp: TempDir,
}

impl BuildShFixture {
    fn new(tag: &str) -> BuildShFixture {
        let tmp = TempDir::new(tag);
        let template = tmp.path().join("Ascend/ascend-toolkit/8.1.RC1").join(MSOPGEN_TEMPLATE);
        write(&template.join("cmake/func.cmake"), "# stub\n");
        write(&template.join("scripts/install.sh"), "# stub\n");
        let cmake = tmp.path().join("bin/cmake");
        write(
            &cmake,
            "#!/bin/sh\necho \"cmake $* | HOME=${ASCEND_HOME_PATH:-} LD=${LD_LIBRARY_PATH:-}\" >> \"$OPGEN_CMAKE_LOG\"\n",
        );
        std::fs::set_permissions(&cmake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        write(&tmp.path().join("project/build.sh"), file(&project(), "build.sh"));
        BuildShFixture { tmp }
    }

    fn cann(&self) -> std::path::PathBuf {
        self.tmp.path().join("Ascend/ascend-toolkit/8.1.RC1")
    }

    /// Runs build.sh with ASCEND_CANN_PACKAGE_PATH and `env`, and none of the caller's CANN
    /// variables; (exit code, stderr, the cmake log).
    fn run(&self, env: &[(&str, &Path)]) -> (i32, String, String) {
        let log = self.tmp.path().join("cmake.log");
        let _ = std::fs::remove_file(&log);
        let path = format!("{}:/usr/bin:/bin", self.tmp.path().join("bin").display());
        let mut cmd = Cmd::new("bash").arg(self.tmp.path().join("project/build.sh")).stdin_null();
        for var in ["ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "LD_LIBRARY_PATH", "ASCEND_COMPUTE_UNIT"] {
            cmd = cmd.env_remove(var);
        }
        let out = cmd
            .env("PATH", path)
            .env("OPGEN_CMAKE_LOG", &log)
            .env("ASCEND_CANN_PACKAGE_PATH", self.cann())
            .envs(env.iter().map(|(k, v)| (k, v)))
            .run()
            .expect("bash runs");
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        (out.code().unwrap_or(-1), out.stderr_lossy().into_owned(), log)
    }
}

fn set_env_sh(home: &Path) -> String {
    format!(
        "export ASCEND_TOOLKIT_HOME={}\nexport ASCEND_HOME_PATH=$ASCEND_TOOLKIT_HOME\n\
         export LD_LIBRARY_PATH=$ASCEND_TOOLKIT_HOME/lib64:$LD_LIBRARY_PATH\n",
        home.display()
    )
}

#[test]
fn build_sh_without_the_toolkit_environment_sources_set_env_or_stops_clearly() {
    let fx = BuildShFixture::new("build-sh-env");
    let cann = fx.cann();

    // No environment and no set_env.sh: a clear stop before any cmake, not opbuild's
    // "Cannot find source file: build_out/autogen/op_proto.cc" later.
    let (code, stderr, log) = fx.run(&[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("is not set") && stderr.contains("no set_env.sh"), "{stderr}");
    assert!(log.is_empty(), "cmake ran: {log}");

    // The install's set_env.sh (ascend-toolkit/set_env.sh): sourced, and every cmake step has
    // the toolkit's environment.
    write(&cann.join("../set_env.sh"), &set_env_sh(&cann));
    let (code, stderr, log) = fx.run(&[]);
    assert_eq!(code, 0, "{stderr}");
    let calls: Vec<&str> = log.lines().collect();
    assert_eq!(calls.len(), 3, "{log}");
    assert!(calls[0].starts_with("cmake -S . -B build_out --preset=default"), "{log}");
    let lib64 = format!("LD={}/lib64:", cann.display());
    for call in &calls {
        assert!(call.contains(&format!("HOME={}", cann.display())) && call.contains(&lib64), "{call}");
    }

    // A set_env.sh that sets up another toolkit (a moved copy): stop, naming both.
    write(&cann.join("../set_env.sh"), &set_env_sh(Path::new("/usr/local/Ascend/ascend-toolkit/latest")));
    let (code, stderr, log) = fx.run(&[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("sets ASCEND_HOME_PATH=/usr/local/Ascend/ascend-toolkit/latest"), "{stderr}");
    assert!(stderr.contains(&cann.display().to_string()), "{stderr}");
    assert!(log.is_empty(), "cmake ran: {log}");

    // The environment already set for this toolkit: set_env.sh is not needed (nor read).
    let (code, stderr, log) = fx.run(&[("ASCEND_HOME_PATH", &cann)]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(log.lines().count(), 3, "{log}");
}

#[test]
fn op_host_cmake_names_a_failed_op_build_before_the_missing_op_proto() {
    // CANN's opbuild() does not stop when op_build cannot start; the project checks its output
    // right after, so the first error says op_build failed, not "Cannot find source file".
    let project = project();
    let cmake = file(&project, "op_host/CMakeLists.txt");
    let lines = code_lines(cmake);
    let opbuild = lines.iter().position(|l| l.starts_with("opbuild(")).expect("an opbuild() call");
    assert_eq!(lines[opbuild + 1], "if(NOT EXISTS ${ASCEND_AUTOGEN_PATH}/op_proto.cc)", "{cmake}");
    assert!(lines[opbuild + 2].starts_with("message(SEND_ERROR \"opbuild produced no"), "{cmake}");
    let first_use = lines
        .iter()
        .position(|l| l.contains("${ASCEND_AUTOGEN_PATH}/op_proto.cc)") && l.starts_with("add_library"));
    assert!(first_use.is_some_and(|u| u > opbuild + 2), "{cmake}");
}
