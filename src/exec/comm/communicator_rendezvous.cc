#include "exec/comm/communicator_rendezvous.h"

#include <numeric>
#include <string>
#include <vector>

namespace alpa {

namespace {

constexpr size_t kBytesPerValue = 4;

class CommunicatorRendezvous : public Rendezvous {
 public:
  CommunicatorRendezvous(std::unique_ptr<Communicator> communicator, std::string description)
      : communicator_(std::move(communicator)), description_(std::move(description)) {
    world_.resize(static_cast<size_t>(communicator_->size()));
    std::iota(world_.begin(), world_.end(), 0);
  }

  int32_t rank() const override { return communicator_->rank(); }
  int32_t size() const override { return communicator_->size(); }
  const std::string& description() const override { return description_; }

  Status ShareBlob(std::vector<uint8_t>* blob) override {
    const bool sender = rank() == 0;
    if (sender && blob->empty()) {
      return InvalidArgument("rendezvous " + description_ + ": rank 0's blob is empty");
    }
    // First the length (every rank contributes one value; rank 0's counts), then the bytes.
    const double length = sender ? static_cast<double>(blob->size()) : 0.0;
    std::vector<double> lengths(world_.size());
    ALPA_RETURN_IF_ERROR(communicator_->AllGather(world_, &length, 1, lengths.data()));
    const size_t bytes = static_cast<size_t>(lengths[0]);
    const size_t values = (bytes + kBytesPerValue - 1) / kBytesPerValue;
    std::vector<double> packed(values, 0.0);
    if (sender) {
      for (size_t i = 0; i < bytes; ++i) {
        const uint32_t byte = (*blob)[i];
        packed[i / kBytesPerValue] += static_cast<double>(byte << (8 * (i % kBytesPerValue)));
      }
    }
    std::vector<double> gathered(values * world_.size());
    ALPA_RETURN_IF_ERROR(communicator_->AllGather(world_, packed.data(),
                                                  static_cast<int64_t>(values), gathered.data()));
    blob->resize(bytes);
    for (size_t i = 0; i < bytes; ++i) {
      const uint32_t word = static_cast<uint32_t>(gathered[i / kBytesPerValue]);
      (*blob)[i] = static_cast<uint8_t>(word >> (8 * (i % kBytesPerValue)));
    }
    return Status::Ok();
  }

  void ReportFailure(const Status& cause) override { communicator_->Abort(cause); }

  Status PeerFailure() const override { return Status::Ok(); }

 private:
  std::unique_ptr<Communicator> communicator_;
  std::string description_;
  DeviceGroup world_;
};

}  // namespace

std::unique_ptr<Rendezvous> RendezvousOverCommunicator(std::unique_ptr<Communicator> communicator,
                                                       std::string description) {
  return std::make_unique<CommunicatorRendezvous>(std::move(communicator), std::move(description));
}

}  // namespace alpa
