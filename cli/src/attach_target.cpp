#include "detail/attach_target.hpp"

#include <charconv>
#include <string>

#include "detail/arguments.hpp"
#include "memtrail/snapshot/load.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"

namespace memtrail::cli {

pid_t parse_pid(std::string_view what, std::string_view text) {
    pid_t pid = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), pid);
    if (error != std::errc() || end != text.data() + text.size() || pid <= 0) {
        throw usage_error(std::string(what) + ": '" + std::string(text) +
                          "' is not a process id (a whole number above 0)");
    }
    return pid;
}

snapshot::snapshot snapshot_of(const live::frame& received, pid_t pid) {
    try {
        return snapshot::read_snapshot(received.payload);
    } catch (const std::exception& error) {
        throw snapshot::load_error("process " + std::to_string(pid) +
                                   ": the snapshot it sent cannot be read: " + error.what());
    }
}

}  // namespace memtrail::cli
