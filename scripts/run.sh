#!/usr/bin/env bash
# Installs what is missing, builds into ./build (Release) and runs the main job on its embedded
# default. Extra arguments go to the `alpa` program (e.g. `scripts/run.sh solve FILE 60`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target alpa_cli >/dev/null
exec build/bin/alpa "$@"
