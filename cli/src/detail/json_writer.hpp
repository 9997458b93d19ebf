#pragma once
// A small streaming JSON writer for the --json reports and the Perfetto export: commas, nesting
// and string escaping handled here, nothing else.

#include <cstdint>
#include <ostream>
#include <string_view>
#include <vector>

namespace memtrail::cli {

class json_writer {
  public:
    explicit json_writer(std::ostream& out) : out_(out) {}

    json_writer& begin_object();
    json_writer& end_object();
    json_writer& begin_array();
    json_writer& end_array();
    json_writer& key(std::string_view name);

    json_writer& value(std::string_view text);
    json_writer& value(const char* text) { return value(std::string_view(text)); }
    json_writer& value(uint64_t number);
    json_writer& value(int64_t number);
    json_writer& value(int number) { return value(static_cast<int64_t>(number)); }
    json_writer& value(double number);  // NaN and infinities are written as null
    json_writer& value(bool flag);
    json_writer& null();
    // A JSON document written by another writer (a command's --json), placed as one value.
    json_writer& raw_value(std::string_view json);

    template <typename T>
    json_writer& field(std::string_view name, const T& v) {
        key(name);
        return value(v);
    }

  private:
    void before_value();
    void write_string(std::string_view text);

    std::ostream& out_;
    std::vector<bool> has_items_;  // per open container
    bool after_key_ = false;
};

}  // namespace memtrail::cli
