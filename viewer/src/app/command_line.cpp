#include "detail/command_line.hpp"

#include <stdexcept>
#include <string_view>

namespace memtrail::viewer::app {

namespace {

int parse_int(std::string_view text, const char* what) {
    int value = 0;
    size_t used = 0;
    try {
        value = std::stoi(std::string(text), &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size()) {
        throw std::invalid_argument(std::string("bad ") + what + ": '" + std::string(text) + "'");
    }
    return value;
}

}  // namespace

const char* usage() {
    return "usage: memtrail-viewer [--all-frames] [FILE...]\n"
           "       memtrail-viewer --attach PID\n"
           "       memtrail-viewer --help | --version\n"
           "       memtrail-viewer --screenshot OUT.png [--view NAME] [--at ENTRY|peak|end]\n"
           "                       [--size WxH] [--device N] [--all-frames] [--fit-rows]\n"
           "                       [--stack-by KIND]\n"
           "                       [--range FIRST:LAST] FILE [FILE2...]\n"
           "       memtrail-viewer --attach PID --screenshot OUT.png [--every SECONDS]\n"
           "                       [--save FILE] [--view NAME] [--size WxH]\n"
           "FILE: a memtrail snapshot (plain or zstd) or a PyTorch snapshot pickle; several\n"
           "      files are the ranks of one job (one file per rank). Rank summaries\n"
           "      (memtrail summarize's .summary.json) and folders of them or of snapshots\n"
           "      open as one heatmap of every rank, outliers first (snapshots without a\n"
           "      summary are summarized on every core).\n"
           "NAME: timeline, segments, flame, events, allocation, stats, oom, compare, ranks\n"
           "      (compare shows FILE against FILE2; ranks shows every FILE side by side, or\n"
           "      the heatmap of the rank summaries and folders given),\n"
           "      or loading: the window while the files load, at their first picture.\n"
           "--at: the moment shown: the state after trace entry ENTRY (the CLI's \"entry N\"),\n"
           "      the peak (the default: the first moment allocated memory is highest) or\n"
           "      the end; the compare view sets the files side by side at their peaks or ends.\n"
           "--all-frames: show every frame of the stacks, PyTorch's plumbing unfolded\n"
           "      (View > Every frame).\n"
           "--fit-rows: the Segments view draws every row as wide, not to scale\n"
           "      (its \"fit each row\").\n"
           "KIND: what the timeline stacks: category (the default where categories are\n"
           "      known), stack, allocation or segment.\n"
           "--range: select the event positions FIRST to LAST, as a drag on the timeline does;\n"
           "      with one FILE the compare view sets the range's start against its end.\n"
           "--attach: follow the running process PID (one of this user's that records with\n"
           "      memtrail; File > Attach lists them): its tab grows as it runs.\n"
           "      With --screenshot: OUT.png once its first state is shown, or with --every\n"
           "      OUT-1.png, OUT-2.png, ... every SECONDS until it exits, the last once it has;\n"
           "      beside each, OUT[-N].txt says what it shows. --save FILE then writes what\n"
           "      was received (a .pickle name: a PyTorch pickle).\n";
}

options parse_command_line(int argc, char** argv) {
    options result;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        auto value = [&](const char* name) -> std::string_view {
            if (i + 1 >= argc) {
                throw std::invalid_argument(std::string(name) + " needs a value");
            }
            return argv[++i];
        };
        if (arg == "-h" || arg == "--help") {
            result.help = true;
        } else if (arg == "--version") {
            result.version = true;
        } else if (arg == "--screenshot") {
            result.screenshot = value("--screenshot");
        } else if (arg == "--view") {
            result.view = value("--view");
        } else if (arg == "--at") {
            result.at = value("--at");
        } else if (arg == "--all-frames") {
            result.all_frames = true;
        } else if (arg == "--fit-rows") {
            result.fit_rows = true;
        } else if (arg == "--stack-by") {
            result.stack_by = value("--stack-by");
        } else if (arg == "--range") {
            const std::string_view range = value("--range");
            const size_t colon = range.find(':');
            if (colon == std::string_view::npos) {
                throw std::invalid_argument("--range wants FIRST:LAST, e.g. 100:2000");
            }
            const int first = parse_int(range.substr(0, colon), "range start");
            const int last = parse_int(range.substr(colon + 1), "range end");
            if (first < 0 || last < 0) {
                throw std::invalid_argument("--range wants positions of 0 or more");
            }
            result.range = std::pair<size_t, size_t>(first, last);
        } else if (arg == "--attach") {
            const int pid = parse_int(value("--attach"), "process id");
            if (pid <= 0) {
                throw std::invalid_argument("--attach wants a process id above 0");
            }
            result.attach = pid;
        } else if (arg == "--every") {
            const std::string text(value("--every"));
            size_t used = 0;
            try {
                result.every = std::stod(text, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used == 0 || used != text.size() || !(result.every > 0)) {
                throw std::invalid_argument("--every wants seconds above 0, e.g. 0.5, not '" +
                                            text + "'");
            }
        } else if (arg == "--save") {
            result.save = value("--save");
        } else if (arg == "--device") {
            result.device = parse_int(value("--device"), "device");
        } else if (arg == "--size") {
            const std::string_view size = value("--size");
            const size_t x = size.find('x');
            if (x == std::string_view::npos) {
                throw std::invalid_argument("--size wants WxH, e.g. 1600x900");
            }
            result.width = parse_int(size.substr(0, x), "width");
            result.height = parse_int(size.substr(x + 1), "height");
            if (result.width < 64 || result.height < 64) {
                throw std::invalid_argument("--size must be at least 64x64");
            }
        } else if (arg.size() > 1 && arg[0] == '-') {
            throw std::invalid_argument("unknown option '" + std::string(arg) + "'");
        } else {
            result.files.emplace_back(arg);
        }
    }
    if (result.attach != 0 && !result.files.empty()) {
        throw std::invalid_argument("--attach follows one process: give it no FILE");
    }
    if (!result.screenshot.empty() && result.files.empty() && result.attach == 0) {
        throw std::invalid_argument("--screenshot needs a FILE (or --attach PID)");
    }
    if ((result.every > 0 || !result.save.empty()) &&
        (result.attach == 0 || result.screenshot.empty())) {
        throw std::invalid_argument("--every and --save go with --attach PID --screenshot OUT.png");
    }
    return result;
}

}  // namespace memtrail::viewer::app
