//! check-cann: the compiles planned for a project, running them in parallel, the report.
//! Against placeholder headers everywhere, against the real CANN 8.1.RC1 headers where present.

use std::path::{Path, PathBuf};

use ascend_opgen::toolchain::cann::{inspect_root_for, CannToolkit, Need};
use ascend_opgen::toolchain::check_cann::{
    check_project, plan_checks, CheckError, CheckOptions, Defines, FileKind, KernelDefines, HOST_FLAGS,
    HOST_LINK_FLAGS, KERNEL_FLAGS,
};
use ascend_opgen::toolchain::command::which;

use crate::support;
use support::{fake_toolkit, patch, real_cann_root, write, Fake, TempDir};

fn defines(pairs: &[(&str, &str)]) -> Defines {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn fake(tmp: &TempDir) -> CannToolkit {
    let root = tmp.path().join("toolkit");
    fake_toolkit(&root, &Fake { compiler: false, ..Fake::default() });
    inspect_root_for(&root, Need::Headers, std::env::consts::ARCH).unwrap()
}

/// A project against the placeholder headers: one kernel using DTYPE_X, one op_host file
/// including its tiling header, one broken op_host file.
fn fake_project(dir: &Path) {
    write(
        &dir.join("op_kernel/scale_custom.cpp"),
        "#include \"kernel_operator.h\"\n\
         extern \"C\" __global__ __aicore__ void scale_custom(GM_ADDR x, GM_ADDR y)\n\
         {\n    DTYPE_X v{};\n    (void)v;\n    (void)x;\n    (void)y;\n}\n",
    );
    write(
        &dir.join("op_host/scale_custom_tiling.h"),
        "#pragma once\nstruct ScaleCustomTilingData { unsigned len; };\n",
    );
    write(
        &dir.join("op_host/scale_custom.cpp"),
        "#include \"scale_custom_tiling.h\"\n#include \"register/op_def_registry.h\"\n\
         namespace ops { struct ScaleCustom : OpDef { explicit ScaleCustom(const char *n) : OpDef(n) {} }; }\n",
    );
    write(
        &dir.join("op_host/zz_broken.cpp"),
        "#include \"register/op_def_registry.h\"\nint f() { return undeclared_thing; }\n",
    );
}

#[test]
fn planned_commands_have_the_flags_defines_and_includes() {
    let tmp = TempDir::new("check-plan");
    let toolkit = fake(&tmp);
    let project = tmp.path().join("proj");
    fake_project(&project);
    let options = CheckOptions {
        kernel_defines: vec![KernelDefines::new(
            "op_kernel/scale_custom.cpp",
            vec![
                defines(&[("DTYPE_X", "half"), ("DTYPE_Y", "half")]),
                defines(&[("DTYPE_X", "float"), ("DTYPE_Y", "float")]),
            ],
        )],
        ..CheckOptions::default()
    };
    let jobs = plan_checks(&project, &toolkit, &options).unwrap();
    let summary: Vec<(PathBuf, FileKind, usize)> =
        jobs.iter().map(|j| (j.file.clone(), j.kind, j.defines.len())).collect();
    assert_eq!(
        summary,
        vec![
            (PathBuf::from("op_kernel/scale_custom.cpp"), FileKind::Kernel, 2),
            (PathBuf::from("op_kernel/scale_custom.cpp"), FileKind::Kernel, 2),
            (PathBuf::from("op_host/scale_custom.cpp"), FileKind::Host, 0),
            (PathBuf::from("op_host/zz_broken.cpp"), FileKind::Host, 0),
            (PathBuf::from("op_host/*.cpp"), FileKind::HostLink, 0),
        ]
    );

    let args = |i: usize| -> Vec<String> {
        jobs[i].cmd.get_args().iter().map(|a| a.to_string_lossy().into_owned()).collect()
    };
    let kernel = args(0);
    assert_eq!(&kernel[..KERNEL_FLAGS.len()], KERNEL_FLAGS);
    assert!(kernel.contains(&"-DDTYPE_X=half".to_string()));
    assert!(args(1).contains(&"-DDTYPE_Y=float".to_string()));
    let includes: Vec<PathBuf> =
        kernel.windows(2).filter(|w| w[0] == "-I").map(|w| PathBuf::from(&w[1])).collect();
    assert_eq!(includes, toolkit.kernel_include_dirs);
    assert_eq!(kernel.last().unwrap(), "op_kernel/scale_custom.cpp");
    assert_eq!(jobs[0].cmd.get_cwd(), Some(project.as_path()));

    let host = args(2);
    assert_eq!(&host[..HOST_FLAGS.len()], HOST_FLAGS);
    let includes: Vec<PathBuf> =
        host.windows(2).filter(|w| w[0] == "-I").map(|w| PathBuf::from(&w[1])).collect();
    let mut expected = toolkit.host_include_dirs.clone();
    expected.push(project.join("op_host"));
    assert_eq!(includes, expected);

    // The one-library link: every op_host file, LTO with ODR violations as errors.
    let link = args(4);
    assert_eq!(&link[..HOST_LINK_FLAGS.len()], HOST_LINK_FLAGS);
    assert!(link.contains(&"-Werror=odr".to_string()) && link.contains(&"-flto".to_string()), "{link:?}");
    let includes: Vec<PathBuf> =
        link.windows(2).filter(|w| w[0] == "-I").map(|w| PathBuf::from(&w[1])).collect();
    assert_eq!(includes, expected);
    assert!(link.ends_with(&[
        "op_host/scale_custom.cpp".to_string(),
        "op_host/zz_broken.cpp".to_string(),
        "-o".to_string(),
        "/dev/null".to_string()
    ]));

    // The dry-run line is a pasteable shell command.
    let line = jobs[0].cmd.display();
    assert!(line.starts_with("(cd "), "{line}");
    assert!(line.contains("LC_ALL=C g++ -fsyntax-only -std=c++17"), "{line}");
    assert!(line.contains("-D__CCE_KT_TEST__=1 -DASCENDC_CPU_DEBUG=1 -D__CCE_AICORE__=220 -D__DAV_C220__ -D_GLIBCXX_USE_CXX11_ABI=0"), "{line}");
}

#[test]
fn bad_inputs_are_errors() {
    let tmp = TempDir::new("check-bad");
    let toolkit = fake(&tmp);
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let err = check_project(&empty, &toolkit, &CheckOptions::default()).unwrap_err();
    assert!(matches!(err, CheckError::NoSources { .. }), "{err:?}");
    assert!(err.to_string().contains("no op_kernel/*.cpp"), "{err}");

    let project = tmp.path().join("proj");
    fake_project(&project);
    let options = CheckOptions {
        kernel_defines: vec![KernelDefines::new(
            "op_kernel/not_there.cpp",
            vec![defines(&[("DTYPE_X", "half")])],
        )],
        ..CheckOptions::default()
    };
    let err = plan_checks(&project, &toolkit, &options).unwrap_err();
    assert!(matches!(err, CheckError::UnknownKernel { .. }), "{err:?}");

    let options = CheckOptions { compiler: "opgen-no-such-compiler".into(), ..CheckOptions::default() };
    let err = check_project(&project, &toolkit, &options).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("unable to find `opgen-no-such-compiler`"), "{msg}");
}

