// Writes memtrail snapshots for the CLI tests, with the numbers the CLI must report computed
// here from the reference allocator's own states (not by the analysis library):
//   make_test_snapshot random OUT.mtrail OUT.json [--zstd]
//   make_test_snapshot oom OUT.mtrail OUT.json

#include <cstdio>
#include <map>
#include <string>

#include "memtrail/snapshot/msgpack_format.hpp"
#include "reference_allocator.hpp"

namespace {

using namespace memtrail;
using snapshot::block_state;

struct totals {
    uint64_t reserved = 0;
    uint64_t allocated = 0;
    uint64_t pending = 0;
    uint64_t free = 0;
    uint64_t largest_free = 0;
};

totals totals_of(const std::vector<snapshot::segment>& segments) {
    totals t;
    for (const auto& seg : segments) {
        t.reserved += seg.total_size;
        for (const auto& blk : seg.blocks) {
            if (blk.state == block_state::active_allocated) {
                t.allocated += blk.size;
            } else if (blk.state == block_state::active_pending_free) {
                t.pending += blk.size;
            } else {
                t.free += blk.size;
                t.largest_free = std::max(t.largest_free, blk.size);
            }
        }
    }
    return t;
}

void write_totals(FILE* out, const char* name, const totals& t) {
    std::fprintf(
        out,
        "\"%s\": {\"reserved\": %llu, \"allocated\": %llu, \"pending_free\": %llu, "
        "\"free\": %llu, \"largest_free\": %llu}",
        name, static_cast<unsigned long long>(t.reserved),
        static_cast<unsigned long long>(t.allocated), static_cast<unsigned long long>(t.pending),
        static_cast<unsigned long long>(t.free), static_cast<unsigned long long>(t.largest_free));
}

int write_random(const std::string& path, const std::string& expected, bool zstd) {
    snapshot::snapshot snap;
    snap.info.producer = "memtrail test";
    const auto stacks = memtrail::analysis::testing::make_stacks(snap, 5);
    memtrail::analysis::testing::reference_allocator allocator(snap);
    memtrail::analysis::testing::run_random_workload(allocator, stacks, 2024, 800);
    allocator.finish();
    const auto& states = allocator.states();

    FILE* out = std::fopen(expected.c_str(), "w");
    if (out == nullptr) {
        return 2;
    }
    std::fprintf(out, "{\"entries\": %zu, ", states.size() - 1);
    write_totals(out, "end", totals_of(states.back()));
    // Peaks and the state after a few entries.
    uint64_t peak_allocated = 0;
    uint64_t peak_reserved = 0;
    size_t peak_allocated_position = 0;
    for (size_t p = 0; p < states.size(); ++p) {
        const totals t = totals_of(states[p]);
        if (t.allocated > peak_allocated) {
            peak_allocated = t.allocated;
            peak_allocated_position = p;
        }
        peak_reserved = std::max(peak_reserved, t.reserved);
    }
    std::fprintf(out,
                 ", \"peak_allocated\": %llu, \"peak_allocated_entry\": %zu, "
                 "\"peak_reserved\": %llu, \"at\": {",
                 static_cast<unsigned long long>(peak_allocated), peak_allocated_position - 1,
                 static_cast<unsigned long long>(peak_reserved));
    bool first = true;
    for (size_t entry = 0; entry + 1 < states.size(); entry += 97) {
        std::fprintf(out, "%s\"%zu\": {", first ? "" : ", ", entry);
        write_totals(out, "totals", totals_of(states[entry + 1]));
        std::fprintf(out, "}");
        first = false;
    }
    // Live bytes per innermost function at the end.
    std::map<std::string, uint64_t> by_function;
    for (const auto& seg : states.back()) {
        for (const auto& blk : seg.blocks) {
            if (blk.state == block_state::active_allocated) {
                const auto& frames = snap.stack_at(blk.stack);
                const std::string name =
                    frames.empty() ? "[no stack recorded]"
                                   : std::string(snap.string_at(snap.frame_at(frames[0]).function));
                by_function[name] += blk.size;
            }
        }
    }
    std::fprintf(out, "}, \"by_innermost_function\": {");
    first = true;
    for (const auto& [name, bytes] : by_function) {
        std::fprintf(out, "%s\"%s\": %llu", first ? "" : ", ", name.c_str(),
                     static_cast<unsigned long long>(bytes));
        first = false;
    }
    std::fprintf(out, "}, \"segments\": [");
    first = true;
    for (const auto& seg : states.back()) {
        const totals t = totals_of({seg});
        std::fprintf(out, "%s[%llu, %llu, %llu, %llu, %llu, %llu, %zu]", first ? "" : ", ",
                     static_cast<unsigned long long>(seg.address),
                     static_cast<unsigned long long>(seg.total_size),
                     static_cast<unsigned long long>(t.allocated),
                     static_cast<unsigned long long>(t.pending),
                     static_cast<unsigned long long>(t.free),
                     static_cast<unsigned long long>(t.largest_free), seg.blocks.size());
        first = false;
    }
    std::fprintf(out, "]}\n");
    std::fclose(out);
    snapshot::write_options options;
    options.compress = zstd ? snapshot::compression::zstd : snapshot::compression::none;
    snapshot::write_snapshot(snap, std::filesystem::path(path), options);
    return 0;
}

// One 30 MiB segment: 10 MiB free, 10 MiB held, 10 MiB free; then a 20 MiB request fails with
// 4 MiB free on a 64 MiB device. Enough memory is free, but in pieces: fragmentation.
int write_oom(const std::string& path, const std::string& expected) {
    constexpr uint64_t mib = 1ull << 20;
    snapshot::snapshot snap;
    snap.info.devices.push_back(snapshot::device_properties{0, "test", 64 * mib, 9, 0, 132});
    const auto stacks = memtrail::analysis::testing::make_stacks(snap, 3);
    memtrail::analysis::testing::reference_allocator allocator(snap);
    allocator.free(allocator.allocate(30 * mib, 7, stacks[0]), false);
    const uint64_t a = allocator.allocate(10 * mib, 7, stacks[0]);
    const uint64_t middle = allocator.allocate(10 * mib, 7, stacks[1]);
    const uint64_t b = allocator.allocate(10 * mib, 7, stacks[2]);
    allocator.free(a, false);
    allocator.free(b, false);
    snapshot::trace_entry oom;
    oom.kind = snapshot::action::oom;
    oom.address = 4 * mib;
    oom.size = 20 * mib;
    oom.stream = 7;
    oom.stack = stacks[2];
    snap.trace_for(0).entries.push_back(oom);
    allocator.finish();
    FILE* out = std::fopen(expected.c_str(), "w");
    if (out == nullptr) {
        return 2;
    }
    std::fprintf(out,
                 "{\"oom_entry\": %zu, \"requested\": %llu, \"device_free\": %llu, "
                 "\"device_total\": %llu, \"blocker\": %llu, \"verdict\": \"fragmentation\"}\n",
                 snap.trace_for(0).entries.size() - 1, static_cast<unsigned long long>(20 * mib),
                 static_cast<unsigned long long>(4 * mib),
                 static_cast<unsigned long long>(64 * mib),
                 static_cast<unsigned long long>(middle));
    std::fclose(out);
    snapshot::write_snapshot(snap, std::filesystem::path(path));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 4 && std::string(argv[1]) == "random") {
        return write_random(argv[2], argv[3], argc > 4 && std::string(argv[4]) == "--zstd");
    }
    if (argc == 4 && std::string(argv[1]) == "oom") {
        return write_oom(argv[2], argv[3]);
    }
    std::fprintf(stderr, "usage: make_test_snapshot random|oom OUT.mtrail OUT.json [--zstd]\n");
    return 2;
}
