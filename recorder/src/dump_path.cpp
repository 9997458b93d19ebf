#include <unistd.h>

#include "memtrail/recorder/dump_triggers.hpp"

namespace memtrail::recorder {

std::string expand_dump_path(std::string_view pattern, int device, int64_t time_ns) {
    std::string path;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '%' || i + 1 == pattern.size()) {
            path += pattern[i];
            continue;
        }
        switch (pattern[++i]) {
            case 'p':
                path += std::to_string(getpid());
                break;
            case 'd':
                path += std::to_string(device);
                break;
            case 't':
                path += std::to_string(time_ns);
                break;
            case '%':
                path += '%';
                break;
            default:  // not a placeholder: kept as written
                path += '%';
                path += pattern[i];
        }
    }
    return path;
}

}  // namespace memtrail::recorder
