// memtrail: reports on allocator snapshots (memtrail's own files and PyTorch pickles).
// Exit codes: 0 ok, 1 a check failed, 2 bad usage or a file that cannot be used. Every error
// goes to stderr and starts with "memtrail: ".

#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "detail/commands.hpp"
#include "detail/common.hpp"

namespace memtrail::cli {
namespace {

void print_overview(std::ostream& out) {
    out << "usage: memtrail COMMAND [ARGS] [--help]\n\n"
           "Reports on CUDA allocator snapshots: memtrail snapshots (plain or zstd) and PyTorch\n"
           "snapshot pickles (torch.cuda.memory._dump_snapshot), recognised by content.\n\n"
           "commands:\n";
    for (const auto& [name, cmd] : all_commands()) {
        const command_spec spec = cmd.spec();
        out << "  " << name << std::string(name.size() < 10 ? 10 - name.size() : 1, ' ')
            << spec.usage << "\n";
    }
    out << "\nSizes are printed and accepted like 1.5GiB (also plain bytes, KiB/MiB/GiB/TiB and "
           "KB/MB/GB/TB).\n"
           "A FILE of '-' is read from standard input; '-o -' writes standard output.\n"
           "Exit codes: 0 ok, 1 a check failed, 2 bad usage or a bad file.\n"
           "'memtrail COMMAND --help' describes a command.\n";
}

int run(const std::vector<std::string>& argv) {
    if (argv.empty()) {
        std::cerr << "memtrail: no command given\n\n";
        print_overview(std::cerr);
        return exit_bad_input;
    }
    const std::string& name = argv[0];
    if (name == "--help" || name == "-h" || name == "help") {
        if (name == "help" && argv.size() > 1) {
            return run({argv[1], "--help"});
        }
        print_overview(std::cout);
        return exit_ok;
    }
    if (name == "--version") {
        std::cout << "memtrail " << MEMTRAIL_VERSION << "\n";
        return exit_ok;
    }
    for (const auto& [command_name, cmd] : all_commands()) {
        if (command_name != name) {
            continue;
        }
        const command_spec spec = cmd.spec();
        try {
            const parsed_arguments args =
                parse_arguments(spec, std::vector<std::string>(argv.begin() + 1, argv.end()));
            if (args.help_requested) {
                std::cout << help_text(spec);
                return exit_ok;
            }
            return cmd.run(args);
        } catch (const usage_error& e) {
            // Usage errors name what was wrong; the command they belong to is added here.
            std::cerr << "memtrail: " << name << ": " << printable(e.what()) << "\n";
            return exit_bad_input;
        }
    }
    std::cerr << "memtrail: unknown command '" << printable(name) << "' (see memtrail --help)\n";
    return exit_bad_input;
}

}  // namespace
}  // namespace memtrail::cli

int main(int argc, char** argv) {
    using namespace memtrail;
    try {
        return cli::run(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const std::exception& e) {
        // Every error line starts with "memtrail: "; load errors go on with the path. What it
        // quotes from a file or the command line is escaped: it cannot forge lines or codes.
        std::cerr << "memtrail: " << cli::printable(e.what()) << "\n";
    } catch (...) {
        std::cerr << "memtrail: an unexpected error that names no reason\n";
    }
    return cli::exit_bad_input;
}
