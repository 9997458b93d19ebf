#include "detail/kept_loads.hpp"

#include <stdexcept>

namespace memtrail::cli {
namespace {

kept_loads* alive = nullptr;

}  // namespace

kept_loads::kept_loads() {
    if (alive != nullptr) {
        throw std::logic_error("kept_loads: one is alive already (they do not nest)");
    }
    alive = this;
}

kept_loads::~kept_loads() { alive = nullptr; }

kept_loads* kept_loads::current() { return alive; }

const snapshot::loaded_snapshot* kept_loads::snapshot_at(const std::string& path) const {
    const auto found = snapshots_.find(path);
    return found == snapshots_.end() ? nullptr : &found->second;
}

void kept_loads::keep_snapshot(const std::string& path, const snapshot::loaded_snapshot& loaded) {
    snapshots_.insert_or_assign(path, loaded);
}

std::shared_ptr<const snapshot::snapshot> kept_loads::view_of(
    const snapshot::snapshot& recorded, analysis::frame_visibility frames) const {
    const auto found = views_.find({&recorded, frames});
    return found == views_.end() ? nullptr : found->second;
}

void kept_loads::keep_view(const snapshot::snapshot& recorded, analysis::frame_visibility frames,
                           std::shared_ptr<const snapshot::snapshot> view) {
    views_.insert_or_assign({&recorded, frames}, std::move(view));
}

const analysis::device_model* kept_loads::model_of(const snapshot::snapshot& source,
                                                   int device) const {
    const auto found = models_.find({&source, device});
    return found == models_.end() ? nullptr : &found->second;
}

void kept_loads::keep_model(const analysis::device_model& model) {
    models_.insert_or_assign({&model.source(), model.device()}, model);
}

}  // namespace memtrail::cli
