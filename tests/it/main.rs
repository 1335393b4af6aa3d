//! The integration tests: one crate, so the library and its dependencies are linked once, and
//! shared support (temporary directories removed on drop, the checked patch helpers for kernel,
//! template and spec text, fake toolkit trees) is one module.
//! `cargo test --test it <module>::` runs one file's tests, e.g. `cargo test --test it golden::`.

#[path = "toolchain_support/mod.rs"]
mod support;

mod backward_table;
mod batch_invariance;
mod build_npu;
mod cann_discovery;
mod cann_project;
mod check_cann;
mod cli_gen;
mod cli_run_plan;
mod command_runner;
mod copied_helpers;
mod elementwise_expr;
mod elementwise_grad;
mod elementwise_spec;
mod elementwise_user_op;
mod elementwise_values;
mod fuzz_replay;
mod gates_mutants;
mod golden;
mod grpo_twin;
mod hf_rounding;
mod layer_norm_grad;
mod layering;
mod layout_spec;
mod layout_twin;
mod npy_bf16;
mod perturbed;
mod project_names;
mod proptest_ops;
mod report_calibration;
mod report_twin;
mod reverse_scan_spec;
mod reverse_scan_twin;
mod rotary_grad_spec;
mod rotary_grad_twin;
mod rotary_spec;
mod rotary_twin;
mod row_norm_grad;
mod row_norm_grad_spec;
mod row_norm_spec;
mod row_norm_values;
mod run_npu;
mod spec_load;
mod spec_validation;
mod sweep_coverage;
mod torch_schema;
mod twin_protocol;
mod twin_suites;
mod verify_catalogue;
mod vocab_reduce_grad_twin;
mod vocab_reduce_spec;
mod vocab_reduce_twin;
mod whiten_spec;
mod whiten_twin;
