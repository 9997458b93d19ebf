// The JSON reader behind json_paths: recursive descent over the text, strict about syntax (one
// document, no trailing commas), with byte offsets in its errors and a bounded nesting depth so
// a hostile file cannot exhaust the stack.

#include "memtrail/snapshot/json_paths.hpp"

#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace memtrail::snapshot {

namespace {

constexpr int max_depth = 256;

class json_parser {
  public:
    json_parser(std::string_view text, std::string_view source,
                std::map<std::string, json_scalar>& out)
        : text_(text), source_(source), out_(out) {}

    void parse() {
        value("", 0);
        skip_space();
        if (pos_ != text_.size()) {
            fail("unexpected text after the document");
        }
    }

  private:
    [[noreturn]] void fail(const std::string& why) const {
        throw std::runtime_error(std::string(source_) + ": JSON error at byte " +
                                 std::to_string(pos_) + ": " + why);
    }
    void skip_space() {
        while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
            ++pos_;
        }
    }
    char peek() {
        skip_space();
        if (pos_ >= text_.size()) {
            fail("unexpected end of the document");
        }
        return text_[pos_];
    }
    void expect(char c) {
        if (peek() != c) {
            fail(std::string("expected '") + c + "'");
        }
        ++pos_;
    }
    unsigned hex4() {
        if (text_.size() - pos_ < 4) {
            fail("a \\u escape needs four hex digits");
        }
        unsigned code = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = text_[pos_++];
            code <<= 4;
            if (c >= '0' && c <= '9') {
                code |= static_cast<unsigned>(c - '0');
            } else if (c >= 'a' && c <= 'f') {
                code |= static_cast<unsigned>(c - 'a' + 10);
            } else if (c >= 'A' && c <= 'F') {
                code |= static_cast<unsigned>(c - 'A' + 10);
            } else {
                fail("a \\u escape needs four hex digits");
            }
        }
        return code;
    }
    static void append_utf8(std::string& out, unsigned code) {
        if (code < 0x80) {
            out.push_back(static_cast<char>(code));
        } else if (code < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (code >> 6)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
        } else if (code < 0x10000) {
            out.push_back(static_cast<char>(0xE0 | (code >> 12)));
            out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
        } else {
            out.push_back(static_cast<char>(0xF0 | (code >> 18)));
            out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
        }
    }
    unsigned escaped_code_point() {
        unsigned code = hex4();
        if (code >= 0xD800 && code < 0xDC00) {  // a surrogate pair's high half
            if (text_.substr(pos_, 2) != "\\u") {
                fail("a high surrogate without its low half");
            }
            pos_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low >= 0xE000) {
                fail("a high surrogate without its low half");
            }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        } else if (code >= 0xDC00 && code < 0xE000) {
            fail("a low surrogate alone");
        }
        return code;
    }
    std::string string_value() {
        expect('"');
        std::string out;
        while (true) {
            if (pos_ >= text_.size()) {
                fail("unterminated string");
            }
            const char c = text_[pos_++];
            if (c == '"') {
                return out;
            }
            if (static_cast<unsigned char>(c) < 0x20) {
                fail("a control character inside a string");
            }
            if (c != '\\') {
                out.push_back(c);
                continue;
            }
            if (pos_ >= text_.size()) {
                fail("unterminated escape");
            }
            switch (const char e = text_[pos_++]) {
                case '"': case '\\': case '/': out.push_back(e); break;
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'n': out.push_back('\n'); break;
                case 'r': out.push_back('\r'); break;
                case 't': out.push_back('\t'); break;
                case 'u': append_utf8(out, escaped_code_point()); break;
                default: fail(std::string("unknown escape '\\") + e + "'");
            }
        }
    }
    void number(const std::string& path) {
        const size_t start = pos_;
        if (pos_ < text_.size() && text_[pos_] == '-') {
            ++pos_;
        }
        const auto digits = [&] {
            const size_t from = pos_;
            while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
                ++pos_;
            }
            return pos_ - from;
        };
        if (digits() == 0) {
            fail("expected a value");
        }
        bool integral = true;
        if (pos_ < text_.size() && text_[pos_] == '.') {
            ++pos_;
            integral = false;
            if (digits() == 0) {
                fail("a number needs digits after its '.'");
            }
        }
        if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
            ++pos_;
            integral = false;
            if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) {
                ++pos_;
            }
            if (digits() == 0) {
                fail("a number needs digits in its exponent");
            }
        }
        const std::string literal(text_.substr(start, pos_ - start));
        json_scalar s;
        s.type = json_scalar::kind::number;
        s.number = std::strtod(literal.c_str(), nullptr);
        s.integer = integral ? std::strtoll(literal.c_str(), nullptr, 10)
                             : static_cast<int64_t>(s.number);
        out_[path] = std::move(s);
    }
    void value(const std::string& path, int depth) {
        if (depth > max_depth) {
            fail("nested deeper than " + std::to_string(max_depth) + " levels");
        }
        const char c = peek();
        if (c == '{') {
            ++pos_;
            if (peek() == '}') {
                ++pos_;
                return;
            }
            while (true) {
                const std::string key = string_value();
                expect(':');
                value(path.empty() ? key : path + "/" + key, depth + 1);
                if (peek() == ',') {
                    ++pos_;
                    continue;
                }
                expect('}');
                return;
            }
        }
        if (c == '[') {
            ++pos_;
            if (peek() == ']') {
                ++pos_;
                return;
            }
            for (size_t index = 0;; ++index) {
                value(path.empty() ? std::to_string(index) : path + "/" + std::to_string(index),
                      depth + 1);
                if (peek() == ',') {
                    ++pos_;
                    continue;
                }
                expect(']');
                return;
            }
        }
        if (c == '"') {
            json_scalar s;
            s.type = json_scalar::kind::string;
            s.text = string_value();
            out_[path] = std::move(s);
            return;
        }
        for (const std::string_view word : {"true", "false", "null"}) {
            if (text_.substr(pos_, word.size()) == word) {
                pos_ += word.size();
                json_scalar s;
                s.type = word == "null" ? json_scalar::kind::null : json_scalar::kind::boolean;
                s.number = word == "true" ? 1 : 0;
                s.integer = word == "true" ? 1 : 0;
                out_[path] = std::move(s);
                return;
            }
        }
        number(path);
    }

    std::string_view text_;
    std::string_view source_;
    std::map<std::string, json_scalar>& out_;
    size_t pos_ = 0;
};

}  // namespace

