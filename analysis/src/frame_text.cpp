#include "memtrail/analysis/frame_text.hpp"

#include <sstream>

namespace memtrail::analysis {

std::string printable(std::string_view text) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f) {
            out += "\\x";
            out += digits[byte >> 4];
            out += digits[byte & 15];
        } else {
            out += c;
        }
    }
    return out;
}

std::string frame_label(const snapshot::snapshot& source, snapshot::frame_id id) {
    const snapshot::frame& f = source.frame_at(id);
    std::string label(source.string_at(f.function));
    if (label.empty()) {
        const std::string_view module = source.string_at(f.module);
        if (!module.empty()) {
            std::ostringstream text;
            text << module << "+0x" << std::hex << f.module_offset;
            label = text.str();
        } else {
            label = "??";
        }
    }
    const std::string_view file = source.string_at(f.filename);
    if (!file.empty()) {
        label += " (";
        label += file;
        if (f.line != 0) {
            label += ":" + std::to_string(f.line);
        }
        label += ")";
    }
    return printable(label);
}

std::vector<std::string> stack_labels(const snapshot::snapshot& source, snapshot::stack_id id) {
    const auto& frames = source.stack_at(id);
    std::vector<std::string> labels;
    labels.reserve(frames.size());
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
        labels.push_back(frame_label(source, *it));
    }
    return labels;
}

}  // namespace memtrail::analysis
