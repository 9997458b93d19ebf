#pragma once
// Decompression bombs for the tests: a memtrail snapshot whose one trace has `entries` entries of
// zero bytes in its 'kind' column, in a zstd frame written by hand (RFC 8878) so the zeros cost
// four bytes per 128 KiB (RLE blocks): 60M entries fit in under 2,000 bytes.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace memtrail::snapshot::test {

namespace zstd_bomb_detail {

inline constexpr uint32_t max_block = 128 << 10;

inline void block_header(std::vector<uint8_t>& out, uint32_t type, uint32_t size, bool last) {
    const uint32_t header = (last ? 1u : 0u) | type << 1 | size << 3;
    out.push_back(static_cast<uint8_t>(header));
    out.push_back(static_cast<uint8_t>(header >> 8));
    out.push_back(static_cast<uint8_t>(header >> 16));
}

inline void put_string(std::vector<uint8_t>& out, std::string_view text) {
    out.push_back(static_cast<uint8_t>(0xa0 | text.size()));  // fixstr, under 32 bytes
    out.insert(out.end(), text.begin(), text.end());
}

inline void put_u32(std::vector<uint8_t>& out, uint8_t type, uint32_t value) {
    out.push_back(type);
    for (int shift = 24; shift >= 0; shift -= 8) {
        out.push_back(static_cast<uint8_t>(value >> shift));
    }
}

}  // namespace zstd_bomb_detail

// `padding` bytes of an unknown section (skipped by the reader) come first, stored raw, so the
// compressed file is that much larger.
inline std::vector<uint8_t> zstd_bomb(uint32_t entries, uint32_t padding = 0) {
    using namespace zstd_bomb_detail;
    std::vector<uint8_t> plain = {'M', 'E', 'M', 'T', 'R', 'A', 'I', 'L', 0x01};
    plain.push_back(padding > 0 ? 0x82 : 0x81);  // the body: a map of 1 or 2 sections
    if (padding > 0) {
        put_string(plain, "padding");
        put_u32(plain, 0xc6, padding);  // bin 32
        plain.resize(plain.size() + padding);
    }
    put_string(plain, "traces");
    plain.push_back(0x91);  // one trace
    plain.push_back(0x81);  // with one key
    put_string(plain, "columns");
    plain.push_back(0x81);  // one column
    put_string(plain, "kind");
    put_u32(plain, 0xdd, entries);  // array 32; its zeros (action 0) follow as RLE blocks

    // Magic; no content size, checksum or dictionary; a 128 KiB window.
    std::vector<uint8_t> frame = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38};
    for (size_t at = 0; at < plain.size(); at += max_block) {
        const auto size = static_cast<uint32_t>(std::min<size_t>(max_block, plain.size() - at));
        block_header(frame, 0, size, entries == 0 && at + size == plain.size());
        frame.insert(frame.end(), plain.begin() + static_cast<ptrdiff_t>(at),
                     plain.begin() + static_cast<ptrdiff_t>(at + size));
    }
    for (uint32_t left = entries; left > 0;) {
        const uint32_t size = std::min(max_block, left);
        left -= size;
        block_header(frame, 1, size, left == 0);
        frame.push_back(0x00);
    }
    return frame;
}

}  // namespace memtrail::snapshot::test
