// Links against an installed libalpa from C++: the header compiles as C++ and its functions
// link with C names; solves the IOPDDL example problem as the C consumer does.
// Usage: main PROBLEM.json (tests/golden/iopddl_example.json: optimum 445)
#include <alpa.h>

#include <iostream>
#include <memory>

namespace {

struct ProblemDeleter {
  void operator()(alpa_problem* problem) const { alpa_problem_destroy(problem); }
};
struct SolutionDeleter {
  void operator()(alpa_solution* solution) const { alpa_solution_destroy(solution); }
};
struct ErrorDeleter {
  void operator()(alpa_error* err) const { alpa_error_free(err); }
};

int Fail(alpa_error* raw) {
  const std::unique_ptr<alpa_error, ErrorDeleter> err(raw);
  std::cerr << "error: " << (err ? alpa_error_message(err.get()) : "?") << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " PROBLEM.json\n";
    return 2;
  }
  std::cout << "libalpa " << alpa_version_string() << "\n";
  if (alpa_version_number() != ALPA_VERSION_NUMBER) {
    std::cerr << "header version " << ALPA_VERSION_NUMBER << ", library " << alpa_version_number()
              << "\n";
    return 1;
  }
  alpa_error* err = nullptr;
  alpa_problem* raw_problem = nullptr;
  if (alpa_problem_read_file(&raw_problem, argv[1], ALPA_FORMAT_AUTO, &err) != ALPA_OK) {
    return Fail(err);
  }
  const std::unique_ptr<alpa_problem, ProblemDeleter> problem(raw_problem);
  alpa_solution* raw_solution = nullptr;
  if (alpa_problem_solve(&raw_solution, problem.get(), nullptr, &err) != ALPA_OK) return Fail(err);
  const std::unique_ptr<alpa_solution, SolutionDeleter> solution(raw_solution);
  const double objective = alpa_solution_objective(solution.get());
  std::cout << "objective " << objective << "\n";
  return objective == 445.0 ? 0 : 1;
}
