#include "solvers/sharding/ilp/ilp_glpk.h"

#include <glpk.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <csetjmp>
#include <cstddef>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "solvers/sharding/ilp/ilp_model.h"

// The model comes from ilp_model.h (no GLPK there); this file loads it into GLPK and drives the
// search.
//
// Thread safety: Debian's GLPK 5.0 is built with thread-local storage (glp_config("TLS") reports
// "_Thread_local"), so every thread has its own GLPK environment and concurrent solves on
// different threads do not share state. Everything installed here (error hook, terminal hook,
// terminal switch) is per thread and undone before returning (GLPK has no getters for the hooks,
// so they are reset to none). A GLPK built without TLS has one process-wide environment: calls
// are then serialized by a mutex.
//
// Error handling: GLPK calls abort() after an internal error unless the error hook leaves by
// longjmp. The hook jumps back into RunGlpk, which then must call glp_free_env() (the manual: the
// environment is unusable after an error). That also frees any other GLPK object the calling
// thread holds; the library itself keeps none between calls.

namespace alpa {
namespace {

constexpr long double kInfinity = std::numeric_limits<long double>::infinity();

// Everything the GLPK phase reads and writes. RunGlpk and the callbacks keep no other state, so
// that a longjmp out of GLPK skips no C++ destructor.
struct GlpkRun {
  const IlpModel* model = nullptr;
  const SolveControl* control = nullptr;
  const IlpOptions* options = nullptr;
  double upper = std::numeric_limits<double>::infinity();  // incumbent objective, GLPK units
  IlpLp view;  // the LP: every s column, and the e columns that can still matter
  glp_prob* lp = nullptr;
  std::jmp_buf jump;
  // Outputs.
  bool failed = false;  // GLPK raised an error (message holds its text)
  int simplex_ret = 0, lp_status = GLP_UNDEF, intopt_ret = -1, mip_status = GLP_UNDEF;
  bool proven_by_bound = false;  // the root LP bound already meets the incumbent
  double root_bound = -std::numeric_limits<double>::infinity();  // GLPK units
  double tree_bound = -std::numeric_limits<double>::infinity();  // best active node
  double reported_objective = std::numeric_limits<double>::infinity();
  double reported_bound = -std::numeric_limits<double>::infinity();
  double next_bound_check = 0;  // SolveControl seconds
  bool heuristic_offered = false;
  bool stopped = false;  // by the deadline, the cancel flag, the node limit or on_progress
  // The root LP runs with progress output on, so that the terminal hook, called with each
  // progress line, can poll the cancel flags (glp_simplex has no callback of its own).
  bool watching_root_lp = false;
  bool cancelled_in_root_lp = false;  // the hook left glp_simplex by longjmp
  bool progress_threw = false;
  int64_t nodes = 0;
  std::vector<double> column_value;  // per model column, when mip_status is GLP_OPT/GLP_FEAS
  char message[512] = {};
  size_t message_length = 0;
};

// The values setjmp returns with: GLPK raised an error, or the caller cancelled the root LP.
constexpr int kJumpOnError = 1;
constexpr int kJumpOnCancel = 2;
// How often glp_simplex writes a progress line (GLPK 5 counts out_frq in milliseconds), and so
// how often the root LP polls for a cancel.
constexpr int kRootLpPollMilliseconds = 20;

void OnGlpkError(void* info) { std::longjmp(static_cast<GlpkRun*>(info)->jump, kJumpOnError); }

// Keeps GLPK's terminal output for the message, and swallows it: the text of an error, and
// during the root LP its progress lines, of which only the tail is kept (an error's text comes
// last). During the root LP it also leaves glp_simplex by longjmp once the caller cancels; the
// environment is then freed like after an error.
int CaptureTerminal(void* info, const char* text) {
  GlpkRun* run = static_cast<GlpkRun*>(info);
  if (run->watching_root_lp && run->control->cancelled()) {
    run->cancelled_in_root_lp = true;
    run->stopped = true;
    std::longjmp(run->jump, kJumpOnCancel);
  }
  size_t length = std::strlen(text);
  const size_t capacity = sizeof(run->message) - 1;
  if (run->watching_root_lp && run->message_length + length > capacity) {
    const size_t drop = std::min(run->message_length, run->message_length + length - capacity);
    std::memmove(run->message, run->message + drop, run->message_length - drop);
    run->message_length -= drop;
  }
  length = std::min(capacity - run->message_length, length);
  std::memcpy(run->message + run->message_length, text, length);
  run->message_length += length;
  run->message[run->message_length] = '\0';
  return 1;
}

// GLPK's time limit, keeping `reserve` seconds for work that GLPK does not count against it.
int MillisecondsLeft(const SolveControl& control, double reserve = 0) {
  const double seconds = control.remaining_seconds() - reserve;
  if (!(seconds < 1e6)) return INT_MAX;
  return std::max(1, static_cast<int>(seconds * 1000.0));
}

// Relative tolerance on objective comparisons, as GLPK's own tol_obj.
double ObjectiveTolerance(double value) { return 1e-7 * (1.0 + std::fabs(value)); }

void LoadLp(GlpkRun* run) {
  const IlpModel& model = *run->model;
  glp_prob* lp = run->lp;
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_rows(lp, model.rows());
  for (int32_t r = 1; r <= model.rows(); ++r) {
    const double rhs = model.row_rhs[static_cast<size_t>(r)];
    if (model.row_is_memory[static_cast<size_t>(r)]) {
      glp_set_row_bnds(lp, r, GLP_UP, 0.0, rhs);
    } else {
      glp_set_row_bnds(lp, r, GLP_FX, rhs, rhs);
    }
  }
  const int columns = static_cast<int>(run->view.model_of.size()) - 1;
  glp_add_cols(lp, columns);
  for (int k = 1; k <= columns; ++k) {
    const size_t c = static_cast<size_t>(run->view.model_of[static_cast<size_t>(k)]);
    // e is continuous, see BuildIlpModel.
    if (model.binary[c]) glp_set_col_kind(lp, k, GLP_BV);
    if (run->view.fixed_zero[static_cast<size_t>(k)]) {
      glp_set_col_bnds(lp, k, GLP_FX, 0.0, 0.0);
    } else {
      glp_set_col_bnds(lp, k, GLP_DB, 0.0, 1.0);
    }
    glp_set_obj_coef(lp, k, model.objective[c]);
  }
  glp_load_matrix(lp, static_cast<int>(run->view.ia.size()) - 1, run->view.ia.data(),
                  run->view.ja.data(), run->view.ar.data());
  // The API does not scale by itself (glpsol does); memory rows mix byte counts with the 0/1
  // rows, and the basis is ill-conditioned without scaling.
  glp_scale_prob(lp, GLP_SF_AUTO);
}

void Terminate(GlpkRun* run, glp_tree* tree) {
  run->stopped = true;
  glp_ios_terminate(tree);
}

// Passes the reported objective and bound to on_progress; false when it asks to stop.
bool CallProgress(GlpkRun* run) {
  if (!run->options->on_progress) return true;
  try {
    return run->options->on_progress(run->reported_objective + run->model->offset,
                                     run->reported_bound + run->model->offset);
  } catch (...) {  // exceptions must not cross GLPK's C frames
    run->progress_threw = true;
    return false;
  }
}

// Reports an improved incumbent or bound from the tree.
void ReportProgress(GlpkRun* run, glp_tree* tree) {
  const int best = glp_ios_best_node(tree);
  // A fresh root's bound is -DBL_MAX until its LP is solved: not worth keeping.
  if (best != 0 && glp_ios_node_bound(tree, best) > -1e300) {
    run->tree_bound = std::max(run->tree_bound, glp_ios_node_bound(tree, best));
  }
  glp_prob* mip = glp_ios_get_prob(tree);
  const double objective =
      glp_mip_status(mip) == GLP_FEAS ? glp_mip_obj_val(mip) : run->reported_objective;
  // Without the left-out columns the tree's bounds hold only for solutions better than the
  // incumbent, hence the min.
  const double bound =
      std::min(std::max(run->tree_bound, run->root_bound), std::min(objective, run->upper));
  if (!(objective < run->reported_objective) && !(bound > run->reported_bound)) return;
  run->reported_objective = std::min(objective, run->reported_objective);
  run->reported_bound = std::max(bound, run->reported_bound);
  if (!CallProgress(run)) Terminate(run, tree);
}

// Reports the root LP bound (with the incumbent, if any); false when on_progress asks to stop.
bool ReportRoot(GlpkRun* run) {
  run->reported_objective = run->upper;
  run->reported_bound = std::min(run->root_bound, run->upper);
  run->stopped = !CallProgress(run);
  return !run->stopped;
}

void OnTree(glp_tree* tree, void* info) {
  GlpkRun* run = static_cast<GlpkRun*>(info);
  if (run->control->expired()) {
    Terminate(run, tree);
    return;
  }
  int total_nodes = 0;
  glp_ios_tree_size(tree, nullptr, nullptr, &total_nodes);
  run->nodes = total_nodes;
  if (run->options->node_limit > 0 && run->nodes > run->options->node_limit) {
    Terminate(run, tree);
    return;
  }
  switch (glp_ios_reason(tree)) {
    case GLP_IHEUR:
      // Offered once, at the first node; GLPK keeps the better of it and its own solutions.
      // glp_ios_heur_sol takes values of the tree's problem columns: with the intopt presolver
      // on those would be the presolved problem's, hence presolve off below.
      if (!run->heuristic_offered && !run->view.incumbent_x.empty()) {
        run->heuristic_offered = true;
        glp_ios_heur_sol(tree, run->view.incumbent_x.data());
      }
      break;
    case GLP_IBINGO:
      ReportProgress(run, tree);
      break;
    case GLP_ISELECT:
      // glp_ios_best_node scans the active list: at most every 20 ms, not at every node.
      if (run->control->elapsed_seconds() >= run->next_bound_check) {
        run->next_bound_check = run->control->elapsed_seconds() + 0.02;
        ReportProgress(run, tree);
      }
      break;
    default:
      break;
  }
}

// The GLPK phase: the root LP (simplex with presolve), then branch and cut unless the root bound
// already proves the incumbent optimal. Only trivially destructible locals: an error longjmps
// back to the setjmp.
void RunGlpk(GlpkRun* run) {
  if (setjmp(run->jump) != 0) {
    run->failed = !run->cancelled_in_root_lp;
    run->watching_root_lp = false;
    run->lp = nullptr;
    glp_free_env();  // the manual: after an error (or our cancel jump) only glp_free_env may be
                     // called
    return;
  }
  glp_error_hook(&OnGlpkError, run);
  glp_term_hook(&CaptureTerminal, run);
  run->lp = glp_create_prob();
  const double load_start = run->control->elapsed_seconds();
  LoadLp(run);
  // glp_simplex's time limit covers its iterations only. Its presolver (which makes the LP of
  // IOPDDL G about 4x faster) and the postsolve took up to 3.7x the loading time on G (0.7 s
  // there): it is used only when the deadline leaves room for that.
  const double load_seconds = run->control->elapsed_seconds() - load_start;
  const bool presolve =
      run->options->deterministic || run->control->remaining_seconds() > 8 * load_seconds;
  const double reserve = (presolve ? 4 : 1) * load_seconds;
  // A cancel during loading stops here: the presolver inside glp_simplex prints nothing while it
  // works, so CaptureTerminal cannot see a cancel until it is done.
  if (run->control->expired() || run->control->remaining_seconds() <= reserve) {
    run->simplex_ret = GLP_ETMLIM;  // no time for an LP (or cancelled): stop at once
  } else {
    glp_smcp simplex;
    glp_init_smcp(&simplex);
    simplex.msg_lev = GLP_MSG_ON;  // to CaptureTerminal, which polls for a cancel
    simplex.out_frq = kRootLpPollMilliseconds;
    simplex.out_dly = 0;
    simplex.presolve = presolve ? GLP_ON : GLP_OFF;
    simplex.tm_lim = MillisecondsLeft(*run->control, reserve);
    run->watching_root_lp = true;
    glp_term_out(GLP_ON);  // else GLPK skips the hook; CaptureTerminal swallows the text
    run->simplex_ret = glp_simplex(run->lp, &simplex);
    glp_term_out(GLP_OFF);
    run->watching_root_lp = false;
    run->message_length = 0;  // progress lines, not an error
    run->message[0] = '\0';
  }
  run->lp_status = run->simplex_ret == 0 ? glp_get_status(run->lp) : GLP_UNDEF;
  if (run->simplex_ret == GLP_ENOPFS) run->lp_status = GLP_NOFEAS;  // found by the presolver
  if (run->lp_status == GLP_OPT && !run->control->expired()) {
    run->root_bound = glp_get_obj_val(run->lp);
    const double gap = run->upper - run->root_bound;
    if (gap <= ObjectiveTolerance(run->root_bound) ||
        gap <= run->options->relative_gap * std::fabs(run->upper)) {
      run->proven_by_bound = true;
    } else if (ReportRoot(run)) {
      glp_iocp mip;
      glp_init_iocp(&mip);
      mip.msg_lev = GLP_MSG_OFF;
      mip.presolve = GLP_OFF;  // keeps the tree on our columns; the root LP is solved above
      mip.tm_lim = MillisecondsLeft(*run->control);
      mip.mip_gap = run->options->relative_gap;
      mip.cb_func = &OnTree;
      mip.cb_info = run;
      // Measured on random instances and on IOPDDL G without an incumbent: most-fractional
      // branching beats the default (Driebeck-Tomlin) by 1.2-3x and pseudocosts lose on G; the
      // cut generators (MIR, Gomory, cover, clique), the feasibility pump and the intopt
      // presolver all cost more time than they save. Best-bound backtracking stays.
      mip.br_tech = GLP_BR_MFV;
      mip.bt_tech = GLP_BT_BLB;
      run->intopt_ret = glp_intopt(run->lp, &mip);
      run->mip_status = glp_mip_status(run->lp);
      if (run->mip_status == GLP_OPT || run->mip_status == GLP_FEAS) {
        for (size_t k = 1; k < run->view.model_of.size(); ++k) {
          run->column_value[static_cast<size_t>(run->view.model_of[k])] =
              glp_mip_col_val(run->lp, static_cast<int>(k));
        }
      }
    }
  }
  glp_delete_prob(run->lp);
  run->lp = nullptr;
}

// Serializes GLPK use when the library has one process-wide environment (built without TLS).
std::mutex& GlpkWithoutTlsMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

IlpResult SolveIlpGlpk(const WorkProblem& problem, const SolveControl& control,
                       const IlpOptions& options) {
  IlpResult result;
  result.objective = kInfinity;
  result.lower_bound = -kInfinity;
  if (problem.cost.empty()) {
    result.status = IlpStatus::kOptimal;
    result.objective = result.lower_bound = problem.constant;
    return result;
  }
  const IlpModel model = BuildIlpModel(problem);
  if (!model.infeasible.empty()) {
    result.status = IlpStatus::kInfeasible;
    result.lower_bound = kInfinity;
    result.message = model.infeasible;
    return result;
  }
  if (model.columns == 0) {  // every node is fixed and every memory row holds
    result.status = IlpStatus::kOptimal;
    result.assignment = model.fixed;
    result.objective = result.lower_bound = WorkObjective(problem, model.fixed);
    return result;
  }
  GlpkRun run;
  run.model = &model;
  run.control = &control;
  run.options = &options;
  const std::vector<char> incumbent_uses = IncumbentColumns(problem, model, options.incumbent);
  std::vector<int32_t> best;  // best feasible assignment known, checked independently
  long double best_objective = kInfinity;
  if (!incumbent_uses.empty()) {
    best = options.incumbent;
    best_objective = WorkObjective(problem, best);
    run.upper = static_cast<double>(best_objective - model.offset);
  }
  if (model.ia.size() + 2 * model.e_row_a.size() > static_cast<size_t>(INT_MAX / 2)) {
    result.status = IlpStatus::kError;
    result.message = "the ILP has too many nonzeros for GLPK";
    result.assignment = best;
    result.objective = best_objective;
    return result;
  }
  // Columns that cannot appear in a solution better than the incumbent are left out (e) or
  // fixed at 0 (s).
  run.view = SelectLpColumns(model, run.upper + ObjectiveTolerance(run.upper), incumbent_uses);
  run.column_value.assign(static_cast<size_t>(model.columns) + 1, 0.0);
  if (!control.expired()) {
    std::unique_lock<std::mutex> lock;
    if (glp_config("TLS") == nullptr) lock = std::unique_lock<std::mutex>(GlpkWithoutTlsMutex());
    // Leave the thread's GLPK environment as found: free it when this call created it. After
    // an error it is gone either way (RunGlpk freed it).
    const int env = glp_init_env();
    if (env != 0 && env != 1) {
      run.failed = true;
      CaptureTerminal(&run, "could not initialize the environment");
    } else {
      const int previous_output = glp_term_out(GLP_OFF);
      RunGlpk(&run);
      if (!run.failed && !run.cancelled_in_root_lp) {
        glp_error_hook(nullptr, nullptr);
        glp_term_hook(nullptr, nullptr);
        if (env == 0) {
          glp_free_env();
        } else {
          glp_term_out(previous_output);
        }
      }
    }
  }

  // GLPK's answer, checked by recomputing it (never trusting GLPK's own objective).
  bool glpk_feasible = false;
  if (!run.failed && (run.mip_status == GLP_OPT || run.mip_status == GLP_FEAS)) {
    std::vector<int32_t> assignment = AssignmentFromColumns(model, run.column_value);
    const long double objective = WorkObjective(problem, assignment);
    glpk_feasible = objective < kInfinity && WorkMemoryFeasible(problem, assignment);
    if (glpk_feasible && objective < best_objective) {
      best = std::move(assignment);
      best_objective = objective;
    }
  }
  result.nodes = run.nodes;
  const bool have = !best.empty();
  result.assignment = best;
  result.objective = best_objective;
  const long double bound = static_cast<long double>(std::max(run.root_bound, run.tree_bound));
  result.lower_bound = std::min(bound + model.offset, result.objective);
  if (run.failed) {
    result.status = IlpStatus::kError;
    result.message = "GLPK error: " + std::string(run.message, run.message_length);
    while (!result.message.empty() && result.message.back() == '\n') result.message.pop_back();
  } else if (run.lp_status == GLP_NOFEAS || (run.intopt_ret == 0 && run.mip_status == GLP_NOFEAS)) {
    // GLPK's infeasibility verdict is numerical; a checked incumbent outranks it.
    result.status = have ? IlpStatus::kFeasible : IlpStatus::kInfeasible;
    if (!have) result.lower_bound = kInfinity;
    result.message = have ? "GLPK reported infeasible, but the incumbent is feasible"
                          : "GLPK proved the ILP infeasible";
  } else if (run.proven_by_bound) {
    result.status = IlpStatus::kOptimal;  // the incumbent meets the root bound
    if (options.relative_gap <= 0) result.lower_bound = result.objective;
  } else if ((run.intopt_ret == 0 && run.mip_status == GLP_OPT) || run.intopt_ret == GLP_EMIPGAP) {
    if (glpk_feasible) {
      result.status = IlpStatus::kOptimal;
      if (run.intopt_ret == 0 && options.relative_gap <= 0) result.lower_bound = result.objective;
    } else {
      result.status = have ? IlpStatus::kFeasible : IlpStatus::kNoSolution;
      result.message = "GLPK's solution violates a constraint after rounding";
    }
  } else if (run.stopped || control.expired() || run.simplex_ret == GLP_ETMLIM ||
             run.intopt_ret == GLP_ETMLIM || run.intopt_ret == GLP_ESTOP) {
    result.status = have ? IlpStatus::kFeasible : IlpStatus::kNoSolution;
    if (control.cancelled()) {
      result.message = "cancelled";
    } else if (control.expired() || run.simplex_ret == GLP_ETMLIM || run.intopt_ret == GLP_ETMLIM) {
      result.message = "time limit reached";
    } else {
      result.message = "stopped by on_progress or the node limit";
    }
  } else {
    result.status = have ? IlpStatus::kFeasible : IlpStatus::kError;
    result.message = "GLPK failed: glp_simplex returned " + std::to_string(run.simplex_ret) +
                     ", glp_intopt returned " + std::to_string(run.intopt_ret);
  }
  if (run.progress_threw) result.message += " (on_progress threw an exception)";
  return result;
}

}  // namespace alpa
