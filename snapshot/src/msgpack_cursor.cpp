#include "detail/msgpack_cursor.hpp"

#include <bit>

#include "memtrail/snapshot/format_error.hpp"

namespace memtrail::snapshot::detail {

namespace {

constexpr int max_skip_depth = 64;

std::string type_name(uint8_t tag) {
    if (tag <= 0x7f || tag == 0xcc || tag == 0xcd || tag == 0xce || tag == 0xcf) {
        return "an unsigned integer";
    }
    if (tag >= 0xe0 || (tag >= 0xd0 && tag <= 0xd3)) {
        return "a signed integer";
    }
    if ((tag >= 0x80 && tag <= 0x8f) || tag == 0xde || tag == 0xdf) {
        return "a map";
    }
    if ((tag >= 0x90 && tag <= 0x9f) || tag == 0xdc || tag == 0xdd) {
        return "an array";
    }
    if ((tag >= 0xa0 && tag <= 0xbf) || (tag >= 0xd9 && tag <= 0xdb)) {
        return "a string";
    }
    switch (tag) {
        case 0xc0:
            return "nil";
        case 0xc2:
        case 0xc3:
            return "a bool";
        case 0xca:
        case 0xcb:
            return "a float";
        case 0xc4:
        case 0xc5:
        case 0xc6:
            return "binary data";
        default:
            return "an extension or reserved byte";
    }
}

}  // namespace

void msgpack_cursor::fail(size_t offset, std::string_view what, const std::string& detail) const {
    throw format_error("memtrail snapshot: " + std::string(what) + " at byte " +
                       std::to_string(offset) + ": " + detail);
}

uint8_t msgpack_cursor::peek(std::string_view what) const {
    if (pos_ >= bytes_.size()) {
        fail(pos_, what, "truncated, the data ends here");
    }
    return bytes_[pos_];
}

void msgpack_cursor::fail_type(std::string_view what, std::string_view expected) const {
    fail(pos_, what, "expected " + std::string(expected) + ", got " + type_name(bytes_[pos_]));
}

uint64_t msgpack_cursor::take_be(size_t n, std::string_view what) {
    if (n > left()) {
        fail(pos_, what,
             "truncated, needs " + std::to_string(n) + " bytes, " + std::to_string(left()) +
                 " left");
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) {
        v = (v << 8) | bytes_[pos_ + i];
    }
    pos_ += n;
    return v;
}

bool msgpack_cursor::next_is_array() const {
    if (pos_ >= bytes_.size()) {
        return false;
    }
    const uint8_t tag = bytes_[pos_];
    return (tag >= 0x90 && tag <= 0x9f) || tag == 0xdc || tag == 0xdd;
}

uint64_t msgpack_cursor::read_encoded_uint(std::string_view what) {
    const uint8_t tag = peek(what);
    const size_t start = pos_;
    switch (tag) {
        case 0xcc:
            ++pos_;
            return take_be(1, what);
        case 0xcd:
            ++pos_;
            return take_be(2, what);
        case 0xce:
            ++pos_;
            return take_be(4, what);
        case 0xcf:
            ++pos_;
            return take_be(8, what);
        default:
            break;
    }
    // A signed encoding of a non-negative value is still an unsigned value.
    if (tag >= 0xd0 && tag <= 0xd3) {
        const int64_t v = read_int(what);
        if (v >= 0) {
            return static_cast<uint64_t>(v);
        }
        pos_ = start;
    }
    fail_type(what, "an unsigned integer");
}

int64_t msgpack_cursor::read_encoded_int(std::string_view what) {
    const uint8_t tag = peek(what);
    const size_t start = pos_;
    switch (tag) {
        case 0xd0:
            ++pos_;
            return static_cast<int8_t>(take_be(1, what));
        case 0xd1:
            ++pos_;
            return static_cast<int16_t>(take_be(2, what));
        case 0xd2:
            ++pos_;
            return static_cast<int32_t>(take_be(4, what));
        case 0xd3:
            ++pos_;
            return static_cast<int64_t>(take_be(8, what));
        case 0xcc:
        case 0xcd:
        case 0xce:
        case 0xcf: {
            const uint64_t v = read_uint(what);
            if (v <= static_cast<uint64_t>(INT64_MAX)) {
                return static_cast<int64_t>(v);
            }
            pos_ = start;
            fail(pos_, what, "integer " + std::to_string(v) + " does not fit int64");
        }
        default:
            fail_type(what, "an integer");
    }
}

double msgpack_cursor::read_double(std::string_view what) {
    const uint8_t tag = peek(what);
    if (tag == 0xcb) {
        ++pos_;
        return std::bit_cast<double>(take_be(8, what));
    }
    if (tag == 0xca) {
        ++pos_;
        return std::bit_cast<float>(static_cast<uint32_t>(take_be(4, what)));
    }
    // Other writers (msgpack-c among them) store integral floats as integers.
    if (tag <= 0x7f || tag >= 0xe0 || (tag >= 0xcc && tag <= 0xd3)) {
        return static_cast<double>(read_int(what));
    }
    fail_type(what, "a float");
}

bool msgpack_cursor::read_bool(std::string_view what) {
    const uint8_t tag = peek(what);
    if (tag == 0xc2 || tag == 0xc3) {
        ++pos_;
        return tag == 0xc3;
    }
    fail_type(what, "a bool");
}

std::string_view msgpack_cursor::read_string(std::string_view what) {
    const uint8_t tag = peek(what);
    uint64_t length = 0;
    if (tag >= 0xa0 && tag <= 0xbf) {
        ++pos_;
        length = tag & 0x1fu;
    } else if (tag == 0xd9 || tag == 0xda || tag == 0xdb) {
        ++pos_;
        length = take_be(size_t{1} << (tag - 0xd9), what);
    } else {
        fail_type(what, "a string");
    }
    if (length > left()) {
        fail(pos_, what,
             "truncated string, needs " + std::to_string(length) + " bytes, " +
                 std::to_string(left()) + " left");
    }
    const auto* p = reinterpret_cast<const char*>(bytes_.data() + pos_);
    pos_ += length;
    return {p, static_cast<size_t>(length)};
}

uint32_t msgpack_cursor::read_array(std::string_view what) {
    const uint8_t tag = peek(what);
    const size_t start = pos_;
    uint64_t count = 0;
    if (tag >= 0x90 && tag <= 0x9f) {
        ++pos_;
        count = tag & 0x0fu;
    } else if (tag == 0xdc || tag == 0xdd) {
        ++pos_;
        count = take_be(tag == 0xdc ? 2 : 4, what);
    } else {
        fail_type(what, "an array");
    }
    if (count > left()) {
        fail(start, what,
             "array of " + std::to_string(count) + " elements cannot fit in the " +
                 std::to_string(left()) + " bytes left");
    }
    return static_cast<uint32_t>(count);
}

uint32_t msgpack_cursor::read_map(std::string_view what) {
    const uint8_t tag = peek(what);
    const size_t start = pos_;
    uint64_t count = 0;
    if (tag >= 0x80 && tag <= 0x8f) {
        ++pos_;
        count = tag & 0x0fu;
    } else if (tag == 0xde || tag == 0xdf) {
        ++pos_;
        count = take_be(tag == 0xde ? 2 : 4, what);
    } else {
        fail_type(what, "a map");
    }
    if (count * 2 > left()) {
        fail(start, what,
             "map of " + std::to_string(count) + " entries cannot fit in the " +
                 std::to_string(left()) + " bytes left");
    }
    return static_cast<uint32_t>(count);
}

void msgpack_cursor::skip(std::string_view what) {
    skip_at_depth(what, 0);
}

void msgpack_cursor::skip_at_depth(std::string_view what, int depth) {
    if (depth > max_skip_depth) {
        fail(pos_, what, "nesting deeper than " + std::to_string(max_skip_depth));
    }
    const uint8_t tag = peek(what);
    if (tag <= 0x7f || tag >= 0xe0 || tag == 0xc0 || tag == 0xc2 || tag == 0xc3) {
        ++pos_;
        return;
    }
    if ((tag >= 0x90 && tag <= 0x9f) || tag == 0xdc || tag == 0xdd) {
        for (uint32_t n = read_array(what); n > 0; --n) {
            skip_at_depth(what, depth + 1);
        }
        return;
    }
    if ((tag >= 0x80 && tag <= 0x8f) || tag == 0xde || tag == 0xdf) {
        for (uint32_t n = read_map(what); n > 0; --n) {
            skip_at_depth(what, depth + 1);
            skip_at_depth(what, depth + 1);
        }
        return;
    }
    if ((tag >= 0xa0 && tag <= 0xbf) || (tag >= 0xd9 && tag <= 0xdb)) {
        read_string(what);
        return;
    }
    size_t payload = 0;
    switch (tag) {
        case 0xcc:
        case 0xd0:
            payload = 1;
            break;
        case 0xcd:
        case 0xd1:
            payload = 2;
            break;
        case 0xce:
        case 0xd2:
        case 0xca:
            payload = 4;
            break;
        case 0xcf:
        case 0xd3:
        case 0xcb:
            payload = 8;
            break;
        case 0xc4:
        case 0xc5:
        case 0xc6: {
            ++pos_;
            payload = take_be(size_t{1} << (tag - 0xc4), what);
            if (payload > left()) {
                fail(pos_, what, "truncated binary data");
            }
            pos_ += payload;
            return;
        }
        case 0xd4:
            payload = 2;
            break;  // fixext 1: type byte + data
        case 0xd5:
            payload = 3;
            break;
        case 0xd6:
            payload = 5;
            break;
        case 0xd7:
            payload = 9;
            break;
        case 0xd8:
            payload = 17;
            break;
        case 0xc7:
        case 0xc8:
        case 0xc9: {
            ++pos_;
            payload = take_be(size_t{1} << (tag - 0xc7), what) + 1;
            if (payload > left()) {
                fail(pos_, what, "truncated extension");
            }
            pos_ += payload;
            return;
        }
        default:
            fail(pos_, what, "reserved byte 0xc1");
    }
    ++pos_;
    if (payload > left()) {
        fail(pos_, what, "truncated value");
    }
    pos_ += payload;
}

}  // namespace memtrail::snapshot::detail
