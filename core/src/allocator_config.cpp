// Parsing of PYTORCH_CUDA_ALLOC_CONF-style settings. The options, in one table:
//
// | key                               | default   | meaning                                       |
// |-----------------------------------|-----------|-----------------------------------------------|
// | max_split_size_mb                 | unlimited | blocks this large (MiB, >= 20) are not split  |
// | max_non_split_rounding_mb         | 20        | slack (MiB, >= 20) an oversize request takes  |
// | garbage_collection_threshold      | 0 (off)   | reclaim cache above this fraction (0..1)      |
// | roundup_power2_divisions          | 0 (off)   | N, or [MiB:N,...,>:N] per size interval       |
// | expandable_segments               | False     | grow one segment per stream instead           |
// | release_lock_on_cudamalloc        | False     | drop the lock around device allocations       |
// | callback_reserved_rate            | 0.2       | memtrail: no free-memory callbacks below this |
// | callback_allocated_rate           | 0.8       | memtrail: full collection at this
// allocated/total | | callback_allocated_reserved_rate  | 0.8       | memtrail: full collection at
// this allocated/reserved | | pinned_use_cuda_host_register, pinned_num_register_threads,
// pinned_use_background_threads, | pinned_reserve_segment_size_mb,
// graph_capture_record_stream_reuse: PyTorch host-memory and graph |   keys, accepted (so a PyTorch
// configuration can be reused) and ignored. | backend                           | native    | only
// `native` (cudaMallocAsync is PyTorch's)  |

#include <bit>
#include <cerrno>
#include <cstdlib>

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

class parser {
  public:
    parser(std::string_view text) : text_(text), tokens_(tokenize(text)) {}

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
    void expect(const char* token, const std::string& key) {
        const std::string got = next(token);
        if (got != token) {
            fail("expected '" + std::string(token) + "' after '" + key + "' but found '" + got +
                 "'");
        }
    }
    [[noreturn]] void fail(const std::string& why) const {
        throw config_error("memtrail: bad allocator configuration \"" + std::string(text_) +
                           "\": " + why);
    }
    uint64_t unsigned_value(const std::string& key, const char* accepted) {
        const std::string v = next("a value");
        errno = 0;
        char* end = nullptr;
        const unsigned long long parsed = std::strtoull(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || errno == ERANGE || v[0] == '-') {
            fail("'" + key + "' has value '" + v + "'; accepted: " + accepted);
        }
        return parsed;
    }
    double fraction_value(const std::string& key, bool open_interval) {
        const std::string v = next("a value");
        char* end = nullptr;
        const double parsed = std::strtod(v.c_str(), &end);
        const bool in_range =
            open_interval ? (parsed > 0.0 && parsed < 1.0) : (parsed >= 0.0 && parsed <= 1.0);
        if (v.empty() || *end != '\0' || !in_range) {
            fail("'" + key + "' has value '" + v + "'; accepted: a number " +
                 (open_interval ? "between 0 and 1 (exclusive)" : "from 0 to 1"));
        }
        return parsed;
    }
    bool bool_value(const std::string& key) {
        const std::string v = next("a value");
        if (v == "True" || v == "true") {
            return true;
        }
        if (v == "False" || v == "false") {
            return false;
        }
        fail("'" + key + "' has value '" + v + "'; accepted: True or False");
    }

  private:
    std::string_view text_;
    std::vector<std::string> tokens_;
    size_t i_ = 0;
};

