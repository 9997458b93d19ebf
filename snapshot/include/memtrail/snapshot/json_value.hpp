#pragma once
// memtrail's one JSON reader, for the JSON it reads back (rank summaries, `memtrail oom --json`
// for the viewer, trace metadata): a tree of values, numbers kept as their text so 64-bit
// integers stay exact, nesting bounded so that a hostile file cannot exhaust the stack. Errors name
// the byte offset and what was expected there.

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memtrail::snapshot {

class json_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct json_value {
    enum class type : uint8_t { null, boolean, number, string, array, object };
    type kind = type::null;
    bool flag = false;
    std::string text;  // a string's value, or a number as written
    std::vector<json_value> items;
    std::map<std::string, json_value, std::less<>> members;

    // Typed access; each throws json_error naming `what` when the value is of another type.
    const json_value& at(std::string_view key, std::string_view what) const;
    const json_value* find(std::string_view key) const;
    uint64_t as_uint(std::string_view what) const;
    int64_t as_int(std::string_view what) const;
    double as_double(std::string_view what) const;
    bool as_bool(std::string_view what) const;
    const std::string& as_string(std::string_view what) const;
    const std::vector<json_value>& as_array(std::string_view what) const;
};

// Parses one JSON document (surrounding white space allowed). Throws json_error ("at byte 12:
// expected ':' after an object key").
json_value parse_json(std::string_view text);

}  // namespace memtrail::snapshot
