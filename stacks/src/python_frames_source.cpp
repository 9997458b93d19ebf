// The names of the ways to read Python frames, apart from the reader: the settings table (linked
// into the interposer too) parses them without bringing the reader along.

#include <array>

#include "memtrail/stacks/python_frames.hpp"

namespace memtrail::recorder {

bool parse_python_frames_source(std::string_view name, python_frames_source& out) {
    constexpr std::array<std::string_view, 3> names = {"direct", "api", "verify"};
    for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == name) {
            out = static_cast<python_frames_source>(i);
            return true;
        }
    }
    return false;
}

}  // namespace memtrail::recorder
