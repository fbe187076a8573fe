#!/usr/bin/env bash
# Installs what the build needs, builds the `alpa` program into ./build (Release) and runs it:
# with no arguments its main job, otherwise the arguments go to `alpa` (e.g.
# `scripts/run.sh solve FILE 60`). The build's progress goes to stderr, so stdout holds only
# the program's output.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh run >&2
echo "run.sh: configuring ./build (Release)" >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
echo "run.sh: building the alpa program on $(nproc) cores (a first build takes minutes)" >&2
cmake --build build -j"$(nproc)" --target alpa_cli >&2
echo "run.sh: running build/bin/alpa $*" >&2
exec build/bin/alpa "$@"
