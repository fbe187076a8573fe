#!/usr/bin/env bash
# needed_libraries_test.sh [--expect NAME]... FILE...: no FILE names NCCL or cuDNN among its
# DT_NEEDED entries, and each names every --expect NAME (a substring), which shows the entries
# were read.
#
# libalpa opens NCCL and cuDNN at run time (src/exec/cuda/nccl_loader.h, dnn_loader.h). Linked,
# they would be loaded with libalpa, and a process keeps the first library of a soname for every
# later library that needs it: PyTorch's CUDA wheel needs its own, newer libnccl.so.2, and
# `import alpa` then `import torch` failed ("undefined symbol: ncclCommResume"); its wheels bring
# their own libcudnn.so.9 too.
set -euo pipefail

expected=()
files=()
while [ $# -gt 0 ]; do
  case $1 in
    --expect) expected+=("$2"); shift 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
if ! command -v readelf >/dev/null; then
  echo "SKIP: no readelf (binutils) to list DT_NEEDED"
  exit 77
fi

status=0
for file in "${files[@]}"; do
  needed=$(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
  echo "$file needs: $(tr '\n' ' ' <<<"$needed")"
  nccl=$(grep -i nccl <<<"$needed" || true)
  if [ -n "$nccl" ]; then
    echo "FAIL: $file links $nccl: NCCL must be opened at run time (nccl_loader.h), not linked"
    status=1
  fi
  cudnn=$(grep -i cudnn <<<"$needed" || true)
  if [ -n "$cudnn" ]; then
    echo "FAIL: $file links $cudnn: cuDNN must be opened at run time (dnn_loader.h), not linked"
    status=1
  fi
  for name in "${expected[@]}"; do
    if ! grep -q -- "$name" <<<"$needed"; then
      echo "FAIL: $file does not name $name among its DT_NEEDED entries"
      status=1
    fi
  done
done
exit $status
