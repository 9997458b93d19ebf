#pragma once
// The snapshots, their views of the frames, their models and the models' categories that
// `memtrail report` keeps while it runs the commands it embeds: each command opens the file as it
// would alone (open_file), and what it loads, folds or indexes is taken from here when an earlier
// command made it, so each file is read once and each model and category map built once. With no
// kept_loads alive nothing is kept: a lone command loads afresh and holds nothing after it.

#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "memtrail/analysis/categories.hpp"
#include "memtrail/analysis/device_model.hpp"
#include "memtrail/analysis/frame_filter.hpp"
#include "memtrail/snapshot/load.hpp"

namespace memtrail::cli {

// One alive at a time, on the thread that runs the commands; what it keeps is released with it.
class kept_loads {
  public:
    kept_loads();
    ~kept_loads();
    kept_loads(const kept_loads&) = delete;
    kept_loads& operator=(const kept_loads&) = delete;

    // The one alive, or nullptr.
    static kept_loads* current();

    // The snapshot loaded from `path` (as given on the command line), or nullptr.
    const snapshot::loaded_snapshot* snapshot_at(const std::string& path) const;
    void keep_snapshot(const std::string& path, const snapshot::loaded_snapshot& loaded);

    // `recorded` as `frames` shows it (analysis::with_frame_visibility), or nullptr.
    std::shared_ptr<const snapshot::snapshot> view_of(const snapshot::snapshot& recorded,
                                                      analysis::frame_visibility frames) const;
    void keep_view(std::shared_ptr<const snapshot::snapshot> recorded,
                   analysis::frame_visibility frames,
                   std::shared_ptr<const snapshot::snapshot> view);

    // The model of `device` built over `source`, or nullptr.
    const analysis::device_model* model_of(const snapshot::snapshot& source, int device) const;
    void keep_model(const analysis::device_model& model);

    // The categories of `model` (analysis::category_map::build), or nullptr.
    std::shared_ptr<const analysis::category_map> categories_of(
        const analysis::device_model& model) const;
    void keep_categories(const analysis::device_model& model,
                         std::shared_ptr<const analysis::category_map> categories);

  private:
    std::map<std::string, snapshot::loaded_snapshot> snapshots_;
    // Keyed by the snapshots' addresses; each value holds its key's snapshot alive (the recorded
    // snapshot beside its view, the model its source), so no key is ever a freed address reused.
    struct kept_view {
        std::shared_ptr<const snapshot::snapshot> recorded;
        std::shared_ptr<const snapshot::snapshot> view;
    };
    struct kept_categories {
        analysis::device_model model;
        std::shared_ptr<const analysis::category_map> categories;
    };
    std::map<std::tuple<const snapshot::snapshot*, analysis::frame_visibility>, kept_view> views_;
    std::map<std::tuple<const snapshot::snapshot*, int>, analysis::device_model> models_;
    std::map<std::tuple<const snapshot::snapshot*, int>, kept_categories> categories_;
};

}  // namespace memtrail::cli
