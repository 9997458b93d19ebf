// The unwinders' names, apart from the unwinders: the settings reader (librecorder's table, linked
// into the interposer too) parses them without bringing the stack walkers along.

#include "memtrail/stacks/stack_capture.hpp"

namespace memtrail::recorder {

std::string_view unwinder_name(unwinder method) {
    switch (method) {
        case unwinder::frame_pointer:
            return "frame_pointer";
        case unwinder::eh_frame:
            return "eh_frame";
        case unwinder::libunwind:
            break;
    }
    return "libunwind";
}

bool parse_unwinder(std::string_view name, unwinder& out) {
    for (const unwinder method :
         {unwinder::libunwind, unwinder::eh_frame, unwinder::frame_pointer}) {
        if (name == unwinder_name(method)) {
            out = method;
            return true;
        }
    }
    return false;
}

}  // namespace memtrail::recorder
