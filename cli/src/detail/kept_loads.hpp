#pragma once
// The snapshots, their views of the frames and their models that `memtrail report` keeps while
// it runs the commands it embeds: each command opens the file as it would alone (open_file), and
// what it loads, folds or indexes is taken from here when an earlier command made it, so each
// file is read once and each model built once. With no kept_loads alive nothing is kept: a lone
// command loads afresh and holds nothing after it.

#include <map>
#include <memory>
#include <string>
#include <tuple>

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
    void keep_view(const snapshot::snapshot& recorded, analysis::frame_visibility frames,
                   std::shared_ptr<const snapshot::snapshot> view);

    // The model of `device` built over `source`, or nullptr.
    const analysis::device_model* model_of(const snapshot::snapshot& source, int device) const;
    void keep_model(const analysis::device_model& model);

  private:
    std::map<std::string, snapshot::loaded_snapshot> snapshots_;
    // Keyed by the snapshots' addresses: the snapshots kept above (and the models' own sources)
    // hold them alive as long as the keys are used.
    std::map<std::tuple<const snapshot::snapshot*, analysis::frame_visibility>,
             std::shared_ptr<const snapshot::snapshot>>
        views_;
    std::map<std::tuple<const snapshot::snapshot*, int>, analysis::device_model> models_;
};

}  // namespace memtrail::cli
