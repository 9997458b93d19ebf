// Any input, plain or zstd, must give a snapshot or a format_error. What was read must write and
// read back unchanged (compared as written bytes, which also covers NaN settings).

#include <cstdlib>

#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"

namespace ms = memtrail::snapshot;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ms::snapshot s;
    try {
        s = ms::read_snapshot(std::span<const uint8_t>(data, size));
    } catch (const ms::format_error&) {
        return 0;
    }
    const auto written = ms::write_snapshot(s);
    const auto again = ms::write_snapshot(ms::read_snapshot(std::span<const uint8_t>(written)));
    if (again != written) {
        std::abort();
    }
    return 0;
}
