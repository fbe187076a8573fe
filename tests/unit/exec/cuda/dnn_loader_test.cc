// The cuDNN loader: what it says when the library or a symbol is missing (no GPU needed), and,
// where a cuDNN 9 is installed, that it finds every function and reuses the copy already in the
// process. Built with ALPA_WITH_CUDA only (it needs cudnn.h).
#include "exec/cuda/dnn_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace alpa {
namespace cuda {
namespace {

using ::testing::HasSubstr;

constexpr const char* kMissingLibrary = "/nonexistent/alpa-test/libcudnn.so.9";

TEST(OpenDnn, AMissingLibraryIsNamedWithWhatToInstall) {
  Result<DnnApi> opened = OpenDnn(kMissingLibrary);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(opened.status().message(), HasSubstr("cuDNN convolutions need cuDNN: cannot load"));
  EXPECT_THAT(opened.status().message(), HasSubstr(std::string("'") + kMissingLibrary + "'"));
  EXPECT_THAT(opened.status().message(), HasSubstr("install cuDNN 9"));
  EXPECT_THAT(opened.status().message(), HasSubstr("ALPA_CUDNN_LIBRARY"));
}

TEST(OpenDnn, ALibraryWithoutCudnnNamesTheMissingSymbol) {
  // zlib: loaded in every test process (libalpa links it), and without any cuDNN function.
  Result<DnnApi> opened = OpenDnn("libz.so.1");
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(opened.status().message(), HasSubstr("libz.so.1"));
  EXPECT_THAT(opened.status().message(), HasSubstr("has no symbol cudnnGetVersion"));
}

TEST(OpenDnn, AnInstalledCudnnHasEveryFunctionAndVersion9) {
  Result<DnnApi> opened = OpenDnn(kDnnLibraryName);
  if (!opened.ok()) GTEST_SKIP() << "no cuDNN 9 here: " << opened.status().message();
  const DnnApi& dnn = opened.value();
  EXPECT_GE(dnn.version, kMinimumDnnVersion);
  EXPECT_LT(dnn.version, kFirstUnsupportedDnnVersion);
  EXPECT_FALSE(dnn.path.empty());
  for (const void* function :
       {reinterpret_cast<const void*>(dnn.GetErrorString),
        reinterpret_cast<const void*>(dnn.GetLastErrorString),
        reinterpret_cast<const void*>(dnn.Create), reinterpret_cast<const void*>(dnn.Destroy),
        reinterpret_cast<const void*>(dnn.SetStream),
        reinterpret_cast<const void*>(dnn.BackendCreateDescriptor),
        reinterpret_cast<const void*>(dnn.BackendDestroyDescriptor),
        reinterpret_cast<const void*>(dnn.BackendSetAttribute),
        reinterpret_cast<const void*>(dnn.BackendGetAttribute),
        reinterpret_cast<const void*>(dnn.BackendFinalize),
        reinterpret_cast<const void*>(dnn.BackendExecute)}) {
    EXPECT_NE(function, nullptr);
  }
  EXPECT_EQ(dnn.GetVersion(), dnn.version);
  EXPECT_STRNE(dnn.GetErrorString(CUDNN_STATUS_NOT_SUPPORTED), "");
  // The first open stays: the next finds it in the process, by its soname and by its path.
  for (const std::string& library : {std::string(kDnnLibraryName), dnn.path}) {
    Result<DnnApi> again = OpenDnn(library);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_TRUE(again.value().reused) << library;
    EXPECT_EQ(again.value().path, dnn.path) << library;
    EXPECT_EQ(again.value().BackendExecute, dnn.BackendExecute) << library;
  }
}

// The one test of this program that calls LoadDnn, whose answer is fixed for the process.
TEST(LoadDnn, TheLibraryNamedByTheEnvironmentIsOpenedOnceAndNamedInItsError) {
  ASSERT_EQ(setenv("ALPA_CUDNN_LIBRARY", kMissingLibrary, 1), 0);
  Result<const DnnApi*> loaded = LoadDnn();
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(loaded.status().message(), HasSubstr(kMissingLibrary));
  ASSERT_EQ(setenv("ALPA_CUDNN_LIBRARY", kDnnLibraryName, 1), 0);
  Result<const DnnApi*> again = LoadDnn();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(), loaded.status().message());
  unsetenv("ALPA_CUDNN_LIBRARY");
}

}  // namespace
}  // namespace cuda
}  // namespace alpa
