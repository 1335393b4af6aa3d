//! Property tests: random shapes (1-sized and unaligned dims included), dtypes, attrs and
//! seeds per catalogue op, twin (built with ASan/UBSan) against the reference.
//!
//! The default run keeps a small budget; `OPGEN_PROPTEST_CASES=2000 cargo test --test
//! proptest_ops -- --test-threads 2` runs thousands.

use ascend_opgen::app::verify::check_case;
use ascend_opgen::codegen::{render_project, Project};
use ascend_opgen::plan::soc;
use ascend_opgen::spec::{self, AttrValue, OpSpec};
use ascend_opgen::verify::inputs::Distribution;
use ascend_opgen::verify::{build_runner, BuildOptions, Case, Runner};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

fn cases_per_op() -> u32 {
    std::env::var("OPGEN_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(6)
}

struct Catalogue {
    specs: Vec<OpSpec>,
    project: Project,
    runners: Mutex<HashMap<(String, usize), Runner>>,
}

fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        let specs = spec::load_catalogue(&ascend_opgen::repo_root().join("kernels")).unwrap();
        let refs: Vec<&OpSpec> = specs.iter().collect();
        let project = render_project(&refs).unwrap();
        Catalogue { specs, project, runners: Mutex::new(HashMap::new()) }
    })
}

fn runner(spec: &OpSpec, column: usize) -> Runner {
    let cat = catalogue();
    let key = (spec.name.clone(), column);
    if let Some(r) = cat.runners.lock().unwrap().get(&key) {
        return r.clone();
    }
    let r = build_runner(&cat.project, spec, column, BuildOptions::default()).unwrap();
    cat.runners.lock().unwrap().insert(key, r.clone());
    r
}

fn distribution() -> impl Strategy<Value = Distribution> {
    prop_oneof![
        4 => Just(Distribution::Uniform5),
        1 => Just(Distribution::NormalLargeMean),
        1 => Just(Distribution::Tiny),
        1 => Just(Distribution::Outlier),
        1 => Just(Distribution::Zeros),
        1 => Just(Distribution::NanInf),
    ]
}

/// A row length: mostly small and unaligned, sometimes one element, sometimes past the UB
/// budget (split-D).
fn row_len() -> impl Strategy<Value = usize> {
    prop_oneof![6 => 1usize..700, 1 => Just(1usize), 1 => 9000usize..20000]
}

/// x's shape and gamma's rank for the row norms.
fn row_norm_shape() -> impl Strategy<Value = (Vec<usize>, usize)> {
    (prop::collection::vec(1usize..5, 0..3), prop::collection::vec(row_len(), 1..3)).prop_map(
        |(lead, tail)| {
            let rank = tail.len();
            let mut shape = lead;
            // Keep the launch small: a split-D row is only paired with few rows.
            let tail_elems: usize = tail.iter().product();
            if tail_elems > 4096 {
                shape.truncate(1);
            }
            shape.extend(&tail);
            if tail_elems > 40_000 {
                // Two trailing dims of a split-D size: fold to one.
                let n = shape.len();
                shape.truncate(n - 1);
                return (shape, 1);
            }
            (shape, rank)
        },
    )
}

fn check_row_norm(name: &str) {
    let cat = catalogue();
    let spec = cat.specs.iter().find(|s| s.name == name).expect("catalogue op").clone();
    let mut runner_ =
        TestRunner::new(Config { cases: cases_per_op(), failure_persistence: None, ..Config::default() });
    let strategy = (row_norm_shape(), 0..spec.columns(), distribution(), any::<u64>(), 1e-8f64..1e-2);
    runner_
        .run(&strategy, |((x, gamma_rank), column, dist, seed, eps)| {
            let names: Vec<&str> = spec.inputs.iter().map(|t| t.name.as_str()).collect();
            let mut shapes = vec![(names[0].to_string(), x.clone())];
            if spec.inputs.len() == 3 {
                shapes.push((names[1].to_string(), x.clone()));
            }
            shapes.push((names[names.len() - 1].to_string(), x[x.len() - gamma_rank..].to_vec()));
            let case =
                Case { shapes, dist, seed, attrs: vec![("epsilon".to_string(), AttrValue::Float(eps))] };
            let soc = soc::find(soc::DEFAULT_SOC).unwrap();
            check_case(&spec, column, &runner(&spec, column), soc, &case).map_err(TestCaseError::fail)
        })
        .unwrap();
}

#[test]
fn rms_norm_random_cases_match_the_reference() {
    check_row_norm("rms_norm");
}

#[test]
fn add_rms_norm_random_cases_match_the_reference() {
    check_row_norm("add_rms_norm");
}
