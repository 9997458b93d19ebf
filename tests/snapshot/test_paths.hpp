#pragma once
// Where the tests find their inputs; the CMakeLists passes both folders as definitions.

#include <filesystem>

namespace memtrail::snapshot::test {

inline std::filesystem::path anchor(const char* name) {
    return std::filesystem::path(MEMTRAIL_SHARED_DIR) / "anchors" / "pytorch" / name;
}

inline std::filesystem::path test_data(const char* name) {
    return std::filesystem::path(MEMTRAIL_TEST_DATA) / "snapshot" / name;
}

}  // namespace memtrail::snapshot::test