/// An op_host file of op `stem` with its own `optiling::Plan` of `fields`, filled through a
/// pointer as the generated TilingFuncs do (a type only ever optimised away is not compared).
fn host_with_plan(stem: &str, fields: &[&str], own_namespace: bool) -> String {
    let (open, close) = if own_namespace {
        (format!("namespace {stem}_tiling {{\n"), "}\n".to_string())
    } else {
        Default::default()
    };
    let members: String = fields.iter().map(|f| format!("    unsigned long {f} = 0;\n")).collect();
    format!(
        "#include \"register/op_def_registry.h\"\nnamespace optiling {{\n{open}struct Plan {{\n{members}}};\n\
         static bool PlanRows(unsigned long n, Plan* plan) {{ plan->{last} = n; return n > 3; }}\n\
         unsigned long {stem}_tiling(unsigned long n) {{ Plan p; return PlanRows(n, &p) ? p.{last} : 0; }}\n\
         {close}}}\n",
        last = fields[fields.len() - 1]
    )
}

#[test]
fn host_link_reports_two_ops_defining_one_type_differently() {
    // CANN links every op's op_host file into one library: two different optiling::Plan there
    // are an ODR violation, which only a link-time (LTO) comparison sees.
    assert!(which("g++").is_some(), "host_link_reports_two_ops_defining_one_type_differently needs g++");
    let tmp = TempDir::new("check-odr");
    let toolkit = fake(&tmp);
    let run = |name: &str, own_namespace: bool| {
        let project = tmp.path().join(name);
        write(
            &project.join("op_host/norm.cpp"),
            &host_with_plan("norm", &["mode", "rows", "cols"], own_namespace),
        );
        write(
            &project.join("op_host/norm_grad.cpp"),
            &host_with_plan("norm_grad", &["mode", "cols"], own_namespace),
        );
        check_project(&project, &toolkit, &CheckOptions::default()).unwrap()
    };
    let clash = run("clash", false);
    let outcome: Vec<(FileKind, bool)> = clash.entries.iter().map(|e| (e.kind, e.passed)).collect();
    // Each file alone is fine; together they are not.
    assert_eq!(
        outcome,
        vec![(FileKind::Host, true), (FileKind::Host, true), (FileKind::HostLink, false)],
        "{clash}"
    );
    let link = &clash.entries[2];
    assert!(
        link.output.contains("struct Plan") && link.output.contains("One Definition Rule"),
        "{}",
        link.output
    );
    assert!(clash.to_string().contains("FAIL op_host/*.cpp (op_host link (ODR), -)"), "{clash}");
    // Each op's Plan in its own namespace (what the templates generate): the link passes.
    let apart = run("apart", true);
    assert!(apart.passed(), "{apart}");
}

