#include "detail/interpose_settings.hpp"

namespace memtrail::interpose {

namespace {

interpose_settings read_settings() {
    const recorder::librecorder::environment_settings read =
        recorder::librecorder::read_environment();
    return {read.mode, read.simulated_device, read.exit_dump_pattern, read.job};
}

}  // namespace

const interpose_settings& settings() {
    static const interpose_settings parsed = read_settings();
    return parsed;
}

}  // namespace memtrail::interpose
