#include "memtrail/viewer/load_job.hpp"

#include <exception>
#include <iterator>

namespace memtrail::viewer {

load_job::load_job(std::string path, analysis::frame_visibility frames, load_hold hold)
    : path_(std::move(path)) {
    if (hold == load_hold::at_preview) {
        progress_.hold_at_preview();
    }
    thread_ = std::thread([this, frames] {
        try {
            result_ = load_document(path_, progress_, frames);
        } catch (const std::exception& e) {
            error_ = e.what();
        }
        done_ = true;  // publishes result_ and error_ to the UI thread
    });
}

load_job::~load_job() {
    progress_.release();
    thread_.join();
}

const char* load_job::stage() const {
    const int stage = progress_.stage.load();
    return stage >= 0 && stage < static_cast<int>(std::size(load_stage_names))
               ? load_stage_names[stage]
               : "";
}

}  // namespace memtrail::viewer
