#pragma once
// A small, strict JSON reader that flattens a document into its scalar values by path: the keys
// of nested objects and the indices of arrays joined with '/' ("ooms/0/remedies/tried/1/setting").
// Enough for the small JSON files and reports memtrail reads back (trace metadata, `memtrail oom
// --json`), without a dependency.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace memtrail::snapshot {

struct json_scalar {
    enum class kind : uint8_t { number, string, boolean, null };
    kind type = kind::null;
    double number = 0;     // numbers, and booleans as 0 or 1
    int64_t integer = 0;   // an integer number exactly; others truncated
    std::string text;      // strings, unescaped (UTF-8)
};

class json_paths {
  public:
    // Parses `text`; throws std::runtime_error naming `source` and the byte offset of the error.
    json_paths(std::string_view text, std::string_view source);

    const std::map<std::string, json_scalar>& values() const { return values_; }
    const json_scalar* find(const std::string& path) const;
    std::optional<std::string> string_at(const std::string& path) const;
    std::optional<int64_t> integer_at(const std::string& path) const;
    std::optional<double> number_at(const std::string& path) const;
    std::optional<bool> boolean_at(const std::string& path) const;
    // How many elements the array at `path` has: the first index with no value under it (an
    // element that is an empty object or array leaves no value, so it ends the count).
    size_t array_size(const std::string& path) const;

  private:
    std::map<std::string, json_scalar> values_;
};

}  // namespace memtrail::snapshot
