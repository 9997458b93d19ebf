#pragma once
// Names for parameterized tests made of what the parameter means: gtest takes only letters,
// digits and underscores, and ctest lists the names where an index or the parameter's raw bytes
// would tell a reader nothing.

#include <cctype>
#include <string>
#include <string_view>

namespace memtrail::testing {

// The text's letters and digits, each run of other characters one underscore, none at either
// end: "roundup_power2_divisions:[1:2,>:8]" -> "roundup_power2_divisions_1_2_8".
inline std::string test_name_part(std::string_view text) {
    std::string name;
    bool separate = false;
    for (const char c : text) {
        if (std::isalnum(static_cast<unsigned char>(c)) == 0) {
            separate = !name.empty();
            continue;
        }
        if (separate) {
            name += '_';
            separate = false;
        }
        name += c;
    }
    return name;
}

// An allocator setting as a name part; "default" for none.
inline std::string conf_name_part(std::string_view conf) {
    return conf.empty() ? "default" : test_name_part(conf);
}

}  // namespace memtrail::testing
