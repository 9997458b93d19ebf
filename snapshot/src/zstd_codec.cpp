#include "detail/zstd_codec.hpp"

#include <zstd.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "memtrail/snapshot/format_error.hpp"

namespace memtrail::snapshot::detail {

bool has_zstd_magic(std::span<const uint8_t> bytes) {
    return bytes.size() >= 4 && bytes[0] == 0x28 && bytes[1] == 0xb5 && bytes[2] == 0x2f &&
           bytes[3] == 0xfd;
}

std::vector<uint8_t> zstd_compress(std::span<const uint8_t> bytes, int level) {
    std::vector<uint8_t> out(ZSTD_compressBound(bytes.size()));
    const size_t n = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), level);
    if (ZSTD_isError(n) != 0) {
        // Only a bad level or an allocation failure gets here, not the data.
        throw std::runtime_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
    }
    out.resize(n);
    return out;
}

std::vector<uint8_t> zstd_decompress(std::span<const uint8_t> bytes, size_t limit) {
    const std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> context(ZSTD_createDCtx(),
                                                                     ZSTD_freeDCtx);
    if (!context) {
        throw std::bad_alloc();
    }
    std::vector<uint8_t> out;
    ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
    size_t last_result = 0;
    for (;;) {
        if (out.size() >= limit) {
            throw format_error("memtrail snapshot: zstd data at compressed byte " +
                               std::to_string(in.pos) + " decompresses beyond " +
                               std::to_string(limit) + " bytes, more than a real snapshot of " +
                               std::to_string(bytes.size()) +
                               " compressed bytes expands to; refused as a decompression bomb");
        }
        const size_t used = out.size();
        out.resize(std::min(limit, std::max<size_t>(used * 2, size_t{1} << 20)));
        ZSTD_outBuffer sink{out.data() + used, out.size() - used, 0};
        last_result = ZSTD_decompressStream(context.get(), &sink, &in);
        const bool sink_full = sink.pos == sink.size;
        out.resize(used + sink.pos);
        if (ZSTD_isError(last_result) != 0) {
            throw format_error("memtrail snapshot: corrupt zstd data at compressed byte " +
                               std::to_string(in.pos) + ": " + ZSTD_getErrorName(last_result));
        }
        // Done when all input is consumed and zstd had room left: nothing is held back.
        if (in.pos == in.size && !sink_full) {
            break;
        }
    }
    if (last_result != 0) {
        throw format_error("memtrail snapshot: truncated zstd data at compressed byte " +
                           std::to_string(in.pos) + ": the last frame is incomplete");
    }
    return out;
}

std::vector<uint8_t> zstd_decompress_start(std::span<const uint8_t> bytes, size_t count) {
    const std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> context(ZSTD_createDCtx(),
                                                                     ZSTD_freeDCtx);
    if (!context) {
        throw std::bad_alloc();
    }
    std::vector<uint8_t> out(count);
    ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
    ZSTD_outBuffer sink{out.data(), out.size(), 0};
    while (sink.pos < sink.size && in.pos < in.size) {
        const size_t before = in.pos + sink.pos;
        if (ZSTD_isError(ZSTD_decompressStream(context.get(), &sink, &in)) != 0 ||
            in.pos + sink.pos == before) {
            break;  // damaged, or no progress: what came out so far is all there is
        }
    }
    out.resize(sink.pos);
    return out;
}

}  // namespace memtrail::snapshot::detail
