// A build without MPI (ALPA_WITH_MPI=OFF) says so, and how to get it, instead of failing later.
// Built with MPI, the MPI checks run under mpirun instead (mpi_communicator_test in ctest).
#include <gtest/gtest.h>

#include "exec/comm/mpi_communicator.h"

namespace alpa {
namespace {

TEST(MpiCommunicator, WithoutMpiCreatingOneSaysHowToBuildIt) {
  if (MpiAvailable()) GTEST_SKIP() << "built with MPI: mpi_communicator_test covers it";
  Result<std::unique_ptr<Communicator>> created = CreateMpiCommunicator();
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(created.status().message(), "built without MPI: reconfigure with -DALPA_WITH_MPI=ON");
  EXPECT_TRUE(FinalizeMpi().ok());
}

}  // namespace
}  // namespace alpa
