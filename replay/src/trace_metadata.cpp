// Reads the JSON written next to each recorded parity trace, through snapshot::json_value.

#include "memtrail/replay/trace_metadata.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "memtrail/snapshot/json_value.hpp"

namespace memtrail::replay {

trace_metadata read_trace_metadata(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw std::runtime_error(path.string() + ": cannot open");
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    trace_metadata meta;
    try {
        const snapshot::json_value json = snapshot::parse_json(buffer.str());
        if (json.kind != snapshot::json_value::type::object) {
            throw snapshot::json_error("expected an object");
        }
        // memory_stats() as an object of its own, or a plain {"name": number, ...} file.
        const snapshot::json_value* stats = json.find("stats");
        const auto& counters = stats != nullptr ? stats->members : json.members;
        for (const auto& [key, value] : counters) {
            if (value.kind != snapshot::json_value::type::number) {
                continue;
            }
            const bool integral = value.text.find_first_of(".eE") == std::string::npos;
            meta.stats[key] = integral ? value.as_int("stats/" + key)
                                       : static_cast<int64_t>(value.as_double("stats/" + key));
        }
        if (const auto* fraction = json.find("fraction")) {
            meta.fraction = fraction->as_double("fraction");
        }
        if (const auto* total = json.find("device_total")) {
            meta.device_total = total->as_uint("device_total");
        }
        if (const auto* conf = json.find("conf");
            conf != nullptr && conf->kind == snapshot::json_value::type::string &&
            conf->text != "default") {
            meta.conf = conf->text;
        }
    } catch (const snapshot::json_error& error) {
        throw std::runtime_error(path.string() + ": JSON error " + error.what());
    }
    return meta;
}

}  // namespace memtrail::replay
