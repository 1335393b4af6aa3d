#!/usr/bin/env bash
# Moved to `cargo xtask check-torch-ext [--work DIR]` (src/app/host_checks.rs).
exec cargo xtask check-torch-ext ${1:+--work "$1"}
