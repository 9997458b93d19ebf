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

kept_loads::~kept_loads() {
    alive = nullptr;
}

kept_loads* kept_loads::current() {
    return alive;
}

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
    return found == views_.end() ? nullptr : found->second.view;
}

void kept_loads::keep_view(std::shared_ptr<const snapshot::snapshot> recorded,
                           analysis::frame_visibility frames,
                           std::shared_ptr<const snapshot::snapshot> view) {
    const snapshot::snapshot* key = recorded.get();
    views_.insert_or_assign({key, frames}, kept_view{std::move(recorded), std::move(view)});
}

const analysis::device_model* kept_loads::model_of(const snapshot::snapshot& source,
                                                   int device) const {
    const auto found = models_.find({&source, device});
    return found == models_.end() ? nullptr : &found->second;
}

void kept_loads::keep_model(const analysis::device_model& model) {
    models_.insert_or_assign({&model.source(), model.device()}, model);
}

std::shared_ptr<const analysis::category_map> kept_loads::categories_of(
    const analysis::device_model& model) const {
    const auto found = categories_.find({&model.source(), model.device()});
    return found == categories_.end() ? nullptr : found->second.categories;
}

void kept_loads::keep_categories(const analysis::device_model& model,
                                 std::shared_ptr<const analysis::category_map> categories) {
    categories_.insert_or_assign({&model.source(), model.device()},
                                 kept_categories{model, std::move(categories)});
}

}  // namespace memtrail::cli
