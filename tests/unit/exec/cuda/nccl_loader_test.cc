// The NCCL loader: what it says when the library or a symbol is missing (no GPU needed), and,
// where an NCCL is installed, that it finds every function and a supported version and reuses
// the copy already in the process. Built with ALPA_WITH_CUDA only (it needs nccl.h).
#include "exec/cuda/nccl_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace alpa {
namespace cuda {
namespace {

using ::testing::HasSubstr;

constexpr const char* kMissingLibrary = "/nonexistent/alpa-test/libnccl.so.2";

TEST(OpenNccl, AMissingLibraryIsNamedWithWhatToInstall) {
  Result<NcclApi> opened = OpenNccl(kMissingLibrary);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(opened.status().message(), HasSubstr(std::string("'") + kMissingLibrary + "'"));
  EXPECT_THAT(opened.status().message(), HasSubstr("install NCCL 2.18 or newer"));
  EXPECT_THAT(opened.status().message(), HasSubstr("ALPA_NCCL_LIBRARY"));
}

TEST(OpenNccl, ALibraryWithoutNcclNamesTheMissingSymbol) {
  // zlib: loaded in every test process (libalpa links it), and without any NCCL function.
  Result<NcclApi> opened = OpenNccl("libz.so.1");
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(opened.status().message(), HasSubstr("libz.so.1"));
  EXPECT_THAT(opened.status().message(), HasSubstr("has no symbol ncclGetVersion"));
}

TEST(OpenNccl, AnInstalledNcclHasEveryFunctionAndASupportedVersion) {
  Result<NcclApi> opened = OpenNccl(kNcclLibraryName);
  if (!opened.ok()) GTEST_SKIP() << "no NCCL here: " << opened.status().message();
  const NcclApi& nccl = opened.value();
  EXPECT_GE(nccl.version, kMinimumNcclVersion);
  EXPECT_LT(nccl.version, kFirstUnsupportedNcclVersion);
  EXPECT_FALSE(nccl.path.empty());
  for (const void* function :
       {reinterpret_cast<const void*>(nccl.GetErrorString),
        reinterpret_cast<const void*>(nccl.GetLastError),
        reinterpret_cast<const void*>(nccl.GetUniqueId),
        reinterpret_cast<const void*>(nccl.CommInitRankConfig),
        reinterpret_cast<const void*>(nccl.CommSplit),
        reinterpret_cast<const void*>(nccl.CommFinalize),
        reinterpret_cast<const void*>(nccl.CommDestroy),
        reinterpret_cast<const void*>(nccl.CommAbort),
        reinterpret_cast<const void*>(nccl.CommGetAsyncError),
        reinterpret_cast<const void*>(nccl.AllReduce),
        reinterpret_cast<const void*>(nccl.ReduceScatter),
        reinterpret_cast<const void*>(nccl.AllGather), reinterpret_cast<const void*>(nccl.Send),
        reinterpret_cast<const void*>(nccl.Recv), reinterpret_cast<const void*>(nccl.GroupStart),
        reinterpret_cast<const void*>(nccl.GroupEnd)}) {
    EXPECT_NE(function, nullptr);
  }
  int version = 0;
  ASSERT_EQ(nccl.GetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, nccl.version);
  EXPECT_STRNE(nccl.GetErrorString(ncclInvalidArgument), "");

  // The first open stays (the library is never closed): the next finds it in the process, by
  // its soname and by its path.
  for (const std::string& library : {std::string(kNcclLibraryName), nccl.path}) {
    Result<NcclApi> again = OpenNccl(library);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_TRUE(again.value().reused) << library;
    EXPECT_EQ(again.value().path, nccl.path) << library;
    EXPECT_EQ(again.value().AllReduce, nccl.AllReduce) << library;
  }
}

// The one test of this program that calls LoadNccl, whose answer is fixed for the process.
TEST(LoadNccl, TheLibraryNamedByTheEnvironmentIsOpenedOnceAndNamedInItsError) {
  ASSERT_EQ(setenv("ALPA_NCCL_LIBRARY", kMissingLibrary, 1), 0);
  Result<const NcclApi*> loaded = LoadNccl();
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(loaded.status().message(), HasSubstr(kMissingLibrary));
  // Kept: another library named now changes nothing.
  ASSERT_EQ(setenv("ALPA_NCCL_LIBRARY", kNcclLibraryName, 1), 0);
  Result<const NcclApi*> again = LoadNccl();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(), loaded.status().message());
  unsetenv("ALPA_NCCL_LIBRARY");
}

TEST(NcclVersionText, ReadsBothVersionCodeLayouts) {
  EXPECT_EQ(NcclVersionText(21803), "2.18.3");
  EXPECT_EQ(NcclVersionText(23007), "2.30.7");
  EXPECT_EQ(NcclVersionText(2804), "2.8.4");
}

}  // namespace
}  // namespace cuda
}  // namespace alpa
