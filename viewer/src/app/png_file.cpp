#include "detail/png_file.hpp"

#include <stb_image_write.h>

#include <stdexcept>

namespace memtrail::viewer::app {

void write_png(const std::string& path, const std::vector<uint8_t>& rgba, int width, int height) {
    if (stbi_write_png(path.c_str(), width, height, 4, rgba.data(), width * 4) == 0) {
        throw std::runtime_error("cannot write " + path);
    }
}

}  // namespace memtrail::viewer::app
