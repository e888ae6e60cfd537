#!/usr/bin/env bash
# Draws the pictures in docs/ with kir (target/release/kir, or $KIR).
#
#   cargo build --release && bash scripts/doc-pictures.sh
#
# tests/readme.rs runs every `kir cfg ... > docs/NAME.svg` line below with the kir it built and
# fails when a committed picture differs from what it draws: after a change to the kernels or to
# the drawing (src/cfg_svg.rs), run this and commit the pictures. Every picture in docs/ must have
# its line here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
kir() { "${KIR:-target/release/kir}" "$@"; }

kir cfg kernels/softmax.kir --kernel softmax_rows --format svg > docs/cfg-softmax.svg