#[test]
fn compiles_against_placeholder_headers() {
    // g++ is a prerequisite of the project (README set-up): its absence fails, never skips.
    assert!(which("g++").is_some(), "compiles_against_placeholder_headers needs g++ on PATH");
    let tmp = TempDir::new("check-fake");
    let toolkit = fake(&tmp);
    let project = tmp.path().join("proj");
    fake_project(&project);
    let options = CheckOptions {
        kernel_defines: vec![KernelDefines::new(
            project.join("op_kernel/scale_custom.cpp"),
            vec![
                defines(&[("DTYPE_X", "half")]),
                defines(&[("DTYPE_X", "float")]),
                defines(&[("DTYPE_X", "no_such_type")]),
            ],
        )],
        ..CheckOptions::default()
    };
    let report = check_project(&project, &toolkit, &options).unwrap();
    let results: Vec<(String, String, bool)> = report
        .entries
        .iter()
        .map(|e| {
            (
                e.file.display().to_string(),
                e.defines.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","),
                e.passed,
            )
        })
        .collect();
    let k = "op_kernel/scale_custom.cpp".to_string();
    assert_eq!(
        results,
        vec![
            (k.clone(), "DTYPE_X=half".into(), true),
            (k.clone(), "DTYPE_X=float".into(), true),
            (k, "DTYPE_X=no_such_type".into(), false),
            ("op_host/scale_custom.cpp".into(), String::new(), true),
            ("op_host/zz_broken.cpp".into(), String::new(), false),
            // The broken file breaks the one-library link too.
            ("op_host/*.cpp".into(), String::new(), false),
        ],
        "{report}"
    );
    assert!(!report.passed());
    assert_eq!(report.failures().count(), 3);
    let bad = &report.entries[2];
    assert!(bad.output.contains("no_such_type"), "{}", bad.output);
    let broken = &report.entries[4];
    assert!(
        broken.output.contains("zz_broken.cpp:2:") && broken.output.contains("undeclared_thing"),
        "{}",
        broken.output
    );

    let table = report.to_string();
    println!("{table}");
    let header = table.lines().nth(1).unwrap();
    for col in ["file", "kind", "defines", "result", "time"] {
        assert!(header.contains(col), "{header}");
    }
    assert!(table.contains("6 compiles: 3 passed, 3 failed"), "{table}");
    assert!(table.contains("FAIL op_host/zz_broken.cpp"), "{table}");
    assert!(table.contains("undeclared_thing"), "{table}");
    // The failing compile's command line is shown.
    assert!(table.contains("-DDTYPE_X=no_such_type"), "{table}");
}

const SCALE_KERNEL: &str = r#"#include "kernel_operator.h"

using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

