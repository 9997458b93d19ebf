// The written pickle must load with Python's own pickle module and, for the anchors, give exactly
// the objects PyTorch wrote. Skipped where python3 is missing.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "memtrail/snapshot/torch_pickle.hpp"
#include "sample_snapshot.hpp"
#include "test_paths.hpp"

namespace ms = memtrail::snapshot;
namespace fs = std::filesystem;
using ms::test::anchor;

namespace {

bool have_python() {
    return std::system("python3 -c 'import pickle' >/dev/null 2>&1") == 0;
}

int run_python(const std::string& script, const fs::path& a, const fs::path& b) {
    const std::string command =
        "python3 -c \"" + script + "\" '" + a.string() + "' '" + b.string() + "'";
    return std::system(command.c_str());
}

fs::path temporary_path(const char* name) {
    return fs::temp_directory_path() /
           (std::string("memtrail_python_test_") + std::to_string(::getpid()) + "_" + name);
}

}  // namespace

TEST(TorchPicklePython, AnchorsLoadEqualToPyTorchsOwn) {
    if (!have_python()) {
        GTEST_SKIP() << "python3 not found";
    }
    for (const char* name : {"streams__default.pickle", "transformer__default.pickle"}) {
        const auto written = temporary_path(name);
        ms::write_torch_pickle(ms::read_torch_pickle(anchor(name)), written);
        const int rc = run_python(
            "import pickle, sys; "
            "a = pickle.load(open(sys.argv[1], 'rb')); "
            "b = pickle.load(open(sys.argv[2], 'rb')); "
            "sys.exit(0 if a == b else 1)",
            anchor(name), written);
        EXPECT_EQ(rc, 0) << name << ": python3 sees a difference or fails to load " << written;
        fs::remove(written);
    }
}

// memtrail's own sample, written as a pickle, loads in Python with the expected shape.
TEST(TorchPicklePython, SampleLoadsInPython) {
    if (!have_python()) {
        GTEST_SKIP() << "python3 not found";
    }
    const auto written = temporary_path("sample.pickle");
    ms::write_torch_pickle(ms::test::make_sample_snapshot(), written);
    const int rc = run_python(
        "import pickle, sys; "
        "s = pickle.load(open(sys.argv[1], 'rb')); "
        "t = s['device_traces']; "
        "ok = len(t) == 2 and len(t[0]) == 11 and len(t[1]) == 4 "
        "and t[0][5]['action'] == 'oom' and t[0][5]['device_free'] == 123456789 "
        "and t[0][1]['frames'][0]['line'] == 1234 "
        "and s['segments'][1]['segment_pool_id'] == (1, 2**64 - 1) "
        "and s['segments'][1]['address'] == 2**64 - 2**20 "
        "and s['allocator_settings']['garbage_collection_threshold'] == 0.6 "
        "and s['allocator_settings']['roundup_power2_divisions']['8'] == 4 "
        "and s['allocator_settings']['release_lock_on_cudamalloc'] is False "
        "and s['external_annotations'][0]['stage'] == 'START'; "
        "sys.exit(0 if ok else 1)",
        written, written);
    EXPECT_EQ(rc, 0) << written;
    fs::remove(written);
}

TEST(TorchPicklePython, InvalidUtf8StringsStillLoad) {
    if (!have_python()) {
        GTEST_SKIP() << "python3 not found";
    }
    ms::snapshot s;
    s.settings.conf = "max_split_size_mb:\xff";
    const auto written = temporary_path("utf8.pickle");
    ms::write_torch_pickle(s, written);
    const int rc = run_python(
        "import pickle, sys; "
        "s = pickle.load(open(sys.argv[1], 'rb')); "
        "sys.exit(0 if s['allocator_settings']['PYTORCH_CUDA_ALLOC_CONF'] == "
        "'max_split_size_mb:\\ufffd' else 1)",
        written, written);
    EXPECT_EQ(rc, 0);
    fs::remove(written);
}
