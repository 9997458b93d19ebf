// Reads the JSON written next to each recorded parity trace, through snapshot::json_paths.

#include "memtrail/replay/trace_metadata.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "memtrail/snapshot/json_paths.hpp"

namespace memtrail::replay {

trace_metadata read_trace_metadata(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw std::runtime_error(path.string() + ": cannot open");
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    trace_metadata meta;
    std::map<std::string, int64_t> top_numbers;
    bool has_stats_object = false;
    const snapshot::json_paths json(buffer.str(), path.string());
    for (const auto& [key, value] : json.values()) {
        if (value.type != snapshot::json_scalar::kind::number &&
            value.type != snapshot::json_scalar::kind::boolean) {
            continue;
        }
        if (key.rfind("stats/", 0) == 0) {
            has_stats_object = true;
            meta.stats[key.substr(6)] = value.integer;
        } else if (key == "fraction") {
            meta.fraction = value.number;
        } else if (key == "device_total") {
            meta.device_total = static_cast<uint64_t>(value.integer);
        }
        top_numbers[key] = value.integer;
    }
    if (!has_stats_object) {
        for (const auto& [key, value] : top_numbers) {
            meta.stats[key] = value;
        }
    }
    if (auto conf = json.string_at("conf"); conf && *conf != "default") {
        meta.conf = *conf;
    }
    return meta;
}

}  // namespace memtrail::replay