void parse_roundup(parser& p, allocator_config& config) {
    const std::string key = "roundup_power2_divisions";
    auto& divisions = config.roundup_power2_divisions;
    if (p.peek() != "[") {
        const uint64_t value = p.unsigned_value(key, "a power of two, or [MiB:N,...,>:N]");
        if (!std::has_single_bit(value)) {
            p.fail("'" + key + "' has value " + std::to_string(value) +
                   "; accepted: a power of two (1, 2, 4, 8, ...)");
        }
        divisions.assign(roundup_interval_count, value);
        return;
    }
    p.expect("[", key);
    bool first = true;
    size_t last_index = 0;
    while (p.peek() != "]") {
        const std::string boundary = p.next("an interval");
        p.expect(":", boundary);
        const uint64_t value = p.unsigned_value(key, "0 or a power of two");
        if (value != 0 && !std::has_single_bit(value)) {
            p.fail("'" + key + "' interval " + boundary + " has " + std::to_string(value) +
                   " divisions; accepted: 0 or a power of two");
        }
        if (boundary == ">") {
            std::fill(divisions.begin() + static_cast<std::ptrdiff_t>(last_index + 1),
                      divisions.end(), value);
        } else {
            char* end = nullptr;
            const unsigned long long mb = std::strtoull(boundary.c_str(), &end, 10);
            if (boundary.empty() || *end != '\0' || !std::has_single_bit(mb)) {
                p.fail("'" + key + "' interval '" + boundary +
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
        if (p.peek() != "]") {
            p.expect(",", key);
        }
    }
    p.expect("]", key);
}

}  // namespace

allocator_config allocator_config::parse(std::string_view text) {
    allocator_config config;
    config.source = std::string(text);
    parser p(text);
    while (!p.done()) {
        const std::string key = p.next("a key");
        if (key == "roundup_power2_divisions") {
            p.expect(":", key);
            parse_roundup(p, config);
        } else {
            p.expect(":", key);
            if (key == "max_split_size_mb") {
                const uint64_t mb = p.unsigned_value(key, "a whole number of MiB, at least 20");
                if (mb < 20) {
                    p.fail("'max_split_size_mb' is " + std::to_string(mb) +
                           "; accepted: at least 20 (MiB)");
                }
                config.max_split_size = std::min(mb, UINT64_MAX / mib) * mib;
            } else if (key == "max_non_split_rounding_mb") {
                const uint64_t mb = p.unsigned_value(key, "a whole number of MiB, at least 20");
                if (mb < 20) {
                    p.fail("'max_non_split_rounding_mb' is " + std::to_string(mb) +
                           "; accepted: at least 20 (MiB)");
                }
                config.max_non_split_rounding_size = std::min(mb, UINT64_MAX / mib) * mib;
            } else if (key == "garbage_collection_threshold") {
                config.garbage_collection_threshold = p.fraction_value(key, true);
            } else if (key == "expandable_segments") {
                config.expandable_segments = p.bool_value(key);
            } else if (key == "release_lock_on_cudamalloc") {
                config.release_lock_on_device_malloc = p.bool_value(key);
            } else if (key == "callback_reserved_rate") {
                config.callback_reserved_rate = p.fraction_value(key, false);
            } else if (key == "callback_allocated_rate") {
                config.callback_allocated_rate = p.fraction_value(key, false);
            } else if (key == "callback_allocated_reserved_rate") {
                config.callback_allocated_reserved_rate = p.fraction_value(key, false);
            } else if (key == "pinned_use_cuda_host_register" ||
                       key == "pinned_use_background_threads" ||
                       key == "graph_capture_record_stream_reuse") {
                p.bool_value(key);
            } else if (key == "pinned_num_register_threads" ||
                       key == "pinned_reserve_segment_size_mb") {
                p.unsigned_value(key, "a whole number");
            } else if (key == "backend") {
                const std::string backend = p.next("a backend");
                if (backend != "native") {
                    p.fail("'backend' is '" + backend +
                           "'; accepted: native (cudaMallocAsync is PyTorch's other allocator)");
                }
            } else {
                p.fail("unknown key '" + key +
                       "'; accepted: max_split_size_mb, max_non_split_rounding_mb, "
                       "garbage_collection_threshold, roundup_power2_divisions, "
                       "expandable_segments, release_lock_on_cudamalloc, callback_reserved_rate, "
                       "callback_allocated_rate, callback_allocated_reserved_rate, backend, "
                       "pinned_use_cuda_host_register, pinned_num_register_threads, "
                       "pinned_use_background_threads, pinned_reserve_segment_size_mb, "
                       "graph_capture_record_stream_reuse");
            }
        }
        if (!p.done()) {
            p.expect(",", key);
        }
    }
    return config;
}

allocator_config allocator_config::from_environment() {
    const char* text = std::getenv("MEMTRAIL_ALLOC_CONF");
    return text ? parse(text) : allocator_config{};
}

uint64_t allocator_config::divisions_for(uint64_t size) const {
    return size_rules::divisions_for(size, roundup_power2_divisions);
}

}  // namespace memtrail
