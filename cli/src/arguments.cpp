#include "detail/arguments.hpp"

#include <charconv>
#include <sstream>

#include "detail/text_table.hpp"
#include "memtrail/analysis/size_text.hpp"

namespace memtrail::cli {
namespace {

constexpr size_t help_width = 90;
constexpr size_t help_column = 32;  // where option descriptions start

const option_spec* find_option(const command_spec& spec, std::string_view name) {
    for (const auto& option : spec.options) {
        if (option.name == name || (!option.short_name.empty() && option.short_name == name)) {
            return &option;
        }
    }
    return nullptr;
}

}  // namespace

std::optional<std::string> parsed_arguments::value(std::string_view name) const {
    const auto it = values_.find(std::string(name));
    if (it == values_.end() || it->second.empty()) {
        return std::nullopt;
    }
    return it->second.back();
}

const std::vector<std::string>& parsed_arguments::values(std::string_view name) const {
    static const std::vector<std::string> none;
    const auto it = values_.find(std::string(name));
    return it == values_.end() ? none : it->second;
}

parsed_arguments parse_arguments(const command_spec& spec, const std::vector<std::string>& args) {
    parsed_arguments parsed;
    bool only_positional = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (only_positional || arg.size() < 2 || arg[0] != '-') {
            parsed.positional.push_back(arg);
            only_positional = only_positional || spec.positional_ends_options;
            continue;
        }
        if (arg == "--") {
            only_positional = true;
            continue;
        }
        if (arg == "--help" || arg == "-h") {
            parsed.help_requested = true;
            continue;
        }
        if (arg == "--json" && spec.has_json) {
            parsed.json = true;
            continue;
        }
        std::string name = arg;
        std::optional<std::string> inline_value;
        if (const size_t equals = arg.find('=');
            arg.starts_with("--") && equals != std::string::npos) {
            name = arg.substr(0, equals);
            inline_value = arg.substr(equals + 1);
        }
        const option_spec* option = find_option(spec, name);
        if (option == nullptr) {
            throw usage_error("unknown option " + name + " (see memtrail " + spec.name +
                              " --help)");
        }
        auto& slot = parsed.values_[option->name];
        if (!slot.empty() && !option->repeatable) {
            throw usage_error(option->name + " given more than once");
        }
        if (option->value_name.empty()) {
            if (inline_value) {
                throw usage_error(option->name + " takes no value");
            }
            slot.emplace_back();
            continue;
        }
        if (inline_value) {
            slot.push_back(*inline_value);
        } else if (i + 1 < args.size()) {
            slot.push_back(args[++i]);
        } else {
            throw usage_error(option->name + " needs a value (" + option->value_name + ")");
        }
    }
    if (parsed.help_requested) {
        return parsed;
    }
    if (parsed.positional.size() < spec.min_positional) {
        throw usage_error("missing arguments; usage: memtrail " + spec.name + " " + spec.usage);
    }
    if (parsed.positional.size() > spec.max_positional) {
        throw usage_error("too many arguments (unexpected '" +
                          parsed.positional[spec.max_positional] + "'); usage: memtrail " +
                          spec.name + " " + spec.usage);
    }
    return parsed;
}

std::string help_text(const command_spec& spec) {
    std::ostringstream out;
    out << "usage: memtrail " << spec.name << " " << spec.usage << "\n\n"
        << wrap_text(spec.summary, help_width) << "\noptions:\n";
    const std::string column(help_column, ' ');
    auto line = [&](const std::string& left, const std::string& help) {
        out << "  " << left;
        if (left.size() + 2 < help_column) {
            out << std::string(help_column - 2 - left.size(), ' ');
        } else {
            out << "\n" << column;
        }
        out << wrap_text(help, help_width - help_column, column);
    };
    for (const auto& option : spec.options) {
        std::string left =
            option.short_name.empty() ? option.name : option.short_name + ", " + option.name;
        if (!option.value_name.empty()) {
            left += " " + option.value_name;
        }
        line(left, option.help + (option.repeatable ? " (repeatable)" : ""));
    }
    if (spec.has_json) {
        line("--json", "print the report as JSON on stdout");
    }
    line("-h, --help", "show this help");
    if (!spec.details.empty()) {
        out << "\n" << wrap_text(spec.details, help_width);
    }
    return out.str();
}

uint64_t parse_size_option(std::string_view option, std::string_view text) {
    const auto bytes = analysis::parse_bytes(text);
    if (!bytes) {
        throw usage_error(std::string(option) + ": '" + std::string(text) +
                          "' is not a size (examples: 1073741824, 1.5GiB, 512MiB, 2GB)");
    }
    return *bytes;
}

double parse_fraction_option(std::string_view option, std::string_view text) {
    double value = 0.0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || !(value >= 0.0) ||
        value > 1.0) {
        throw usage_error(std::string(option) + ": '" + std::string(text) +
                          "' is not a fraction between 0 and 1");
    }
    return value;
}

uint64_t parse_count_option(std::string_view option, std::string_view text) {
    uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
        throw usage_error(std::string(option) + ": '" + std::string(text) +
                          "' is not a whole number");
    }
    return value;
}

}  // namespace memtrail::cli
