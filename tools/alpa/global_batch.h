// `alpa plan --global-batch 256,512,1024`: the global batch as a searched option where the user
// allows several. The model is planned at each batch (its spec's `batch` key replaced), and the
// plan of the most samples per second (batch / predicted iteration time) is kept; ties keep the
// smaller batch. A batch at which no plan fits is skipped; when none fits, the exit code is 2.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "alpa.h"

namespace alpa_cli {

// At most this many batches in one list.
inline constexpr size_t kMaxGlobalBatches = 16;

// "256,512,1024" as batches (distinct, each >= 1, at most kMaxGlobalBatches); false with
// *error naming the offending entry.
bool ParseGlobalBatches(const std::string& text, std::vector<int64_t>* batches, std::string* error);

// The zoo spec with its `batch` key set: "gpt-2.6b" -> "gpt-2.6b:batch=512",
// "gpt:hidden=64,batch=8" -> "gpt:hidden=64,batch=512".
std::string SpecWithBatch(const std::string& spec, int64_t batch);

// Plans `model` at each batch with `options` on `cluster`; *out the kept plan (the caller
// destroys it), *chosen its spec. Prints one line per batch unless `quiet`. Returns 0, 2 when no
// batch fits (message on stderr), or 1 on another error (message naming the batch).
int PlanGlobalBatches(const std::string& model, const std::vector<int64_t>& batches,
                      const alpa_cluster* cluster, const alpa_plan_options* options, bool quiet,
                      alpa_plan** out, std::string* chosen);

}  // namespace alpa_cli
