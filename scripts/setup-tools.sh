#!/usr/bin/env bash
# Installs the NVIDIA command-line tools kir's PTX tests and benchmarks use, from PyPI, into
# .tools/py inside the repository (gitignored). No GPU and no CUDA installation are needed.
#
#   ptxas    (nvidia-cuda-nvcc-cu12)   assembles kir's PTX: tests fail on any ptxas error
#   nvdisasm (nvidia-cuda-nvdisasm)    SASS listing for the code-quality table (no 12.x wheel
#                                      exists on PyPI; the 13.x nvdisasm reads sm_80/sm_90 cubins)
#   libnvrtc (nvidia-cuda-nvrtc-cu12)  compiles the CUDA C baselines in bench/ (loaded by cudarc)
#
# Idempotent: packages already present at the pinned versions are not fetched again.
# Exits non-zero with a message when the install fails (offline, no pip, ...).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="$ROOT/.tools/py"
NVCC_PKG="nvidia-cuda-nvcc-cu12==12.9.86"
NVDISASM_PKG="nvidia-cuda-nvdisasm==13.2.86"
NVRTC_PKG="nvidia-cuda-nvrtc-cu12==12.9.86"
STAMP="$TARGET/.kir-tools-installed"
WANT="$NVCC_PKG $NVDISASM_PKG $NVRTC_PKG"

PY="${PYTHON:-python3}"
if ! command -v "$PY" >/dev/null 2>&1; then
    echo "setup-tools: error: $PY not found; install Python 3 with pip" >&2
    exit 1
fi

find_one() { # find_one NAME: first file named NAME under .tools/py/nvidia
    find "$TARGET/nvidia" -name "$1" -type f 2>/dev/null | sort | head -n 1
}

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" && -x "$TARGET/nvidia/cuda_nvcc/bin/ptxas" ]]; then
    echo "setup-tools: already installed ($WANT)"
else
    mkdir -p "$TARGET"
    echo "setup-tools: installing $WANT into $TARGET"
    if ! "$PY" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --upgrade \
        --target "$TARGET" $WANT; then
        echo "setup-tools: error: pip install failed (offline? PyPI unreachable?)." >&2
        echo "setup-tools: ptxas is needed by the PTX tests; with CI=true they fail without it." >&2
        exit 1
    fi
    echo "$WANT" > "$STAMP"
fi

PTXAS="$TARGET/nvidia/cuda_nvcc/bin/ptxas"
if [[ ! -x "$PTXAS" ]]; then
    PTXAS="$(find_one ptxas)"
fi
if [[ -z "$PTXAS" || ! -x "$PTXAS" ]]; then
    echo "setup-tools: error: ptxas not found under $TARGET after install" >&2
    exit 1
fi
if ! "$PTXAS" --version >/dev/null 2>&1; then
    echo "setup-tools: error: $PTXAS does not run" >&2
    exit 1
fi
NVDISASM="$(find_one nvdisasm)"
[[ -n "$NVDISASM" ]] && chmod +x "$NVDISASM"
NVRTC="$(find_one 'libnvrtc.so.12')"
echo "ptxas:    $PTXAS"
echo "nvdisasm: ${NVDISASM:-not found}"
echo "libnvrtc: ${NVRTC:-not found}"
