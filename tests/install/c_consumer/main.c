/* Links against an installed libalpa: checks that the header and the library agree, then reads
 * and solves the IOPDDL example problem (gzip detection, the solver and GLPK, so that a static
 * link must resolve zlib, GLPK, threads, libm and the C++ runtime).
 * Usage: main PROBLEM.json (tests/golden/iopddl_example.json: optimum 445) */
#include <alpa.h>
#include <stdio.h>

int main(int argc, char** argv) {
  alpa_problem* problem = NULL;
  alpa_solution* solution = NULL;
  alpa_error* err = NULL;
  double objective = -1;
  if (argc != 2) {
    fprintf(stderr, "usage: %s PROBLEM.json\n", argv[0]);
    return 2;
  }
  printf("libalpa %s\n", alpa_version_string());
  if (alpa_version_number() != ALPA_VERSION_NUMBER) {
    fprintf(stderr, "header version %d, library %d\n", ALPA_VERSION_NUMBER,
            (int)alpa_version_number());
    return 1;
  }
  if (alpa_problem_read_file(&problem, argv[1], ALPA_FORMAT_AUTO, &err) != ALPA_OK ||
      alpa_problem_solve(&solution, problem, NULL, &err) != ALPA_OK) {
    fprintf(stderr, "error: %s\n", err ? alpa_error_message(err) : "?");
    alpa_error_free(err);
    alpa_problem_destroy(problem);
    return 1;
  }
  objective = alpa_solution_objective(solution);
  printf("objective %g\n", objective);
  alpa_solution_destroy(solution);
  alpa_problem_destroy(problem);
  return objective == 445.0 ? 0 : 1;
}
