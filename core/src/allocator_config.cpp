// Parsing of PYTORCH_CUDA_ALLOC_CONF-style settings, driven by one table of keys
// (allocator_options() below; docs/configuration.md says what each key means).

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <set>

#include "memtrail/core/allocator_config.hpp"

namespace memtrail {

namespace {

constexpr uint64_t mib = 1ull << 20;

// Splits "a:b,c:[d:e]" into tokens: words and the single characters , : [ ]
std::vector<std::string> tokenize(std::string_view text) {
    std::vector<std::string> tokens;
    std::string word;
    auto flush = [&] {
        if (!word.empty()) {
            tokens.push_back(word);
            word.clear();
        }
    };
    for (char c : text) {
        if (c == ',' || c == ':' || c == '[' || c == ']') {
            flush();
            tokens.emplace_back(1, c);
        } else if (c == ' ' || c == '\t' || c == '\n') {
            flush();
        } else {
            word.push_back(c);
        }
    }
    flush();
    return tokens;
}

}  // namespace

namespace detail {

// The tokens of one configuration string, read from the front; every error names the string.
class config_reader {
  public:
    config_reader(std::string_view text, std::string_view origin)
        : text_(text), origin_(origin), tokens_(tokenize(text)) {}

    bool done() const { return i_ >= tokens_.size(); }
    const std::string& peek() const {
        static const std::string end = "<end>";
        return done() ? end : tokens_[i_];
    }
    std::string next(const char* what) {
        if (done()) {
            fail("expected " + std::string(what) + " but the configuration ends");
        }
        return tokens_[i_++];
    }
    void expect(const char* token, std::string_view key) {
        const std::string got = next(token);
        if (got != token) {
            fail("expected '" + std::string(token) + "' after '" + std::string(key) +
                 "' but found '" + got + "'");
        }
    }
    [[noreturn]] void fail(const std::string& why) const {
        const std::string from = origin_.empty() ? "" : std::string(origin_) + ": ";
        throw config_error("memtrail: " + from + "bad allocator configuration \"" +
                           std::string(text_) + "\": " + why);
    }
    [[noreturn]] void reject(const allocator_option& option, const std::string& value) const {
        fail("'" + std::string(option.key) + "' has value '" + value +
             "'; accepted: " + std::string(option.accepted));
    }
    uint64_t unsigned_value(const allocator_option& option) {
        const std::string v = next("a value");
        errno = 0;
        char* end = nullptr;
        const unsigned long long parsed = std::strtoull(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || errno == ERANGE || v[0] == '-') {
            reject(option, v);
        }
        return parsed;
    }

