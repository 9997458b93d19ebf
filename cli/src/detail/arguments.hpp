#pragma once
// Command-line parsing for the subcommands: each declares its options once (name, value or
// flag, help line) and gets --help, error messages and "--name=value" for free.

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memtrail::cli {

// Bad usage: exit code 2. The message says what is wrong ("--at: 'x' is not ..."); main prints
// it as "memtrail: COMMAND: message".
class usage_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct option_spec {
    std::string name;        // "--at"
    std::string short_name;  // "-n", or ""
    std::string value_name;  // "EVENT|peak|end"; empty for a flag
    std::string help;
    bool repeatable = false;
};

struct command_spec {
    std::string name;     // "top"
    std::string usage;    // "FILE... [--at EVENT|peak|end] [-n N]"
    std::string summary;  // one line
    std::string details;  // paragraphs after the options, may be empty
    size_t min_positional = 0;
    size_t max_positional = SIZE_MAX;
    std::vector<option_spec> options;  // --help and --json are added by the parser when asked
    bool has_json = true;
    // Everything from the first positional argument on is positional: the command line of a
    // program to run (memtrail run ./prog --its-own-flag).
    bool positional_ends_options = false;
};

class parsed_arguments {
  public:
    std::vector<std::string> positional;

    bool has(std::string_view name) const { return values_.contains(std::string(name)); }
    // The last value given, or nullopt.
    std::optional<std::string> value(std::string_view name) const;
    const std::vector<std::string>& values(std::string_view name) const;
    bool help_requested = false;
    bool json = false;

  private:
    friend parsed_arguments parse_arguments(const command_spec& spec,
                                            const std::vector<std::string>& args);
    std::map<std::string, std::vector<std::string>> values_;
};

// Throws usage_error naming the command and the problem.
parsed_arguments parse_arguments(const command_spec& spec, const std::vector<std::string>& args);

std::string help_text(const command_spec& spec);

// Parsers for option values; they throw usage_error naming the option.
uint64_t parse_size_option(std::string_view option, std::string_view text);
double parse_fraction_option(std::string_view option, std::string_view text);
uint64_t parse_count_option(std::string_view option, std::string_view text);

}  // namespace memtrail::cli