json_paths::json_paths(std::string_view text, std::string_view source) {
    json_parser(text, source, values_).parse();
}

const json_scalar* json_paths::find(const std::string& path) const {
    const auto it = values_.find(path);
    return it == values_.end() ? nullptr : &it->second;
}

std::optional<std::string> json_paths::string_at(const std::string& path) const {
    const json_scalar* s = find(path);
    return s != nullptr && s->type == json_scalar::kind::string ? std::optional(s->text)
                                                                : std::nullopt;
}

std::optional<int64_t> json_paths::integer_at(const std::string& path) const {
    const json_scalar* s = find(path);
    return s != nullptr && s->type == json_scalar::kind::number ? std::optional(s->integer)
                                                                : std::nullopt;
}

std::optional<double> json_paths::number_at(const std::string& path) const {
    const json_scalar* s = find(path);
    return s != nullptr && s->type == json_scalar::kind::number ? std::optional(s->number)
                                                                : std::nullopt;
}

std::optional<bool> json_paths::boolean_at(const std::string& path) const {
    const json_scalar* s = find(path);
    return s != nullptr && s->type == json_scalar::kind::boolean ? std::optional(s->integer != 0)
                                                                 : std::nullopt;
}

size_t json_paths::array_size(const std::string& path) const {
    const std::string prefix = path.empty() ? "" : path + "/";
    size_t size = 0;
    while (true) {
        const std::string element = prefix + std::to_string(size);
        const auto it = values_.lower_bound(element);
        // An element exists when a value sits at its path or under it ("element/...").
        if (it == values_.end() ||
            (it->first != element && it->first.rfind(element + "/", 0) != 0)) {
            return size;
        }
        ++size;
    }
}

}  // namespace memtrail::snapshot
