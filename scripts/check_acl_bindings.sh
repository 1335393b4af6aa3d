#!/usr/bin/env bash
# Moved to `cargo xtask check-acl` (src/app/host_checks.rs).
exec cargo xtask check-acl
