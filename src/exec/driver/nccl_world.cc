// CreateNcclWorld and CollectiveGroups (nccl_world.h).
#include "exec/driver/nccl_world.h"

#include <set>
#include <utility>

#include "exec/comm/rendezvous.h"

namespace alpa {

Result<std::unique_ptr<NcclCommunicator>> CreateNcclWorld() {
  Result<RendezvousConfig> config = RendezvousConfigFromEnvironment();
  if (!config.ok()) return config.status();
  Result<std::unique_ptr<Rendezvous>> rendezvous = ConnectRendezvous(config.value());
  if (!rendezvous.ok()) return rendezvous.status();
  return CreateNcclCommunicator(std::move(rendezvous).value(), NcclCommunicatorOptions{});
}

std::vector<DeviceGroup> CollectiveGroups(const ProgramSet& programs, int32_t world_size) {
  DeviceGroup world;
  for (int32_t r = 0; r < world_size; ++r) world.push_back(r);
  std::vector<DeviceGroup> groups;
  std::set<DeviceGroup> seen;
  for (const DeviceProgram& p : programs.programs) {
    for (const Instruction& in : p.code) {
      if (!CollectiveKindOf(in.kind).has_value() || in.group.size() < 2 || in.group == world) {
        continue;
      }
      if (seen.insert(in.group).second) groups.push_back(in.group);
    }
  }
  return groups;
}

}  // namespace alpa
