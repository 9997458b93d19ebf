#include "detail/command_capture.hpp"

#include <iostream>
#include <sstream>
#include <stdexcept>

#include "detail/commands.hpp"

namespace memtrail::cli {
namespace {

// Points std::cout at a buffer for its lifetime; restored on every way out, exceptions included.
class standard_output_capture {
  public:
    standard_output_capture() : previous_(std::cout.rdbuf(buffer_.rdbuf())) {}
    ~standard_output_capture() { std::cout.rdbuf(previous_); }
    standard_output_capture(const standard_output_capture&) = delete;
    standard_output_capture& operator=(const standard_output_capture&) = delete;
    std::string text() const { return buffer_.str(); }

  private:
    std::ostringstream buffer_;
    std::streambuf* previous_;
};

}  // namespace

std::string command_output(std::string_view name, const std::vector<std::string>& arguments) {
    for (const auto& [command_name, cmd] : all_commands()) {
        if (command_name != name) {
            continue;
        }
        const parsed_arguments args = parse_arguments(cmd.spec(), arguments);
        standard_output_capture capture;
        const int code = cmd.run(args);
        if (code != exit_ok) {
            throw std::runtime_error("memtrail " + std::string(name) + " exited with code " +
                                     std::to_string(code));
        }
        return capture.text();
    }
    throw std::logic_error("no command named " + std::string(name));
}

}  // namespace memtrail::cli
