#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memtrail::viewer::app {

// Writes RGBA rows (top row first) as a PNG; throws std::runtime_error on failure.
void write_png(const std::string& path, const std::vector<uint8_t>& rgba, int width, int height);

}  // namespace memtrail::viewer::app
