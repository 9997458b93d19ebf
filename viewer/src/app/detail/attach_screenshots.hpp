#pragma once
// memtrail-viewer --attach PID --screenshot OUT.png: pictures of a running process followed by
// the viewer, each with a text file beside it saying what it shows (for tests and bug reports).

#include "command_line.hpp"

namespace memtrail::viewer::app {

// Follows opts.attach and writes OUT.png once its first state is shown, or with opts.every
// OUT-1.png, OUT-2.png, ... every opts.every seconds, the last once the process has exited; then
// saves what was received to opts.save when given. Returns the exit status.
int run_attach_screenshots(const options& opts);

}  // namespace memtrail::viewer::app
