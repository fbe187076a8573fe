#include "exec/comm/tcp_rendezvous.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/comm/collective_args.h"
#include "exec/comm/socket_frames.h"

namespace alpa {

namespace {

using Clock = std::chrono::steady_clock;

std::string ErrnoText(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

void CloseSocket(int* socket) {
  if (*socket >= 0) close(*socket);
  *socket = -1;
}

void SetNoDelay(int socket) {
  const int one = 1;
  setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// The listening socket of rank 0: every interface, IPv4 and IPv6 where the system allows.
Result<int> Listen(const RendezvousConfig& config) {
  const std::string where = "rendezvous " + config.spec.text + ": rank 0 cannot listen on port " +
                            std::to_string(config.spec.port) + ": ";
  int socket_fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = socket_fd >= 0;
  if (!v6) socket_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (socket_fd < 0) return IoError(where + ErrnoText("socket"));
  const int one = 1;
  setsockopt(socket_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int bound = -1;
  if (v6) {
    const int zero = 0;
    setsockopt(socket_fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(config.spec.port);
    bound = bind(socket_fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  } else {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(config.spec.port);
    bound = bind(socket_fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  }
  if (bound != 0 || listen(socket_fd, 128) != 0) {
    const Status error = IoError(where + ErrnoText(bound != 0 ? "bind" : "listen"));
    close(socket_fd);
    return error;
  }
  return socket_fd;
}

// One attempt at connecting to host:port; -1 with *error set when it fails.
int TryConnect(const RendezvousSpec& spec, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int resolved =
      getaddrinfo(spec.host.c_str(), std::to_string(spec.port).c_str(), &hints, &found);
  if (resolved != 0) {
    *error = "cannot resolve host \"" + spec.host + "\": " + gai_strerror(resolved);
    return -1;
  }
  int connected = -1;
  for (addrinfo* entry = found; entry != nullptr && connected < 0; entry = entry->ai_next) {
    const int socket_fd =
        socket(entry->ai_family, entry->ai_socktype | SOCK_CLOEXEC, entry->ai_protocol);
    if (socket_fd < 0) {
      *error = ErrnoText("socket");
      continue;
    }
    if (connect(socket_fd, entry->ai_addr, entry->ai_addrlen) == 0) {
      connected = socket_fd;
    } else {
      *error = ErrnoText("connect");
      close(socket_fd);
    }
  }
  freeaddrinfo(found);
  return connected;
}

class TcpRendezvous : public Rendezvous {
 public:
  // peers: rank 0 holds one socket per rank (its own slot is -1); the others hold rank 0's
  // socket only, in slot 0.
  TcpRendezvous(const RendezvousConfig& config, std::vector<int> peers)
      : config_(config), peers_(std::move(peers)), finished_(peers_.size(), false) {}

  ~TcpRendezvous() override {
    {
      std::lock_guard<std::mutex> lock(write_mutex_);
      Frame goodbye{FrameType::kGoodbye, config_.rank, ""};
      for (int peer : peers_) {
        if (peer >= 0) WriteFrame(peer, goodbye);
      }
    }
    if (watchdog_.joinable()) {
      const char stop = 's';
      while (write(wake_[1], &stop, 1) < 0 && errno == EINTR) {
      }
      watchdog_.join();
    }
    for (int& wake : wake_) CloseSocket(&wake);
    for (int& peer : peers_) CloseSocket(&peer);
  }

  int32_t rank() const override { return config_.rank; }
  int32_t size() const override { return config_.world_size; }
  const std::string& description() const override { return config_.spec.text; }

  Status ShareBlob(std::vector<uint8_t>* blob) override {
    if (blob_shared_)
      return InvalidArgument("rendezvous " + description() + ": ShareBlob called twice");
    blob_shared_ = true;
    ALPA_RETURN_IF_ERROR(config_.rank == 0 ? SendBlob(*blob) : ReceiveBlob(blob));
    return StartWatchdog();
  }

  void ReportFailure(const Status& cause) override {
    const std::string message = cause.message().empty() ? "aborted" : cause.message();
    {
      std::lock_guard<std::mutex> lock(failure_mutex_);
      if (reported_ || failure_claimed_) return;
      reported_ = true;
    }
    std::lock_guard<std::mutex> lock(write_mutex_);
    Frame failure{FrameType::kFailure, config_.rank, message};
    for (int peer : peers_) {
      if (peer >= 0) WriteFrame(peer, failure);
    }
  }

  Status PeerFailure() const override {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    return peer_failure_;
  }

 private:
  std::string Where() const {
    return "rendezvous " + description() + ": rank " + std::to_string(config_.rank);
  }

  Status SendBlob(const std::vector<uint8_t>& blob) {
    if (blob.empty()) return InvalidArgument(Where() + ": rank 0's blob is empty");
    const Frame frame{FrameType::kBlob, 0, std::string(blob.begin(), blob.end())};
    std::lock_guard<std::mutex> lock(write_mutex_);
    for (size_t peer = 1; peer < peers_.size(); ++peer) {
      const Status sent = WriteFrame(peers_[peer], frame);
      if (!sent.ok()) {
        return IoError(Where() + ": sending the blob to rank " + std::to_string(peer) +
                       " failed: " + sent.message());
      }
    }
    return Status::Ok();
  }

  Status ReceiveBlob(std::vector<uint8_t>* blob) {
    Frame frame;
    const Status read = ReadFrame(peers_[0], Clock::now() + config_.timeout, &frame);
    if (read.code() == StatusCode::kTimeout) {
      return Status(StatusCode::kTimeout, Where() + ": rank 0 did not send the blob within " +
                                              DescribeDuration(config_.timeout));
    }
    if (!read.ok()) {
      return IoError(Where() + ": waiting for the blob from rank 0: " + read.message());
    }
    if (frame.type == FrameType::kFailure)
      return AbortedStatus(frame.rank, InternalError(frame.payload));
    if (frame.type != FrameType::kBlob) {
      return ParseError(Where() + ": expected the blob from rank 0, got frame type " +
                        std::to_string(static_cast<uint32_t>(frame.type)));
    }
    blob->assign(frame.payload.begin(), frame.payload.end());
    return Status::Ok();
  }

  Status StartWatchdog() {
    if (pipe2(wake_, O_CLOEXEC) != 0) return IoError(Where() + ": " + ErrnoText("pipe2"));
    watchdog_ = std::thread([this] { Watch(); });
    return Status::Ok();
  }

  // The watchdog thread: waits on every peer connection and the wake pipe (the destructor).
  void Watch() {
    for (;;) {
      std::vector<pollfd> entries;
      std::vector<size_t> slots;
      entries.push_back(pollfd{wake_[0], POLLIN, 0});
      for (size_t slot = 0; slot < peers_.size(); ++slot) {
        if (peers_[slot] < 0 || finished_[slot]) continue;
        entries.push_back(pollfd{peers_[slot], POLLIN, 0});
        slots.push_back(slot);
      }
      if (poll(entries.data(), entries.size(), -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (entries[0].revents != 0) return;
      for (size_t i = 1; i < entries.size(); ++i) {
        if (entries[i].revents != 0) ReadFromPeer(slots[i - 1]);
      }
    }
  }

  // One frame (or the end) of the connection in `slot`: slot is the peer's rank on rank 0, and
  // rank 0 (slot 0) elsewhere.
  void ReadFromPeer(size_t slot) {
    const int32_t peer_rank = static_cast<int32_t>(slot);
    Frame frame;
    // The frame's first bytes are here: the rest follows at once from a live peer.
    const Status read = ReadFrame(peers_[slot], Clock::now() + std::chrono::seconds(5), &frame);
    if (!read.ok()) {
      finished_[slot] = true;
      RecordFailure(peer_rank, "its process ended or its connection to the rendezvous " +
                                   description() + " broke without a message (" + read.message() +
                                   ")");
      return;
    }
    if (frame.type == FrameType::kGoodbye) {
      finished_[slot] = true;
      return;
    }
    if (frame.type == FrameType::kFailure) {
      // From rank 0, the rank in the frame is the one that failed; to rank 0, it is the sender.
      RecordFailure(config_.rank == 0 ? peer_rank : frame.rank, frame.payload);
    }
  }

  // Keeps the first failure; rank 0 forwards it to every rank but the failed one. The failure
  // becomes visible to this process only after the forwarding: a rank 0 that ends as soon as it
  // sees the failure must not take the others' news with it.
  void RecordFailure(int32_t failed_rank, const std::string& message) {
    {
      std::lock_guard<std::mutex> lock(failure_mutex_);
      if (failure_claimed_) return;
      failure_claimed_ = true;
    }
    if (config_.rank == 0) {
      std::lock_guard<std::mutex> lock(write_mutex_);
      const Frame forward{FrameType::kFailure, failed_rank, message};
      for (size_t slot = 1; slot < peers_.size(); ++slot) {
        if (static_cast<int32_t>(slot) != failed_rank && !finished_[slot]) {
          WriteFrame(peers_[slot], forward);
        }
      }
    }
    std::lock_guard<std::mutex> lock(failure_mutex_);
    peer_failure_ = AbortedStatus(failed_rank, InternalError(message));
  }

  RendezvousConfig config_;
  std::vector<int> peers_;
  // Touched by the watchdog thread only, once it runs (and by the forwarding it does).
  std::vector<bool> finished_;
  bool blob_shared_ = false;
  int wake_[2] = {-1, -1};
  std::thread watchdog_;
  std::mutex write_mutex_;
  mutable std::mutex failure_mutex_;
  bool reported_ = false;
  bool failure_claimed_ = false;  // a peer's failure is being recorded (and forwarded)
  Status peer_failure_;
};

// Rank 0: accepts and checks the hello of every other rank until the deadline.
Result<std::vector<int>> AcceptEveryRank(const RendezvousConfig& config) {
  const std::string where = "rendezvous " + config.spec.text + ": rank 0";
  Result<int> listening = Listen(config);
  if (!listening.ok()) return listening.status();
  int listener = listening.value();
  std::vector<int> peers(static_cast<size_t>(config.world_size), -1);
  const auto deadline = Clock::now() + config.timeout;
  int32_t connected = 1;
  Status failure;
  while (connected < config.world_size && failure.ok()) {
    pollfd entry{listener, POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    const int ready = left > 0 ? poll(&entry, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      std::string missing;
      for (size_t rank = 1; rank < peers.size(); ++rank) {
        if (peers[rank] < 0) missing += (missing.empty() ? "" : ", ") + std::to_string(rank);
      }
      failure = Status(StatusCode::kTimeout, where + " waited " + DescribeDuration(config.timeout) +
                                                 "; ranks {" + missing + "} did not connect");
      break;
    }
    int peer = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (peer < 0) continue;
    Frame hello;
    const Status read = ReadFrame(peer, deadline, &hello);
    const std::string expected_size = std::to_string(config.world_size);
    if (!read.ok() || hello.type != FrameType::kHello) {
      // Something else knocking on the port: not one of ours; ignore it.
      close(peer);
      continue;
    }
    if (hello.rank < 1 || hello.rank >= config.world_size) {
      failure =
          InvalidArgument(where + ": a process connected as rank " + std::to_string(hello.rank) +
                          ", not a rank in [1, " + expected_size + ")");
    } else if (hello.payload != expected_size) {
      failure =
          InvalidArgument(where + ": rank " + std::to_string(hello.rank) + " expects a world of " +
                          hello.payload + " ranks, rank 0 one of " + expected_size);
    } else if (peers[static_cast<size_t>(hello.rank)] >= 0) {
      failure = InvalidArgument(where + ": two processes connected as rank " +
                                std::to_string(hello.rank));
    } else {
      SetNoDelay(peer);
      peers[static_cast<size_t>(hello.rank)] = peer;
      ++connected;
      continue;
    }
    WriteFrame(peer, Frame{FrameType::kFailure, 0, failure.message()});
    close(peer);
  }
  close(listener);
  if (!failure.ok()) {
    // The ranks already connected end now rather than at their deadline.
    for (int& peer : peers) {
      if (peer >= 0) WriteFrame(peer, Frame{FrameType::kFailure, 0, failure.message()});
      CloseSocket(&peer);
    }
    return failure;
  }
  return peers;
}

// Ranks 1..N-1: connect to rank 0, retrying until the deadline, and introduce this rank.
Result<std::vector<int>> ConnectToRankZero(const RendezvousConfig& config) {
  const auto deadline = Clock::now() + config.timeout;
  std::string error;
  int socket_fd = -1;
  for (;;) {
    socket_fd = TryConnect(config.spec, &error);
    if (socket_fd >= 0 || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string where =
      "rendezvous " + config.spec.text + ": rank " + std::to_string(config.rank);
  if (socket_fd < 0) {
    return Status(StatusCode::kTimeout,
                  where + " could not connect to rank 0 at " + config.spec.host + ":" +
                      std::to_string(config.spec.port) + " within " +
                      DescribeDuration(config.timeout) + " (last error: " + error + ")");
  }
  SetNoDelay(socket_fd);
  const Status sent = WriteFrame(
      socket_fd, Frame{FrameType::kHello, config.rank, std::to_string(config.world_size)});
  if (!sent.ok()) {
    close(socket_fd);
    return IoError(where + ": introducing itself to rank 0 failed: " + sent.message());
  }
  return std::vector<int>{socket_fd};
}

}  // namespace

Result<std::unique_ptr<Rendezvous>> ConnectTcpRendezvous(const RendezvousConfig& config) {
  Result<std::vector<int>> peers =
      config.rank == 0 ? AcceptEveryRank(config) : ConnectToRankZero(config);
  if (!peers.ok()) return peers.status();
  return std::unique_ptr<Rendezvous>(std::make_unique<TcpRendezvous>(config, peers.value()));
}

}  // namespace alpa
