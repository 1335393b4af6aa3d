#!/usr/bin/env bash
# Moved to `cargo xtask fetch-wheels` (src/app/host_checks.rs): eval "$(cargo xtask fetch-wheels | grep '^export ')"
exec cargo xtask fetch-wheels
