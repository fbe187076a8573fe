#include "exec/comm/file_rendezvous.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "exec/comm/collective_args.h"

namespace alpa {

namespace {

using Clock = std::chrono::steady_clock;

// The first line of the file; the blob's bytes follow it.
std::string HeaderLine(int32_t world_size, size_t bytes) {
  return "alpa-rendezvous world_size=" + std::to_string(world_size) +
         " bytes=" + std::to_string(bytes) + "\n";
}

bool Exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

bool ReadWhole(const std::string& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  contents->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

// Writes `contents` to a temporary file beside `path`, then moves it to `path`: with
// `exclusive`, by link() (fails when path exists: the first writer wins), else by rename().
Status WriteAtomically(const std::string& path, const std::string& contents, bool exclusive) {
  const std::string temporary =
      path + ".tmp." + std::to_string(getpid()) + "." +
      std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (!out.flush()) return IoError("cannot write " + temporary + ": " + std::strerror(errno));
  }
  const int moved = exclusive ? link(temporary.c_str(), path.c_str())
                              : std::rename(temporary.c_str(), path.c_str());
  const int error = errno;
  if (exclusive || moved != 0) std::remove(temporary.c_str());
  if (moved != 0) {
    return Status(error == EEXIST ? StatusCode::kCancelled : StatusCode::kIo,
                  "cannot create " + path + ": " + std::strerror(error));
  }
  return Status::Ok();
}

class FileRendezvous : public Rendezvous {
 public:
  explicit FileRendezvous(const RendezvousConfig& config)
      : config_(config), failure_path_(config.spec.path + ".failed") {}

  int32_t rank() const override { return config_.rank; }
  int32_t size() const override { return config_.world_size; }
  const std::string& description() const override { return config_.spec.text; }

  Status ShareBlob(std::vector<uint8_t>* blob) override {
    if (config_.rank == 0) {
      if (blob->empty()) return InvalidArgument(Where() + ": rank 0's blob is empty");
      const std::string contents =
          HeaderLine(config_.world_size, blob->size()) + std::string(blob->begin(), blob->end());
      const Status written = WriteAtomically(config_.spec.path, contents, false);
      if (!written.ok()) return IoError(Where() + ": " + written.message());
      return Status::Ok();
    }
    return AwaitBlob(blob);
  }

  void ReportFailure(const Status& cause) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (reported_) return;
    reported_ = true;
    const std::string message = cause.message().empty() ? "aborted" : cause.message();
    // Fails when another rank's failure is there first: that one wins.
    WriteAtomically(failure_path_, std::to_string(config_.rank) + "\n" + message, true);
  }

  Status PeerFailure() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!peer_failure_.ok() || !Exists(failure_path_)) return peer_failure_;
    std::string contents;
    if (!ReadWhole(failure_path_, &contents)) return peer_failure_;
    const size_t newline = contents.find('\n');
    if (newline == std::string::npos) return peer_failure_;
    const int32_t failed = static_cast<int32_t>(std::atoi(contents.substr(0, newline).c_str()));
    if (failed == config_.rank) return peer_failure_;
    peer_failure_ = AbortedStatus(failed, InternalError(contents.substr(newline + 1)));
    return peer_failure_;
  }

 private:
  std::string Where() const {
    return "rendezvous " + description() + ": rank " + std::to_string(config_.rank);
  }

  Status AwaitBlob(std::vector<uint8_t>* blob) {
    const auto deadline = Clock::now() + config_.timeout;
    std::string contents;
    for (;;) {
      // rename() makes the file appear whole, so a file that is there is complete.
      if (ReadWhole(config_.spec.path, &contents)) break;
      const Status failure = PeerFailure();
      if (!failure.ok()) return failure;
      if (Clock::now() >= deadline) {
        return Status(StatusCode::kTimeout,
                      Where() + " waited " + DescribeDuration(config_.timeout) +
                          " for rank 0 to write " + config_.spec.path + ": it did not appear");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const size_t newline = contents.find('\n');
    if (newline == std::string::npos) {
      return ParseError(Where() + ": " + config_.spec.path + " is not a rendezvous file");
    }
    const std::string blob_bytes = contents.substr(newline + 1);
    const std::string expected = HeaderLine(config_.world_size, blob_bytes.size());
    if (contents.compare(0, newline + 1, expected) != 0) {
      return InvalidArgument(Where() + ": " + config_.spec.path + " says \"" +
                             contents.substr(0, newline) + "\", this rank expects \"" +
                             expected.substr(0, expected.size() - 1) +
                             "\" (another run's file, or a different world size)");
    }
    blob->assign(blob_bytes.begin(), blob_bytes.end());
    return Status::Ok();
  }

  RendezvousConfig config_;
  std::string failure_path_;
  mutable std::mutex mutex_;
  bool reported_ = false;
  mutable Status peer_failure_;
};

}  // namespace

Result<std::unique_ptr<Rendezvous>> ConnectFileRendezvous(const RendezvousConfig& config) {
  if (config.rank == 0) {
    for (const std::string& path : {config.spec.path, config.spec.path + ".failed"}) {
      if (Exists(path)) {
        return InvalidArgument("rendezvous " + config.spec.text + ": rank 0: " + path +
                               " already exists (another run's?): remove it or use a fresh path");
      }
    }
  }
  return std::unique_ptr<Rendezvous>(std::make_unique<FileRendezvous>(config));
}

}  // namespace alpa