  private:
    std::string_view text_;
    std::string_view origin_;
    std::vector<std::string> tokens_;
    size_t i_ = 0;
};

}  // namespace detail

namespace {

using detail::config_reader;

// --- the readers: one per kind of value, each checks what its table row accepts ------------

uint64_t read_whole_number(config_reader& r, const allocator_option& option) {
    return r.unsigned_value(option);
}

// Whole MiB, at least 20 (PyTorch's lower bound for both size keys); returned in bytes.
uint64_t read_mib_from_20(config_reader& r, const allocator_option& option) {
    const uint64_t mb = r.unsigned_value(option);
    if (mb < 20) {
        r.fail("'" + std::string(option.key) + "' is " + std::to_string(mb) +
               "; accepted: " + std::string(option.accepted));
    }
    return std::min(mb, UINT64_MAX / mib) * mib;
}

double read_fraction(config_reader& r, const allocator_option& option, bool open_interval) {
    const std::string v = r.next("a value");
    char* end = nullptr;
    const double parsed = std::strtod(v.c_str(), &end);
    const bool in_range =
        open_interval ? (parsed > 0.0 && parsed < 1.0) : (parsed >= 0.0 && parsed <= 1.0);
    if (v.empty() || *end != '\0' || !in_range) {
        r.reject(option, v);
    }
    return parsed;
}

double read_open_fraction(config_reader& r, const allocator_option& option) {
    return read_fraction(r, option, true);
}

double read_closed_fraction(config_reader& r, const allocator_option& option) {
    return read_fraction(r, option, false);
}

bool read_bool(config_reader& r, const allocator_option& option) {
    const std::string v = r.next("a value");
    if (v == "True" || v == "true") {
        return true;
    }
    if (v == "False" || v == "false") {
        return false;
    }
    r.reject(option, v);
}

std::string read_backend(config_reader& r, const allocator_option& option) {
    const std::string backend = r.next("a backend");
    if (backend != "native") {
        r.fail("'backend' is '" + backend + "'; accepted: " + std::string(option.accepted) +
               " (cudaMallocAsync is PyTorch's other allocator)");
    }
    return backend;
}

// N (a power of two) for every interval, or [MiB:N,...,>:N] per interval, as PyTorch fills them.
std::vector<uint64_t> read_divisions(config_reader& r, const allocator_option& option) {
    const std::string key(option.key);
    std::vector<uint64_t> divisions(roundup_interval_count, 0);
    if (r.peek() != "[") {
        const uint64_t value = r.unsigned_value(option);
        if (!std::has_single_bit(value)) {
            r.fail("'" + key + "' has value " + std::to_string(value) +
                   "; accepted: a power of two (1, 2, 4, 8, ...)");
        }
        divisions.assign(roundup_interval_count, value);
        return divisions;
    }
    r.expect("[", key);
    bool first = true;
    size_t last_index = 0;
    while (r.peek() != "]") {
        const std::string boundary = r.next("an interval");
        r.expect(":", boundary);
        const uint64_t value = r.unsigned_value(option);
        if (value != 0 && !std::has_single_bit(value)) {
            r.fail("'" + key + "' interval " + boundary + " has " + std::to_string(value) +
                   " divisions; accepted: 0 or a power of two");
        }
        if (boundary == ">") {
            std::fill(divisions.begin() + static_cast<std::ptrdiff_t>(last_index + 1),
                      divisions.end(), value);
        } else {
            char* end = nullptr;
            const unsigned long long mb = std::strtoull(boundary.c_str(), &end, 10);
            if (boundary.empty() || *end != '\0' || !std::has_single_bit(mb)) {
                r.fail("'" + key + "' interval '" + boundary +
                       "' is not accepted; accepted: a power of two in MiB (1, 2, ... 32768) or >");
            }
            const size_t index = std::min<size_t>(static_cast<size_t>(std::countr_zero(mb)),
                                                  roundup_interval_count - 1);
            if (first) {
                std::fill(divisions.begin(), divisions.begin() + static_cast<std::ptrdiff_t>(index),
                          value);
                first = false;
            }
            divisions[index] = value;
            last_index = index;
        }
        if (r.peek() != "]") {
            r.expect(",", key);
        }
    }
    r.expect("]", key);
    return divisions;
}

// --- how a row stores what its reader returns -----------------------------------------------

template <auto member, auto read>
void store(config_reader& r, const allocator_option& option, allocator_config& config) {
    config.*member = read(r, option);
}

// PyTorch's keys for host memory and CUDA graphs: checked, so that a typo is still an error, and
// dropped.
template <auto read>
void check_only(config_reader& r, const allocator_option& option, allocator_config&) {
    read(r, option);
}

using settings = allocator_config;

// Long enough for a line of its own.
constexpr std::string_view divisions_accepted =
    "a power of two, or [MiB:N,...,>:N] with MiB a power of two (1 to 32768) and N 0 or a power of "
    "two";

// clang-format off
constexpr auto options = std::to_array<allocator_option>({
    // key                                 default      accepted                                parser and member
    {"max_split_size_mb",                 "unlimited", "whole MiB, at least 20",               store<&settings::max_split_size, read_mib_from_20>},
    {"max_non_split_rounding_mb",         "20",        "whole MiB, at least 20",               store<&settings::max_non_split_rounding_size, read_mib_from_20>},
    {"garbage_collection_threshold",      "0 (off)",   "a number between 0 and 1, exclusive",  store<&settings::garbage_collection_threshold, read_open_fraction>},
    {"roundup_power2_divisions",          "0 (off)",   divisions_accepted,                     store<&settings::roundup_power2_divisions, read_divisions>},
    {"expandable_segments",               "False",     "True or False",                        store<&settings::expandable_segments, read_bool>},
    {"release_lock_on_cudamalloc",        "False",     "True or False",                        store<&settings::release_lock_on_device_malloc, read_bool>},
    {"callback_reserved_rate",            "0.2",       "a number from 0 to 1",                 store<&settings::callback_reserved_rate, read_closed_fraction>},
    {"callback_allocated_rate",           "0.8",       "a number from 0 to 1",                 store<&settings::callback_allocated_rate, read_closed_fraction>},
    {"callback_allocated_reserved_rate",  "0.8",       "a number from 0 to 1",                 store<&settings::callback_allocated_reserved_rate, read_closed_fraction>},
    {"backend",                           "native",    "native",                               check_only<read_backend>},
    {"pinned_use_cuda_host_register",     "",          "True or False",                        check_only<read_bool>},
    {"pinned_num_register_threads",       "",          "a whole number",                       check_only<read_whole_number>},
    {"pinned_use_background_threads",     "",          "True or False",                        check_only<read_bool>},
    {"pinned_reserve_segment_size_mb",    "",          "a whole number",                       check_only<read_whole_number>},
    {"graph_capture_record_stream_reuse", "",          "True or False",                        check_only<read_bool>},
});
// clang-format on

std::string accepted_keys() {
    std::string keys;
    for (const allocator_option& option : options) {
        keys += (keys.empty() ? "" : ", ") + std::string(option.key);
    }
    return keys;
}

}  // namespace

std::span<const allocator_option> allocator_options() {
    return options;
}

allocator_config allocator_config::parse(std::string_view text, std::string_view origin) {
    allocator_config config;
    config.source = std::string(text);
    config_reader r(text, origin);
    std::set<std::string_view> seen;
    while (!r.done()) {
        const std::string key = r.next("a key");
        const auto option = std::find_if(options.begin(), options.end(),
                                         [&](const allocator_option& o) { return o.key == key; });
        if (option == options.end()) {
            r.fail("unknown key '" + key + "'; accepted: " + accepted_keys());
        }
        if (!seen.insert(option->key).second) {
            r.fail("'" + key + "' is given twice; accepted: each key once");
        }
        r.expect(":", key);
        option->parse(r, *option, config);
        if (!r.done()) {
            r.expect(",", key);
        }
    }
    return config;
}

uint64_t allocator_config::divisions_for(uint64_t size) const {
    return size_rules::divisions_for(size, roundup_power2_divisions);
}

}  // namespace memtrail
