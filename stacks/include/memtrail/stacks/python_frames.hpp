#pragma once
// How Python frames are read (MEMTRAIL_PYTHON_FRAMES, librecorder's settings): the choice is the
// process's, made once before the first Python stack is captured.

#include <cstdint>
#include <string_view>

namespace memtrail::recorder {

enum class python_frames_source : uint8_t {
    direct,  // without the GIL where the version allows (the default)
    api,     // the public API under the GIL, always
    verify,  // both, for tests: a difference stops the process with both stacks on stderr
};
// "direct", "api" or "verify"; false for any other name.
bool parse_python_frames_source(std::string_view name, python_frames_source& out);
// Chooses how Python frames are read. Takes effect when the first Python stack is captured;
// later calls change nothing.
void choose_python_frames_source(python_frames_source source);

}  // namespace memtrail::recorder
