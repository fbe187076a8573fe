// Roles, phases and aliases of an imported JAX step (docs/hlo-import.md):
//   aliases   each input_output_alias entry {i}: (p, {}) makes output i an update of entry
//             parameter p (alias_of = p). An output that is a parameter itself or already
//             replaces another parameter gets an identity reshape of its own to carry the alias.
//   roles     a non-donated parameter is an input; a donated one is a trainable parameter when
//             the loss depends on it, else optimizer state (Adam's moments, the step counter).
//   loss      the first output that is not aliased; it is listed first among the outputs.
//   phases    forward: the loss and its ancestors. update: from each aliased output upwards,
//             every op until the gradient. The gradient (role gradient, phase backward) is the
//             first op on that walk computed from the forward pass, of the parameter's shape,
//             and either not elementwise (the transpose, reduction, pad or scatter that ends
//             the backward pass) or an add of two such values (a weight used twice).
//             backward: everything else.
// Ops that no output needs are dropped (the entry parameters stay).
#pragma once

#include "core/util/status.h"
#include "import/hlo/hlo_to_graph.h"

namespace alpa {

Status AssignTrainingRoles(HloImport& import);

}  // namespace alpa
