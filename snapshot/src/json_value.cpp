#include "memtrail/snapshot/json_value.hpp"

#include <cctype>
#include <charconv>
#include <cstdlib>

namespace memtrail::snapshot {

namespace {

// Deeper documents are refused: memtrail's own files nest a few levels.
constexpr int max_depth = 64;

class parser {
  public:
    explicit parser(std::string_view text) : text_(text) {}

    json_value document() {
        json_value v = value(0);
        skip_space();
        if (at_ < text_.size()) {
            fail("expected the end of the document");
        }
        return v;
    }

  private:
    [[noreturn]] void fail(const std::string& what) const {
        throw json_error("at byte " + std::to_string(at_) + ": " + what);
    }
    void skip_space() {
        while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' ||
                                      text_[at_] == '\r' || text_[at_] == '\t')) {
            ++at_;
        }
    }
    bool take(char c) {
        skip_space();
        if (at_ < text_.size() && text_[at_] == c) {
            ++at_;
            return true;
        }
        return false;
    }
    void expect(char c, const char* what) {
        if (!take(c)) {
            fail(std::string("expected '") + c + "' " + what);
        }
    }
    bool word(std::string_view w) {
        if (text_.substr(at_, w.size()) == w) {
            at_ += w.size();
            return true;
        }
        return false;
    }

    json_value value(int depth) {
        if (depth > max_depth) {
            fail("nested more than " + std::to_string(max_depth) + " levels");
        }
        skip_space();
        if (at_ >= text_.size()) {
            fail("expected a value, found the end");
        }
        json_value v;
        const char c = text_[at_];
        if (c == '{') {
            ++at_;
            v.kind = json_value::type::object;
            if (take('}')) {
                return v;
            }
            do {
                skip_space();
                if (at_ >= text_.size() || text_[at_] != '"') {
                    fail("expected an object key");
                }
                std::string key = string();
                expect(':', "after an object key");
                v.members.insert_or_assign(std::move(key), value(depth + 1));
            } while (take(','));
            expect('}', "or ',' in an object");
        } else if (c == '[') {
            ++at_;
            v.kind = json_value::type::array;
            if (take(']')) {
                return v;
            }
            do {
                v.items.push_back(value(depth + 1));
            } while (take(','));
            expect(']', "or ',' in an array");
        } else if (c == '"') {
            v.kind = json_value::type::string;
            v.text = string();
        } else if (word("true")) {
            v.kind = json_value::type::boolean;
            v.flag = true;
        } else if (word("false")) {
            v.kind = json_value::type::boolean;
        } else if (word("null")) {
            v.kind = json_value::type::null;
        } else {
            v.kind = json_value::type::number;
            const size_t begin = at_;
            number_text(c);
            v.text = std::string(text_.substr(begin, at_ - begin));
        }
        return v;
    }

