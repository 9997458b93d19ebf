#pragma once
// memtrail-viewer's command line:
//   memtrail-viewer --help | --version
//   memtrail-viewer [--all-frames] [FILE...]
//   memtrail-viewer --screenshot OUT.png [--view NAME] [--at EVENT|peak|end] [--size WxH]
//                   [--device N] [--all-frames] [--fit-rows] [--stack-by KIND]
//                   [--range FIRST:LAST]
//                   FILE [FILE2...]
//   memtrail-viewer --attach PID [--screenshot OUT.png [--every SECONDS] [--save FILE]]

#include <sys/types.h>
#include <cstddef>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memtrail::viewer::app {

struct options {
    std::vector<std::string> files;
    std::string screenshot;  // "" = interactive
    std::string view = "timeline";
    std::string at = "peak";
    std::string stack_by;  // the timeline's stacking; "": its default
    // The selected range of event positions; with one FILE the compare view compares its ends.
    std::optional<std::pair<size_t, size_t>> range;
    int device = -1;  // -1: the first device with a trace
    int width = 1600;
    int height = 900;
    bool fit_rows = false;    // the Segments view's "fit each row"
    bool all_frames = false;  // every frame shown, PyTorch's plumbing unfolded
    pid_t attach = 0;         // 0: none; else the process to follow
    // With --attach and --screenshot: a picture every `every` seconds until the process exits
    // (OUT-1.png, OUT-2.png, ...); 0: one picture of the first state received.
    double every = 0;
    std::string
        save;  // with --attach and --screenshot: where to save what was received, at the end
    bool help = false;
    bool version = false;
};

// Throws std::invalid_argument with a message fit for the user.
options parse_command_line(int argc, char** argv);

const char* usage();

}  // namespace memtrail::viewer::app
