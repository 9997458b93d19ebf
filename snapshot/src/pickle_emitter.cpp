#include "detail/pickle_emitter.hpp"

#include <bit>
#include <string>

namespace memtrail::snapshot::detail {

pickle_emitter::pickle_emitter() {
    op(0x80);  // PROTO 4: no FRAME opcodes needed, unpicklers take unframed protocol 4 data
    op(4);
}

void pickle_emitter::le(uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) {
        out_.push_back(static_cast<uint8_t>(value >> (8 * i)));
    }
}

void pickle_emitter::none() {
    op(0x4e);
}

void pickle_emitter::boolean(bool value) {
    op(value ? 0x88 : 0x89);
}

void pickle_emitter::integer(int64_t value) {
    if (value >= 0 && value <= 0xff) {
        op(0x4b);  // BININT1
        le(static_cast<uint64_t>(value), 1);
    } else if (value >= 0 && value <= 0xffff) {
        op(0x4d);  // BININT2
        le(static_cast<uint64_t>(value), 2);
    } else if (value >= INT32_MIN && value <= INT32_MAX) {
        op(0x4a);  // BININT
        le(static_cast<uint64_t>(value), 4);
    } else {
        // LONG1: the fewest little-endian two's complement bytes that keep the sign.
        auto bits = static_cast<uint64_t>(value);
        int bytes = 8;
        while (bytes > 1) {
            const auto top = static_cast<uint8_t>(bits >> (8 * (bytes - 1)));
            const bool next_negative = ((bits >> (8 * (bytes - 1) - 1)) & 1) != 0;
            if ((top == 0x00 && !next_negative) || (top == 0xff && next_negative)) {
                --bytes;
            } else {
                break;
            }
        }
        op(0x8a);
        op(static_cast<uint8_t>(bytes));
        le(bits, bytes);
    }
}

void pickle_emitter::unsigned_integer(uint64_t value) {
    if (value <= static_cast<uint64_t>(INT64_MAX)) {
        integer(static_cast<int64_t>(value));
        return;
    }
    op(0x8a);  // LONG1 with a zero sign byte
    op(9);
    le(value, 8);
    op(0);
}

void pickle_emitter::floating(double value) {
    op(0x47);  // BINFLOAT, big-endian
    const auto bits = std::bit_cast<uint64_t>(value);
    for (int i = 7; i >= 0; --i) {
        out_.push_back(static_cast<uint8_t>(bits >> (8 * i)));
    }
}

namespace {

// Length of the valid UTF-8 sequence at the start of `s`, 0 when it is not one (Python's
// decoder, which unpickling uses, accepts surrogates too: "surrogatepass").
size_t utf8_sequence_length(std::string_view s) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
    const uint8_t lead = byte(0);
    size_t length = 0;
    uint32_t minimum = 0;
    if (lead < 0x80) {
        return 1;
    } else if ((lead & 0xe0) == 0xc0) {
        length = 2;
        minimum = 0x80;
    } else if ((lead & 0xf0) == 0xe0) {
        length = 3;
        minimum = 0x800;
    } else if ((lead & 0xf8) == 0xf0) {
        length = 4;
        minimum = 0x10000;
    } else {
        return 0;
    }
    if (s.size() < length) {
        return 0;
    }
    uint32_t code = lead & (0x7fu >> length);
    for (size_t i = 1; i < length; ++i) {
        if ((byte(i) & 0xc0) != 0x80) {
            return 0;
        }
        code = (code << 6) | (byte(i) & 0x3fu);
    }
    return code >= minimum && code <= 0x10ffff ? length : 0;
}

// Python refuses to unpickle a str that is not UTF-8; memtrail's strings (paths, symbol names)
// are bytes, so invalid sequences are written as U+FFFD.
std::string valid_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    while (!s.empty()) {
        const size_t n = utf8_sequence_length(s);
        if (n == 0) {
            out += "\xef\xbf\xbd";
            s.remove_prefix(1);
        } else {
            out.append(s.substr(0, n));
            s.remove_prefix(n);
        }
    }
    return out;
}

bool is_valid_utf8(std::string_view s) {
    while (!s.empty()) {
        const size_t n = utf8_sequence_length(s);
        if (n == 0) {
            return false;
        }
        s.remove_prefix(n);
    }
    return true;
}

}  // namespace

void pickle_emitter::string(std::string_view value) {
    if (!is_valid_utf8(value)) {
        string(valid_utf8(value));
        return;
    }
    if (value.size() < 256) {
        op(0x8c);  // SHORT_BINUNICODE
        le(value.size(), 1);
    } else if (value.size() <= UINT32_MAX) {
        op(0x58);  // BINUNICODE
        le(value.size(), 4);
    } else {
        op(0x8d);  // BINUNICODE8
        le(value.size(), 8);
    }
    out_.insert(out_.end(), value.begin(), value.end());
}

void pickle_emitter::memo_string(std::string_view value, uint32_t& slot) {
    if (slot != not_memoized) {
        get(slot);
        return;
    }
    string(value);
    slot = memoize();
}

uint32_t pickle_emitter::memoize() {
    op(0x94);
    return memo_size_++;
}

void pickle_emitter::get(uint32_t memo_index) {
    if (memo_index <= 0xff) {
        op(0x68);  // BINGET
        le(memo_index, 1);
    } else {
        op(0x6a);  // LONG_BINGET
        le(memo_index, 4);
    }
}

std::vector<uint8_t> pickle_emitter::finish() {
    op(0x2e);  // STOP
    return std::move(out_);
}

}  // namespace memtrail::snapshot::detail
