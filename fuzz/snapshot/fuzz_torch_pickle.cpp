// Any input must give a snapshot or a format_error. What was read must reach a fixed point after
// one write/read cycle: the first cycle may normalise (a nameless native frame gets a
// module+offset name), after that writing and reading changes nothing, byte for byte.

#include <cstdlib>

#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace ms = memtrail::snapshot;

namespace {

std::vector<uint8_t> cycle(const std::vector<uint8_t>& bytes) {
    return ms::write_torch_pickle(ms::read_torch_pickle(std::span<const uint8_t>(bytes)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ms::snapshot s;
    try {
        s = ms::read_torch_pickle(std::span<const uint8_t>(data, size));
    } catch (const ms::format_error&) {
        return 0;
    }
    const auto normalised = cycle(ms::write_torch_pickle(s));
    if (cycle(normalised) != normalised) {
        std::abort();
    }
    return 0;
}
