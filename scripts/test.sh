#!/usr/bin/env bash
# The whole kir test suite, from a fresh clone: installs the tools the tests need (ptxas etc. from
# PyPI, into .tools/), then builds and runs every test of the workspace.
#
#   bash scripts/test.sh
#
# CI runs exactly this (see .ci/run). With CI=true, insta snapshot tests fail on a missing or stale
# snapshot, and tests that need ptxas fail instead of skipping when it is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup-tools.sh

# Tests run with the `test` profile (opt-level 1, dependencies at opt-level 2): the interpreter-driven
# tests are too slow unoptimized.
cargo test --workspace --no-fail-fast "$@"
