#include "json_writer.hpp"

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

void json_writer::write_string(std::string_view text) {
    out_ << '"';
    for (const char c : text) {
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
                if (static_cast<unsigned char>(c) < 0x20) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
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

json_writer& json_writer::null() {
    before_value();
    out_ << "null";
    return *this;
}

}  // namespace memtrail::cli
