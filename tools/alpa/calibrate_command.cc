// `alpa calibrate`: measures the GPU (alpa_calibrate), prints the raw measurements as a table
// and writes the calibration file the planner reads (docs/cluster-format.md).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "alpa_experimental.h"
#include "cli_output.h"
#include "commands.h"

namespace alpa_cli {
namespace {

constexpr int kDigits = 4;

struct CalibrateArgs {
  std::string out;     // the calibration file; empty: printed after the table
  std::string preset;  // the preset whose peaks the efficiencies are against; empty: detected
  bool quick = false;
  bool json = false;  // print alpa_calibrate's whole object instead of the table
};

// "640.2 TFLOP/s", "2.95 TB/s", "2.41 us/launch".
std::string Rate(const nlohmann::json& m) {
  static const char* const kUnits[] = {"", "K", "M", "G", "T", "P", nullptr};
  const std::string kind = m["kind"].get<std::string>();
  const double rate = m["rate"].get<double>();
  if (kind == "launch") return Seconds(1.0 / rate, 3) + "/launch";
  const std::string scaled = ScaledNumber(rate, kUnits, 1000, 2);
  return scaled + (kind == "memory" || kind == "fused_memory" ? "B/s" : "FLOP/s");
}

void PrintTable(const nlohmann::json& answer) {
  std::printf("alpa calibrate on %s (%d GPU%s visible; %s)\n",
              answer["device"].get<std::string>().c_str(), answer["gpus"].get<int>(),
              answer["gpus"].get<int>() == 1 ? "" : "s",
              answer["libraries"].get<std::string>().c_str());
  std::printf("fractions are of the peaks of preset %s; * = part of the fit\n\n",
              answer["preset"].get<std::string>().c_str());
  std::printf("%-12s %-64s %12s %18s %8s %s\n", "kind", "measurement (median)", "time", "rate",
              "of peak", "fit");
  for (const nlohmann::json& m : answer["measurements"]) {
    const nlohmann::json& fraction = m["fraction_of_peak"];
    const std::string of_peak = fraction.is_null() ? "-" : FormatNumber(fraction.get<double>(), 3);
    std::printf("%-12s %-64s %12s %18s %8s %s\n", m["kind"].get<std::string>().c_str(),
                m["name"].get<std::string>().c_str(),
                Seconds(m["seconds"].get<double>(), 3).c_str(), Rate(m).c_str(), of_peak.c_str(),
                m["fit"].get<bool>() ? "*" : "");
  }
  const nlohmann::json& c = answer["calibration"];
  const nlohmann::json& e = c["efficiency"];
  std::printf(
      "\ncalibration: matmul %s  memory %s  elementwise %s  other %s  convolution %s  "
      "op_overhead %s\n",
      FormatNumber(e["matmul"].get<double>(), kDigits).c_str(),
      FormatNumber(e["memory"].get<double>(), kDigits).c_str(),
      FormatNumber(e["elementwise"].get<double>(), kDigits).c_str(),
      FormatNumber(e["other"].get<double>(), kDigits).c_str(),
      FormatNumber(e["convolution"].get<double>(), kDigits).c_str(),
      Seconds(c["op_overhead_seconds"].get<double>(), 3).c_str());
  if (e.contains("attention")) {
    std::printf("attention kernels: %s of peak on the products of an attention core\n",
                FormatNumber(e["attention"].get<double>(), kDigits).c_str());
  }
  const bool fused = c.value("fuse_elementwise", false);
  std::printf("fusion: %s%s\n",
              !fused ? "none (every op priced as its own kernel)"
              : c.value("single_reader_fusion", false)
                  ? "chains fused as the CUDA runner fuses them"
                  : "chains fused as XLA fuses them",
              c.value("fuse_attention", false) ? "; attention cores fused" : "");
  for (const nlohmann::json& note : answer["notes"]) {
    std::printf("note: %s\n", note.get<std::string>().c_str());
  }
}

int RunCalibrate(const CalibrateArgs& args) {
  alpa_buffer* buffer = nullptr;
  alpa_error* err = nullptr;
  if (alpa_calibrate(&buffer, args.preset.empty() ? nullptr : args.preset.c_str(),
                     args.quick ? 1 : 0, &err) != ALPA_OK) {
    return ReportError(err);
  }
  const nlohmann::json answer = nlohmann::json::parse(alpa_buffer_data(buffer));
  alpa_buffer_free(buffer);
  const std::string file = answer["calibration"].dump(2) + "\n";
  if (!args.out.empty() && !WriteFile(args.out, file.data(), file.size())) {
    return ReportBadInput("--out: cannot write " + args.out);
  }
  if (args.json) {
    std::printf("%s\n", answer.dump(2).c_str());
    return 0;
  }
  PrintTable(answer);
  if (args.out.empty()) {
    std::printf("\n%s", file.c_str());
  } else {
    std::printf("wrote %s\n", args.out.c_str());
  }
  return 0;
}

}  // namespace

Command AddCalibrateCommand(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* calibrate = app.add_subcommand(
      "calibrate",
      "Measure the GPU (GEMMs, HBM, elementwise kernels, launches) and write the cost model's "
      "calibration file (needs a GPU and a CUDA build)");
  calibrate->add_option("--out,-o", args->out,
                        "Write the calibration file here (default: print it after the table)");
  calibrate->add_flag("--quick", args->quick, "Fewer shapes and repeats (under 10 s on an H100)");
  calibrate->add_option("--preset", args->preset,
                        "Cluster preset whose peaks the efficiencies are against (default: the "
                        "one matching the GPU's name)");
  calibrate->add_flag("--json", args->json,
                      "Print alpa_calibrate's object (measurements, calibration, notes)");
  return {calibrate, [args] { return RunCalibrate(*args); }};
}

}  // namespace alpa_cli
