#include "input_limit.h"

#include "cli_output.h"

namespace alpa_cli {

void AddInputLimitOption(CLI::App* command, InputLimit* limit) {
  const CLI::Validator byte_count(
      [](std::string& text) {
        int64_t bytes = 0;
        if (ParseBytes(text, &bytes) && bytes >= 1) return std::string();
        return "\"" + text + "\" is not a byte count >= 1 such as 1e9, 4GB or 4GiB";
      },
      "BYTES");
  command
      ->add_option_function<std::string>(
          "--max-input-bytes",
          [limit](const std::string& text) { ParseBytes(text, &limit->bytes); },
          "Largest input a file may hold once decoded (default 1GiB; e.g. 4GiB)")
      ->check(byte_count);
}

int MakeReadOptions(const InputLimit& limit, alpa_solve_options** out) {
  alpa_error* err = nullptr;
  if (alpa_solve_options_create(out, &err) != ALPA_OK) return ReportError(err);
  if (alpa_solve_options_set_int(*out, ALPA_OPT_MAX_INPUT_BYTES, limit.bytes, &err) != ALPA_OK) {
    alpa_solve_options_destroy(*out);
    *out = nullptr;
    return ReportError(err, "--max-input-bytes");
  }
  return 0;
}

int32_t ReadGraphFile(const std::string& path, const InputLimit& limit, alpa_graph** out,
                      alpa_error** err) {
  alpa_solve_options* options = nullptr;
  int32_t status = alpa_solve_options_create(&options, err);
  if (status == ALPA_OK) {
    status = alpa_solve_options_set_int(options, ALPA_OPT_MAX_INPUT_BYTES, limit.bytes, err);
  }
  if (status == ALPA_OK)
    status = alpa_graph_read_file_with_options(out, path.c_str(), options, err);
  alpa_solve_options_destroy(options);
  return status;
}

std::string InputLimitMessage(int64_t max_bytes) {
  return "input exceeds the limit of " + std::to_string(max_bytes) +
         " bytes; raise it with --max-input-bytes";
}

}  // namespace alpa_cli