class KernelScale {
public:
    __aicore__ inline KernelScale() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint32_t len, float scale)
    {
        this->len = len;
        this->scale = scale;
        xGm.SetGlobalBuffer((__gm__ DTYPE_X *)x + len * GetBlockIdx(), len);
        yGm.SetGlobalBuffer((__gm__ DTYPE_Y *)y + len * GetBlockIdx(), len);
        pipe.InitBuffer(inQueue, BUFFER_NUM, len * sizeof(DTYPE_X));
        pipe.InitBuffer(outQueue, BUFFER_NUM, len * sizeof(DTYPE_Y));
        pipe.InitBuffer(work, len * sizeof(float));
        pipe.InitBuffer(sum, 32);
    }
    __aicore__ inline void Process()
    {
        LocalTensor<DTYPE_X> xLocal = inQueue.AllocTensor<DTYPE_X>();
        DataCopyExtParams copyParams{1, static_cast<uint32_t>(len * sizeof(DTYPE_X)), 0, 0, 0};
        DataCopyPadExtParams<DTYPE_X> pad{false, 0, 0, 0};
        DataCopyPad(xLocal, xGm, copyParams, pad);
        inQueue.EnQue(xLocal);
        xLocal = inQueue.DeQue<DTYPE_X>();

        LocalTensor<float> tmp = work.Get<float>();
        Cast(tmp, xLocal, RoundMode::CAST_NONE, len);
        inQueue.FreeTensor(xLocal);
        Muls(tmp, tmp, scale, len);
        LocalTensor<float> total = sum.Get<float>();
        ReduceSum(total, tmp, tmp, len);
        event_t ev = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
        SetFlag<HardEvent::V_S>(ev);
        WaitFlag<HardEvent::V_S>(ev);

        LocalTensor<DTYPE_Y> yLocal = outQueue.AllocTensor<DTYPE_Y>();
        Cast(yLocal, tmp, RoundMode::CAST_RINT, len);
        outQueue.EnQue(yLocal);
        yLocal = outQueue.DeQue<DTYPE_Y>();
        DataCopyPad(yGm, yLocal, copyParams);
        outQueue.FreeTensor(yLocal);
    }

private:
    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> inQueue;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outQueue;
    TBuf<QuePosition::VECCALC> work;
    TBuf<QuePosition::VECCALC> sum;
    GlobalTensor<DTYPE_X> xGm;
    GlobalTensor<DTYPE_Y> yGm;
    uint32_t len;
    float scale;
};

extern "C" __global__ __aicore__ void scale_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    const __gm__ uint32_t *t = reinterpret_cast<const __gm__ uint32_t *>(tiling);
    KernelScale op;
    op.Init(x, y, t[0], 0.5f);
    op.Process();
}
"#;

const SCALE_TILING_H: &str = r#"#ifndef SCALE_CUSTOM_TILING_H
#define SCALE_CUSTOM_TILING_H
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(ScaleCustomTilingData)
TILING_DATA_FIELD_DEF(uint32_t, rowLength);
TILING_DATA_FIELD_DEF(uint32_t, rowsPerCore);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(ScaleCustom, ScaleCustomTilingData)
}
#endif
"#;

const SCALE_HOST: &str = r#"#include "scale_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext *context)
{
    ScaleCustomTilingData tiling;
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    uint32_t cores = platform.GetCoreNumAiv();
    uint64_t ub = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
    const gert::StorageShape *shape = context->GetInputShape(0);
    uint32_t total = static_cast<uint32_t>(shape->GetStorageShape().GetShapeSize());
    tiling.set_rowLength(total);
    tiling.set_rowsPerCore(cores == 0 ? 0 : total / cores);
    context->SetBlockDim(cores);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t *ws = context->GetWorkspaceSizes(1);
    ws[0] = 0;
    return ge::GRAPH_SUCCESS;
}
}

namespace ge {
static graphStatus InferShape(gert::InferShapeContext *context)
{
    *context->GetOutputShape(0) = *context->GetInputShape(0);
    return GRAPH_SUCCESS;
}
static graphStatus InferDataType(gert::InferDataTypeContext *context)
{
    context->SetOutputDataType(0, context->GetInputDataType(0));
    return GRAPH_SUCCESS;
}
}

