/* Builds a three-node sharding problem by hand, solves it and prints the plan.
 * Node 0 and node 2 each pick between "replicated" (strategy 0) and "split" (strategy 1);
 * node 1 sits between them and resharding costs apply on both edges. */
#include <stdio.h>

#include "alpa.h"

int main(void) {
  const int32_t strategy_counts[3] = {2, 2, 2};
  const double costs[6] = {1, 2, 1, 2, 1, 2}; /* splitting costs communication */
  const int64_t usages[6] = {8, 4, 8, 4, 8, 4};
  const int64_t intervals[6] = {0, 2, 1, 3, 2, 4};
  const int32_t endpoints[4] = {0, 1, 1, 2};
  /* Keeping the same layout is free, changing it costs 5 (an all-gather or a slice). */
  const double edge_costs[8] = {0, 5, 5, 0, 0, 5, 5, 0};
  alpa_error* err = NULL;
  alpa_problem* problem = NULL;
  alpa_solution* solution = NULL;
  int32_t assignment[3];
  int64_t i, n;

  if (alpa_problem_create(&problem, &err) != ALPA_OK ||
      alpa_problem_add_nodes(problem, 3, strategy_counts, costs, usages, &err) != ALPA_OK ||
      alpa_problem_set_intervals(problem, 3, intervals, &err) != ALPA_OK ||
      alpa_problem_add_edges(problem, 2, endpoints, edge_costs, &err) != ALPA_OK ||
      alpa_problem_set_memory_limit(problem, 12, &err) != ALPA_OK ||
      alpa_problem_finalize(problem, &err) != ALPA_OK ||
      alpa_problem_solve(&solution, problem, NULL, &err) != ALPA_OK) {
    fprintf(stderr, "error: %s\n", err ? alpa_error_message(err) : "?");
    alpa_error_free(err);
    alpa_problem_destroy(problem);
    return 1;
  }
  n = alpa_solution_assignment(solution, assignment, 3);
  printf("status %d, cost %g:", alpa_solution_status(solution), alpa_solution_objective(solution));
  for (i = 0; i < n; ++i)
    printf(" node %lld -> %s", (long long)i, assignment[i] ? "split" : "replicated");
  printf("\n");
  /* Replicating everything would cost 3 but needs 16 bytes while two nodes are live; with 12
   * bytes, splitting all three (cost 6) beats mixing layouts (cost 14 or 15). */
  {
    const int ok = alpa_solution_status(solution) == ALPA_SOLVE_OPTIMAL &&
                   alpa_solution_objective(solution) == 6.0;
    alpa_solution_destroy(solution);
    alpa_problem_destroy(problem);
    return ok ? 0 : 1;
  }
}
