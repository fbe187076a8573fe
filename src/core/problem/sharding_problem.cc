#include "core/problem/sharding_problem.h"

#include <cmath>
#include <string>

namespace alpa {
namespace {

std::string NodeName(size_t i) { return "node " + std::to_string(i); }

Status CheckEndpoint(const ShardingProblem& p, const char* what, size_t index, int32_t node) {
  if (node < 0 || static_cast<size_t>(node) >= p.nodes.size()) {
    return InvalidProblem(std::string(what) + " " + std::to_string(index) + ": endpoint " +
                          std::to_string(node) + " is not a node id (there are " +
                          std::to_string(p.nodes.size()) + " nodes)");
  }
  return Status::Ok();
}

Status ValidateNodes(const ShardingProblem& problem) {
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    const ShardingNode& node = problem.nodes[i];
    if (node.costs.empty()) return InvalidProblem(NodeName(i) + " has no strategies");
    bool any_allowed = false;
    for (size_t s = 0; s < node.costs.size(); ++s) {
      if (std::isnan(node.costs[s])) {
        return InvalidProblem(NodeName(i) + " strategy " + std::to_string(s) + ": cost is NaN");
      }
      if (!IsForbidden(node.costs[s])) any_allowed = true;
    }
    if (!any_allowed) {
      return InvalidProblem(NodeName(i) + ": every strategy is forbidden (cost >= 1e18)");
    }
    if (!node.usages.empty() && node.usages.size() != node.costs.size()) {
      return InvalidProblem(NodeName(i) + " has " + std::to_string(node.costs.size()) +
                            " strategies but " + std::to_string(node.usages.size()) + " usages");
    }
    for (size_t s = 0; s < node.usages.size(); ++s) {
      if (node.usages[s] < 0) {
        return InvalidProblem(NodeName(i) + " strategy " + std::to_string(s) + ": negative usage " +
                              std::to_string(node.usages[s]));
      }
    }
    if (node.interval.lo < 0 || node.interval.hi < node.interval.lo) {
      return InvalidProblem(NodeName(i) + ": usage interval [" + std::to_string(node.interval.lo) +
                            ", " + std::to_string(node.interval.hi) +
                            ") is invalid (need 0 <= lo <= hi)");
    }
    if (node.follows != -1) {
      if (node.follows < 0 || static_cast<size_t>(node.follows) >= problem.nodes.size()) {
        return InvalidProblem(NodeName(i) + " follows " + std::to_string(node.follows) +
                              ", which is not a node id");
      }
      if (problem.nodes[static_cast<size_t>(node.follows)].costs.size() != node.costs.size()) {
        return InvalidProblem(
            NodeName(i) + " follows node " + std::to_string(node.follows) + " but has " +
            std::to_string(node.costs.size()) + " strategies where the followed node has " +
            std::to_string(problem.nodes[static_cast<size_t>(node.follows)].costs.size()));
      }
    }
  }
  // Follower cycles: walk each chain with a step bound.
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    int32_t cur = static_cast<int32_t>(i);
    size_t steps = 0;
    while (problem.nodes[static_cast<size_t>(cur)].follows != -1) {
      cur = problem.nodes[static_cast<size_t>(cur)].follows;
      if (++steps > problem.nodes.size()) {
        return InvalidProblem(NodeName(i) + ": its follows chain has a cycle");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateProblem(const ShardingProblem& problem) {
  if (problem.nodes.size() > static_cast<size_t>(INT32_MAX)) {
    return InvalidProblem("too many nodes: " + std::to_string(problem.nodes.size()));
  }
  ALPA_RETURN_IF_ERROR(ValidateNodes(problem));
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    const ShardingEdge& edge = problem.edges[e];
    ALPA_RETURN_IF_ERROR(CheckEndpoint(problem, "edge", e, edge.u));
    ALPA_RETURN_IF_ERROR(CheckEndpoint(problem, "edge", e, edge.v));
    const size_t want = problem.nodes[static_cast<size_t>(edge.u)].costs.size() *
                        problem.nodes[static_cast<size_t>(edge.v)].costs.size();
    if (edge.costs.size() != want) {
      return InvalidProblem("edge " + std::to_string(e) + " (" + std::to_string(edge.u) + ", " +
                            std::to_string(edge.v) + ") has " + std::to_string(edge.costs.size()) +
                            " costs, expected " + std::to_string(want));
    }
    for (size_t k = 0; k < edge.costs.size(); ++k) {
      if (std::isnan(edge.costs[k])) {
        return InvalidProblem("edge " + std::to_string(e) + " cost " + std::to_string(k) +
                              " is NaN");
      }
    }
  }
  for (size_t a = 0; a < problem.aliases.size(); ++a) {
    const ShardingAlias& alias = problem.aliases[a];
    ALPA_RETURN_IF_ERROR(CheckEndpoint(problem, "alias", a, alias.u));
    ALPA_RETURN_IF_ERROR(CheckEndpoint(problem, "alias", a, alias.v));
    const size_t want = problem.nodes[static_cast<size_t>(alias.u)].costs.size() *
                        problem.nodes[static_cast<size_t>(alias.v)].costs.size();
    if (alias.forbidden.size() != want) {
      return InvalidProblem("alias " + std::to_string(a) + " (" + std::to_string(alias.u) + ", " +
                            std::to_string(alias.v) + ") has " +
                            std::to_string(alias.forbidden.size()) + " entries, expected " +
                            std::to_string(want));
    }
  }
  for (size_t t = 0; t < problem.live_sets.size(); ++t) {
    for (int32_t node : problem.live_sets[t]) {
      if (node < 0 || static_cast<size_t>(node) >= problem.nodes.size()) {
        return InvalidProblem("live set of time step " + std::to_string(t) + " names node " +
                              std::to_string(node) + ", which does not exist");
      }
    }
  }
  if (problem.usage_limit && *problem.usage_limit < 0) {
    return InvalidProblem("usage limit " + std::to_string(*problem.usage_limit) + " is negative");
  }
  return Status::Ok();
}

int32_t FollowRoot(const ShardingProblem& problem, int32_t node) {
  while (problem.nodes[static_cast<size_t>(node)].follows != -1) {
    node = problem.nodes[static_cast<size_t>(node)].follows;
  }
  return node;
}

}  // namespace alpa