namespace ops {
class ScaleCustom : public OpDef {
public:
    explicit ScaleCustom(const char *name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_BF16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_BF16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Attr("scale").AttrType(OPTIONAL).Float(1.0);
        this->SetInferShape(ge::InferShape).SetInferDataType(ge::InferDataType);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(ScaleCustom);
}
"#;

#[test]
#[ignore = "needs a CANN 8.1 toolkit tree: OPGEN_TEST_CANN_ROOT=<toolkit root> cargo test -- --ignored"]
fn real_cann_headers_accept_a_good_project_and_reject_broken_files() {
    let root = real_cann_root("real_cann_headers_accept_a_good_project");
    // g++ is a prerequisite of the project (README set-up): its absence fails, never skips.
    assert!(which("g++").is_some(), "real_cann_headers_accept_a_good_project needs g++ on PATH");
    let toolkit = inspect_root_for(&root, Need::Headers, std::env::consts::ARCH).unwrap();
    let tmp = TempDir::new("check-real");
    let project = tmp.path();
    write(&project.join("op_kernel/scale_custom.cpp"), SCALE_KERNEL);
    write(&project.join("op_host/scale_custom_tiling.h"), SCALE_TILING_H);
    write(&project.join("op_host/scale_custom.cpp"), SCALE_HOST);
    // Broken: an API called with the wrong arguments, a misspelt OpDef method.
    write(
        &project.join("op_kernel/zz_bad_kernel.cpp"),
        &patch(
            "SCALE_KERNEL",
            &patch("SCALE_KERNEL", SCALE_KERNEL, "Muls(tmp, tmp, scale, len);", "Muls(tmp, scale, len);"),
            "scale_custom(",
            "zz_bad_kernel(",
        ),
    );
    write(
        &project.join("op_host/zz_bad_host.cpp"),
        &patch("SCALE_HOST", SCALE_HOST, ".SetTiling(", ".SetTilling("),
    );
    let variants = vec![
        defines(&[("DTYPE_X", "half"), ("DTYPE_Y", "half")]),
        defines(&[("DTYPE_X", "bfloat16_t"), ("DTYPE_Y", "bfloat16_t")]),
    ];
    let options = CheckOptions {
        kernel_defines: vec![
            KernelDefines::new("op_kernel/scale_custom.cpp", variants.clone()),
            KernelDefines::new("op_kernel/zz_bad_kernel.cpp", variants[..1].to_vec()),
        ],
        ..CheckOptions::default()
    };
    let started = std::time::Instant::now();
    let report = check_project(project, &toolkit, &options).unwrap();
    println!("{report}");
    println!("took {:?}", started.elapsed());
    let outcome: Vec<(String, bool)> =
        report.entries.iter().map(|e| (e.file.display().to_string(), e.passed)).collect();
    assert_eq!(
        outcome,
        vec![
            ("op_kernel/scale_custom.cpp".into(), true),
            ("op_kernel/scale_custom.cpp".into(), true),
            ("op_kernel/zz_bad_kernel.cpp".into(), false),
            ("op_host/scale_custom.cpp".into(), true),
            ("op_host/zz_bad_host.cpp".into(), false),
            ("op_host/*.cpp".into(), false),
        ],
        "{report}"
    );
    let bad_kernel = &report.entries[2].output;
    assert!(bad_kernel.contains("zz_bad_kernel.cpp:"), "{bad_kernel}");
    assert!(bad_kernel.contains("Muls"), "{bad_kernel}");
    assert_eq!(
        report.entries[2].first_error(),
        Some(
            "op_kernel/zz_bad_kernel.cpp:33:13: error: no matching function for call to \
             'Muls(AscendC::LocalTensor<float>&, float&, uint32_t&)'"
        )
    );
    assert!(report.to_string().contains("first error: op_host/zz_bad_host.cpp:48:24: error:"));
    let bad_host = &report.entries[4].output;
    assert!(bad_host.contains("SetTilling"), "{bad_host}");
}

#[test]
#[ignore = "needs a CANN 8.1 toolkit tree: OPGEN_TEST_CANN_ROOT=<toolkit root> cargo test -- --ignored"]
fn real_cann_headers_link_the_generated_op_host_files_as_one_library() {
    let root = real_cann_root("real_cann_headers_link_the_generated_op_host_files");
    assert!(which("g++").is_some(), "real_cann_headers_link_the_generated_op_host_files needs g++ on PATH");
    let toolkit = inspect_root_for(&root, Need::Headers, std::env::consts::ARCH).unwrap();
    // The committed golden project's op_host files (gen-ops --check keeps them current).
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/project/op_host");
    let tmp = TempDir::new("check-real-link");
    let mut hosts = 0;
    for entry in std::fs::read_dir(&golden).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        if path.extension().is_some_and(|e| e == "cpp") {
            hosts += 1;
        }
        if path.extension().is_some_and(|e| e == "cpp" || e == "h") {
            std::fs::create_dir_all(tmp.path().join("op_host")).unwrap();
            std::fs::copy(&path, tmp.path().join("op_host").join(name)).unwrap();
        }
    }
    assert!(hosts >= 2, "{}: fewer than two op_host files", golden.display());
    let report = check_project(tmp.path(), &toolkit, &CheckOptions::default()).unwrap();
    println!("{report}");
    let link = report.entries.iter().find(|e| e.kind == FileKind::HostLink).expect("a link entry");
    assert!(report.passed(), "{report}");
    assert!(!link.output.contains("-Wodr"), "{}", link.output);
}
