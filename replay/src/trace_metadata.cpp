// A small JSON reader: enough for the metadata files (objects, arrays, strings, numbers,
// booleans, null), strict about syntax, with byte offsets in its errors.

#include "memtrail/replay/trace_metadata.hpp"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <variant>
#include <vector>

namespace memtrail::replay {

namespace {

class json_reader {
  public:
    json_reader(std::string text, std::string name)
        : text_(std::move(text)), name_(std::move(name)) {}

    // Calls on_value(path, number) for every number; keys of nested objects joined with '/'.
    template <typename F>
    void read(F on_number, std::map<std::string, std::string>& strings) {
        value("", on_number, strings);
        skip_space();
        if (pos_ != text_.size()) {
            fail("unexpected text after the document");
        }
    }

  private:
    [[noreturn]] void fail(const std::string& why) const {
        throw std::runtime_error(name_ + ": JSON error at byte " + std::to_string(pos_) + ": " +
                                 why);
    }
    void skip_space() {
        while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
            ++pos_;
        }
    }
    char peek() {
        skip_space();
        if (pos_ >= text_.size()) {
            fail("unexpected end of file");
        }
        return text_[pos_];
    }
    void expect(char c) {
        if (peek() != c) {
            fail(std::string("expected '") + c + "'");
        }
        ++pos_;
    }
    std::string string_value() {
        expect('"');
        std::string out;
        while (pos_ < text_.size() && text_[pos_] != '"') {
            if (text_[pos_] == '\\') {
                if (++pos_ >= text_.size()) {
                    fail("unterminated escape");
                }
            }
            out.push_back(text_[pos_++]);
        }
        if (pos_ >= text_.size()) {
            fail("unterminated string");
        }
        ++pos_;
        return out;
    }
    template <typename F>
    void value(const std::string& path, F& on_number, std::map<std::string, std::string>& strings) {
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
                value(path.empty() ? key : path + "/" + key, on_number, strings);
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
            for (int index = 0;; ++index) {
                value(path + "/" + std::to_string(index), on_number, strings);
                if (peek() == ',') {
                    ++pos_;
                    continue;
                }
                expect(']');
                return;
            }
        }
        if (c == '"') {
            strings[path] = string_value();
            return;
        }
        for (const char* word : {"true", "false", "null"}) {
            const std::string w = word;
            if (text_.compare(pos_, w.size(), w) == 0) {
                pos_ += w.size();
                if (w != "null") {
                    on_number(path, w == "true" ? 1.0 : 0.0, w == "true" ? 1 : 0);
                }
                return;
            }
        }
        const size_t start = pos_;
        while (pos_ < text_.size() &&
               (std::isdigit(static_cast<unsigned char>(text_[pos_])) ||
                std::string("+-.eE").find(text_[pos_]) != std::string::npos)) {
            ++pos_;
        }
        if (start == pos_) {
            fail("expected a value");
        }
        const std::string number = text_.substr(start, pos_ - start);
        char* end = nullptr;
        const double d = std::strtod(number.c_str(), &end);
        const long long i = std::strtoll(number.c_str(), nullptr, 10);
        on_number(path, d,
                  number.find_first_of(".eE") == std::string::npos ? i : static_cast<long long>(d));
    }

    std::string text_;
    std::string name_;
    size_t pos_ = 0;
};

}  // namespace

trace_metadata read_trace_metadata(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw std::runtime_error(path.string() + ": cannot open");
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    trace_metadata meta;
    std::map<std::string, std::string> strings;
    std::map<std::string, long long> top_numbers;
    bool has_stats_object = false;
    json_reader(buffer.str(), path.string())
        .read(
            [&](const std::string& key, double d, long long i) {
                if (key.rfind("stats/", 0) == 0) {
                    has_stats_object = true;
                    meta.stats[key.substr(6)] = i;
                } else if (key == "fraction") {
                    meta.fraction = d;
                } else if (key == "device_total") {
                    meta.device_total = static_cast<uint64_t>(i);
                }
                top_numbers[key] = i;
            },
            strings);
    if (!has_stats_object) {
        for (const auto& [key, value] : top_numbers) {
            meta.stats[key] = value;
        }
    }
    if (auto it = strings.find("conf"); it != strings.end() && it->second != "default") {
        meta.conf = it->second;
    }
    return meta;
}

}  // namespace memtrail::replay
