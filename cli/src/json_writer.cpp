#include "detail/json_writer.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace memtrail::cli {

void json_writer::before_value() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!has_items_.empty()) {
        if (has_items_.back()) {
            out_ << ',';
        }
        has_items_.back() = true;
    }
}

json_writer& json_writer::begin_object() {
    before_value();
    out_ << '{';
    has_items_.push_back(false);
    return *this;
}

json_writer& json_writer::end_object() {
    has_items_.pop_back();
    out_ << '}';
    if (has_items_.empty()) {
        out_ << '\n';
    }
    return *this;
}

json_writer& json_writer::begin_array() {
    before_value();
    out_ << '[';
    has_items_.push_back(false);
    return *this;
}

json_writer& json_writer::end_array() {
    has_items_.pop_back();
    out_ << ']';
    if (has_items_.empty()) {
        out_ << '\n';
    }
    return *this;
}

json_writer& json_writer::key(std::string_view name) {
    before_value();
    write_string(name);
    out_ << ':';
    after_key_ = true;
    return *this;
}

json_writer& json_writer::value(std::string_view text) {
    before_value();
    write_string(text);
    return *this;
}

namespace {

// The length of the valid UTF-8 sequence at `text[i]`, or 0 where the bytes there are not one
// (a stray continuation byte, a sequence cut short, an overlong form, a surrogate).
size_t utf8_sequence_length(std::string_view text, size_t i) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(i);
    size_t length = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) {
        length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        length = 3;
        low = lead == 0xe0 ? 0xa0 : 0x80;
        high = lead == 0xed ? 0x9f : 0xbf;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        length = 4;
        low = lead == 0xf0 ? 0x90 : 0x80;
        high = lead == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (i + length > text.size() || byte(i + 1) < low || byte(i + 1) > high) {
        return 0;
    }
    for (size_t k = i + 2; k < i + length; ++k) {
        if (byte(k) < 0x80 || byte(k) > 0xbf) {
            return 0;
        }
    }
    return length;
}

}  // namespace

// JSON text is UTF-8: bytes that are not (a snapshot's names may hold any) become U+FFFD, and
// control characters are escaped, so a reader never sees raw terminal codes.
void json_writer::write_string(std::string_view text) {
    out_ << '"';
    for (size_t i = 0; i < text.size();) {
        const char c = text[i];
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x80) {
            const size_t length = utf8_sequence_length(text, i);
            if (length == 0) {
                out_ << "\\ufffd";
                ++i;
            } else {
                out_ << text.substr(i, length);
                i += length;
            }
            continue;
        }
        ++i;
        switch (c) {
            case '"':
                out_ << "\\\"";
                break;
            case '\\':
                out_ << "\\\\";
                break;
            case '\n':
                out_ << "\\n";
                break;
            case '\r':
                out_ << "\\r";
                break;
            case '\t':
                out_ << "\\t";
                break;
            default:
                if (byte < 0x20 || byte == 0x7f) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
                    out_ << escaped;
                } else {
                    out_ << c;
                }
        }
    }
    out_ << '"';
}

json_writer& json_writer::value(uint64_t number) {
    before_value();
    out_ << number;
    return *this;
}

json_writer& json_writer::value(int64_t number) {
    before_value();
    out_ << number;
    return *this;
}

json_writer& json_writer::value(double number) {
    if (!std::isfinite(number)) {
        return null();
    }
    before_value();
    char text[32];
    const auto result = std::to_chars(text, text + sizeof text, number);
    out_.write(text, result.ptr - text);
    return *this;
}

json_writer& json_writer::value(bool flag) {
    before_value();
    out_ << (flag ? "true" : "false");
    return *this;
}

json_writer& json_writer::raw_value(std::string_view json) {
    before_value();
    out_ << json;
    return *this;
}

json_writer& json_writer::null() {
    before_value();
    out_ << "null";
    return *this;
}

}  // namespace memtrail::cli
