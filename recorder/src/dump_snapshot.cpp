#include "memtrail/recorder/recorder.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace memtrail::recorder {

void recorder::dump_snapshot(const std::filesystem::path& path) {
    const snapshot::snapshot taken = take_snapshot();
    if (path.extension() == ".pickle") {
        snapshot::write_torch_pickle(taken, path);
    } else {
        snapshot::write_snapshot(taken, path);
    }
}

}  // namespace memtrail::recorder
