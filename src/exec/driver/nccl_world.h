// The world of an executor whose devices run one per process over NCCL (ALPA_DEVICES_NCCL):
// the processes meet through the rendezvous the environment names (ALPA_RENDEZVOUS with
// ALPA_RANK and ALPA_WORLD_SIZE, or MPI under mpirun: exec/comm/rendezvous.h), each on its GPU
// (rank modulo the GPUs it sees), and every group the programs' collectives run over is split
// off from the world in the same order on every rank (NcclCommunicator::Prepare).
#pragma once

#include <memory>
#include <vector>

#include "core/util/status.h"
#include "exec/comm/communicator.h"
#include "exec/cuda/nccl_communicator.h"
#include "exec/program/program.h"

namespace alpa {

// Connects the rendezvous of the environment and creates this rank's NCCL communicator.
// kUnsupported in a build without CUDA or where NCCL or a GPU cannot be used (the reason
// named); the rendezvous' errors otherwise (a missing ALPA_RANK, a deadline).
Result<std::unique_ptr<NcclCommunicator>> CreateNcclWorld();

// The groups of every collective of `programs` that NCCL needs a communicator of its own for:
// groups of 2 or more ranks other than the whole world in rank order, each once, in the order of
// their first collective (programs by device, instructions in order): the same list on every
// rank, which lowers the same programs.
std::vector<DeviceGroup> CollectiveGroups(const ProgramSet& programs, int32_t world_size);

}  // namespace alpa
