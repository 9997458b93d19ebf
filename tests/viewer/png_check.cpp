// Checks that a screenshot shows something: enough distinct colours over the whole image, and
// enough pixels unlike the background below the viewer's tab bars (where the view draws).
//
//   png_check FILE.png [MIN_CONTENT_FRACTION [MIN_DISTINCT_COLOURS [MARK_RRGGBB MARK_ABOVE]]]
//
// A view has text, tables and plots in many colours (24 by default); the loading screen has two
// curves and two lines of text. With a mark, pixels of exactly that colour must be there, all in
// the top MARK_ABOVE fraction of the image (the Ranks view's outlier mark: the outlier row first).
//
// Exits 0 when the image passes, 1 with the reason otherwise.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include <stb_image.h>

namespace {

constexpr size_t default_min_distinct_colors = 24;
// Menu bar, snapshot tabs, toolbar, overview strip and feature tabs take about this much.
constexpr int chrome_height = 150;

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 6 || argc == 5) {
        std::fprintf(stderr,
                     "usage: png_check FILE.png [MIN_CONTENT_FRACTION [MIN_DISTINCT_COLOURS "
                     "[MARK_RRGGBB MARK_ABOVE]]]\n");
        return 2;
    }
    const double min_content = argc >= 3 ? std::atof(argv[2]) : 0.02;
    const size_t min_distinct_colors =
        argc >= 4 ? std::strtoull(argv[3], nullptr, 10) : default_min_distinct_colors;
    const bool marked = argc == 6;
    const auto mark = marked ? static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 16)) : 0u;
    const double mark_above = marked ? std::atof(argv[5]) : 1.0;
    int width = 0;
    int height = 0;
    int channels = 0;
    unsigned char* pixels = stbi_load(argv[1], &width, &height, &channels, 3);
    if (pixels == nullptr) {
        std::fprintf(stderr, "png_check: cannot read %s: %s\n", argv[1], stbi_failure_reason());
        return 1;
    }
    std::map<uint32_t, size_t> counts;
    int lowest_mark = -1;  // the lowest row holding the mark's colour
    for (int i = 0; i < width * height; ++i) {
        const unsigned char* p = pixels + static_cast<size_t>(i) * 3;
        const uint32_t color = (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
        ++counts[color];
        if (marked && color == mark) {
            lowest_mark = i / width;
        }
    }
    uint32_t background = 0;
    size_t most = 0;
    for (const auto& [color, n] : counts) {
        if (n > most) {
            most = n;
            background = color;
        }
    }
    size_t content = 0;
    size_t content_area = 0;
    for (int y = chrome_height; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            const unsigned char* p = pixels + (static_cast<size_t>(y) * width + x) * 3;
            const uint32_t color = (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
            content += color != background;
            ++content_area;
        }
    }
    stbi_image_free(pixels);
    const double fraction =
        content_area == 0 ? 0.0 : static_cast<double>(content) / static_cast<double>(content_area);
    std::printf("%s: %dx%d, %zu distinct colours, %.2f%% of the view area drawn\n", argv[1], width,
                height, counts.size(), fraction * 100.0);
    if (counts.size() < min_distinct_colors) {
        std::fprintf(stderr, "png_check: only %zu distinct colours (want %zu): blank?\n",
                     counts.size(), min_distinct_colors);
        return 1;
    }
    if (fraction < min_content) {
        std::fprintf(stderr,
                     "png_check: only %.3f%% of the view area differs from the background "
                     "(want %.3f%%)\n",
                     fraction * 100.0, min_content * 100.0);
        return 1;
    }
    if (marked && lowest_mark < 0) {
        std::fprintf(stderr, "png_check: no pixel of the mark's colour %06x\n", mark);
        return 1;
    }
    if (marked && lowest_mark > static_cast<int>(mark_above * height)) {
        std::fprintf(stderr,
                     "png_check: the mark's colour %06x reaches row %d, below %.0f%% of %d\n", mark,
                     lowest_mark, mark_above * 100.0, height);
        return 1;
    }
    return 0;
}
