// make_rank_files BASE DIFFERENT DIFFERENT_RANK COUNT OUT_DIR [memtrail|pickle] [JOB_ID]
//
// A job of COUNT ranks made from real snapshots, for `memtrail ranks` at scale (its tests and
// bench/ranks): every rank is BASE, rank DIFFERENT_RANK is DIFFERENT, each written to
// OUT_DIR/rank<R>.memtrail with its job identity set (job JOB_ID, rank R, local rank R % 8,
// world size COUNT, host node-<R / 8>, pid 1000 + R), or to OUT_DIR/rank<R>.pickle (PyTorch's
// pickle carries no identity: the rank is in the name). Pickles of BASE are one file, hard-linked
// under each rank's name (copied where links cannot be made), so 10,000 of them cost one.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "memtrail/snapshot/load.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace fs = std::filesystem;
namespace ms = memtrail::snapshot;

namespace {

std::vector<uint8_t> encoded(ms::snapshot s, int rank, int count, bool pickle,
                             const std::string& job) {
    if (pickle) {
        return ms::write_torch_pickle(s);
    }
    s.info.job = {job, rank, rank % 8, count};
    s.info.host = "node-" + std::to_string(rank / 8);
    s.info.pid = 1000 + rank;
    return ms::write_snapshot(s);
}

void write(const fs::path& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out) {
        std::fprintf(stderr, "make_rank_files: %s: cannot write\n", path.c_str());
        std::exit(2);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 6 || argc > 8) {
        std::fprintf(stderr,
                     "usage: make_rank_files BASE DIFFERENT DIFFERENT_RANK COUNT OUT_DIR "
                     "[memtrail|pickle] [JOB_ID]\n");
        return 2;
    }
    const ms::snapshot base = *ms::load_snapshot(fs::path(argv[1])).snapshot;
    const ms::snapshot different = *ms::load_snapshot(fs::path(argv[2])).snapshot;
    const int different_rank = std::atoi(argv[3]);
    const int count = std::atoi(argv[4]);
    const fs::path folder = argv[5];
    const bool pickle = argc > 6 && std::string(argv[6]) == "pickle";
    const std::string job = argc > 7 ? argv[7] : "job-1";
    fs::create_directories(folder);
    std::optional<fs::path> base_pickle;
    for (int rank = 0; rank < count; ++rank) {
        const ms::snapshot& source = rank == different_rank ? different : base;
        const fs::path path =
            folder / ("rank" + std::to_string(rank) + (pickle ? ".pickle" : ".memtrail"));
        fs::remove(path);
        if (pickle && rank != different_rank && base_pickle) {
            std::error_code error;
            fs::create_hard_link(*base_pickle, path, error);
            if (!error) {
                continue;
            }
        }
        write(path, encoded(source, rank, count, pickle, job));
        if (pickle && rank != different_rank) {
            base_pickle = path;
        }
    }
    return 0;
}