    // Steps over a number as JSON writes it: -?digits(.digits)?([eE][+-]?digits)?.
    void number_text(char first) {
        const auto digits = [this] {
            const size_t from = at_;
            while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) {
                ++at_;
            }
            return at_ > from;
        };
        if (at_ < text_.size() && text_[at_] == '-') {
            ++at_;
        }
        if (!digits()) {
            fail(std::string("expected a value, found '") + first + "'");
        }
        if (at_ < text_.size() && text_[at_] == '.') {
            ++at_;
            if (!digits()) {
                fail("expected digits after a number's '.'");
            }
        }
        if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
            ++at_;
            if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) {
                ++at_;
            }
            if (!digits()) {
                fail("expected digits in a number's exponent");
            }
        }
    }

    void append_utf8(std::string& out, uint32_t code) {
        if (code < 0x80) {
            out += static_cast<char>(code);
        } else if (code < 0x800) {
            out += static_cast<char>(0xc0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3f));
        } else if (code < 0x10000) {
            out += static_cast<char>(0xe0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (code & 0x3f));
        } else {
            out += static_cast<char>(0xf0 | (code >> 18));
            out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (code & 0x3f));
        }
    }
    uint32_t hex4() {
        if (at_ + 4 > text_.size()) {
            fail("expected four hex digits after \\u");
        }
        uint32_t code = 0;
        const auto r = std::from_chars(text_.data() + at_, text_.data() + at_ + 4, code, 16);
        if (r.ptr != text_.data() + at_ + 4) {
            fail("expected four hex digits after \\u");
        }
        at_ += 4;
        return code;
    }

    std::string string() {
        ++at_;  // the opening quote
        std::string out;
        while (true) {
            if (at_ >= text_.size()) {
                fail("a string is not closed");
            }
            const char c = text_[at_++];
            if (c == '"') {
                return out;
            }
            if (static_cast<unsigned char>(c) < 0x20) {
                fail("a control character inside a string");
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            if (at_ >= text_.size()) {
                fail("a string is not closed");
            }
            const char e = text_[at_++];
            switch (e) {
                case '"':
                case '\\':
                case '/':
                    out += e;
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'u':
                    append_utf8(out, escaped_code_point());
                    break;
                default:
                    fail(std::string("an unknown escape '\\") + e + "'");
            }
        }
    }

    // After "\u": one code point, a surrogate pair joined; a half alone is an error.
    uint32_t escaped_code_point() {
        const uint32_t code = hex4();
        if (code >= 0xdc00 && code < 0xe000) {
            fail("a low surrogate without its high half");
        }
        if (code < 0xd800 || code >= 0xdc00) {
            return code;
        }
        if (!word("\\u")) {
            fail("a high surrogate without its low half");
        }
        const uint32_t low = hex4();
        if (low < 0xdc00 || low >= 0xe000) {
            fail("a high surrogate without its low half");
        }
        return 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
    }

    std::string_view text_;
    size_t at_ = 0;
};

std::string_view type_name(json_value::type t) {
    switch (t) {
        case json_value::type::null:
            return "null";
        case json_value::type::boolean:
            return "a boolean";
        case json_value::type::number:
            return "a number";
        case json_value::type::string:
            return "a string";
        case json_value::type::array:
            return "an array";
        case json_value::type::object:
            return "an object";
    }
    return "a value";
}

[[noreturn]] void wrong(std::string_view what, std::string_view expected, json_value::type got) {
    throw json_error(std::string(what) + ": expected " + std::string(expected) + ", got " +
                     std::string(type_name(got)));
}

template <class T>
T integer(const json_value& v, std::string_view what, std::string_view expected) {
    if (v.kind != json_value::type::number) {
        wrong(what, expected, v.kind);
    }
    T out{};
    const auto r = std::from_chars(v.text.data(), v.text.data() + v.text.size(), out);
    if (r.ec != std::errc() || r.ptr != v.text.data() + v.text.size()) {
        throw json_error(std::string(what) + ": expected " + std::string(expected) + ", got " +
                         v.text);
    }
    return out;
}

}  // namespace

const json_value* json_value::find(std::string_view key) const {
    const auto it = members.find(key);
    return it == members.end() ? nullptr : &it->second;
}

const json_value& json_value::at(std::string_view key, std::string_view what) const {
    if (kind != type::object) {
        wrong(what, "an object", kind);
    }
    const json_value* v = find(key);
    if (v == nullptr) {
        throw json_error(std::string(what) + ": the key '" + std::string(key) + "' is missing");
    }
    return *v;
}

uint64_t json_value::as_uint(std::string_view what) const {
    return integer<uint64_t>(*this, what, "a non-negative integer");
}

int64_t json_value::as_int(std::string_view what) const {
    return integer<int64_t>(*this, what, "an integer");
}

double json_value::as_double(std::string_view what) const {
    if (kind != type::number) {
        wrong(what, "a number", kind);
    }
    return std::strtod(text.c_str(), nullptr);
}

bool json_value::as_bool(std::string_view what) const {
    if (kind != type::boolean) {
        wrong(what, "true or false", kind);
    }
    return flag;
}

const std::string& json_value::as_string(std::string_view what) const {
    if (kind != type::string) {
        wrong(what, "a string", kind);
    }
    return text;
}

const std::vector<json_value>& json_value::as_array(std::string_view what) const {
    if (kind != type::array) {
        wrong(what, "an array", kind);
    }
    return items;
}

json_value parse_json(std::string_view text) {
    return parser(text).document();
}

}  // namespace memtrail::snapshot
