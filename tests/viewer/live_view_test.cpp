// A viewer following a running process (live_trace, view::carry_over): the recording put
// together from a first snapshot, the event stream and a later state is the one a full snapshot
// taken at that moment holds, and the views of it show what that snapshot's views show.
// The recorder runs here, on a simulated device, as librecorder runs it in a process.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "detail/attach_dialog.hpp"
#include "memtrail/analysis/frame_text.hpp"
#include "memtrail/core/caching_allocator.hpp"
#include "memtrail/core/simulated_device.hpp"
#include "memtrail/live/endpoint_folder.hpp"
#include "memtrail/recorder/recorder.hpp"
#include "memtrail/viewer/attachable_processes.hpp"
#include "memtrail/viewer/live_session.hpp"
#include "memtrail/viewer/live_trace.hpp"
#include "view_test_support.hpp"

namespace memtrail::viewer {
namespace {

constexpr uint64_t mib = 1ull << 20;
using contents = recorder::recorder::snapshot_contents;

// A process's allocator and recorder, and the steps of a job that keeps 1 MiB more each step.
struct recorded_process {
    simulated_device gpu{[] {
        simulated_device_options options;
        options.capacity = 1024 * mib;
        return options;
    }()};
    caching_allocator allocator{{&gpu}};
    recorder::recorder history{allocator};
    std::vector<device_address> kept;

    explicit recorded_process(size_t ring_entries = recorder::default_max_entries) {
        recorder::history_options options;
        options.max_entries = ring_entries;
        history.record_memory_history(options);
    }

    [[gnu::noinline]] void step() {
        const device_address work = history.allocate(8 * mib, 0);
        kept.push_back(history.allocate(mib, 0));
        history.free(work);
    }
    void steps(int count) {
        for (int i = 0; i < count; ++i) {
            step();
        }
    }
    // The snapshot and the ends its cut gives a subscriber.
    std::pair<snapshot::snapshot, std::vector<uint64_t>> take(contents what) {
        std::vector<uint64_t> ends;
        snapshot::snapshot taken = history.take_snapshot(what, &ends);
        return {std::move(taken), ends};
    }
    // The stream from `from` on, in frames of at most `most` entries, into `trace`.
    void stream_into(live_trace& trace, uint64_t from, size_t most) {
        for (;;) {
            recorder::recorder::trace_events batch = history.take_events(0, from, most);
            ASSERT_EQ(batch.missed, 0u);
            if (batch.next == from) {
                return;
            }
            trace.append(batch.events, 0, from, batch.next);
            from = batch.next;
        }
    }
};

// An entry as text: its ids replaced by what they name, which differ between snapshots.
std::string entry_text(const snapshot::snapshot& s, const snapshot::trace_entry& e) {
    std::string text = std::string(snapshot::action_name(e.kind)) + " " +
                       std::to_string(e.address) + " " + std::to_string(e.size) + " " +
                       std::to_string(e.time_ns) + " " + std::string(s.string_at(e.name));
    for (const std::string& frame : analysis::stack_labels(s, e.stack)) {
        text += " | " + frame;
    }
    return text;
}

std::vector<std::string> trace_text(const snapshot::snapshot& s) {
    std::vector<std::string> lines;
    for (const snapshot::trace_entry& e : s.find_trace(0)->entries) {
        lines.push_back(entry_text(s, e));
    }
    return lines;
}

std::vector<std::string> block_text(const snapshot::snapshot& s) {
    std::vector<std::string> lines;
    for (const snapshot::segment& segment : s.segments) {
        for (const snapshot::block& b : segment.blocks) {
            std::string line = std::to_string(b.address) + " " + std::to_string(b.size) + " " +
                               std::string(snapshot::block_state_name(b.state));
            for (const std::string& frame : analysis::stack_labels(s, b.stack)) {
                line += " | " + frame;
            }
            lines.push_back(line);
        }
    }
    return lines;
}

std::shared_ptr<const document> document_of(snapshot::snapshot s) {
    load_progress progress;
    return make_document(std::make_shared<const snapshot::snapshot>(std::move(s)), "process",
                         progress);
}

TEST(LiveTrace, TheStreamAfterAFirstSnapshotCutAtALaterOneIsThatSnapshot) {
    recorded_process p;
    p.steps(5);
    auto [first, first_ends] = p.take(contents::full);
    p.steps(12);
    // A full snapshot as the later state: the recording put together must be it, entry by entry.
    auto [later, later_ends] = p.take(contents::full);
    live_trace trace;
    trace.start(first, first_ends);
    p.stream_into(trace, first_ends[0], 7);  // several frames, as the endpoint sends them
    const std::optional<snapshot::snapshot> cut = trace.cut(later, later_ends);
    ASSERT_TRUE(cut);
    EXPECT_GT(trace_text(*cut).size(), trace_text(first).size());
    EXPECT_EQ(trace_text(*cut), trace_text(later));
    EXPECT_EQ(block_text(*cut), block_text(later));
    EXPECT_EQ(trace.received_ends(), later_ends);
}

TEST(LiveTrace, AStateSnapshotGivesSegmentsTheTraceLeadsTo) {
    recorded_process p;
    p.steps(3);
    auto [first, first_ends] = p.take(contents::full);
    live_trace trace;
    trace.start(first, first_ends);
    uint64_t previous_allocated = 0;
    for (int refresh = 0; refresh < 3; ++refresh) {
        p.steps(4);
        auto [state, ends] = p.take(contents::state);
        EXPECT_TRUE(state.traces.empty() || state.traces.front().entries.empty());
        EXPECT_FALSE(trace.cut(state, ends)) << "cut before its events arrived";
        p.stream_into(trace, trace.received_ends()[0], 1000);
        const std::optional<snapshot::snapshot> cut = trace.cut(state, ends);
        ASSERT_TRUE(cut);
        const auto doc = document_of(*cut);
        const analysis::device_model& model = doc->main_device().model;
        EXPECT_EQ(model.report().anomalies, 0u);
        EXPECT_TRUE(model.report().matches_final_segments) << model.report().first_difference;
        const uint64_t allocated = model.values(analysis::series::allocated).back();
        EXPECT_EQ(allocated, p.kept.size() * mib);
        EXPECT_GT(allocated, previous_allocated);
        previous_allocated = allocated;
    }
}

TEST(LiveTrace, EventsThatDoNotFollowAreRefused) {
    recorded_process p;
    p.steps(2);
    auto [first, first_ends] = p.take(contents::full);
    p.steps(2);
    live_trace trace;
    trace.start(first, first_ends);
    const auto batch = p.history.take_events(0, first_ends[0] + 1, 100);
    EXPECT_THROW(trace.append(batch.events, 0, first_ends[0] + 1, batch.next), live_stream_error);
    const auto whole = p.history.take_events(0, first_ends[0], 100);
    EXPECT_THROW(trace.append(whole.events, 0, first_ends[0], whole.next + 1), live_stream_error);
    EXPECT_THROW(trace.append(whole.events, 3, first_ends[0], whole.next), live_stream_error);
}

TEST(LiveTrace, AfterStartingAgainPastAStateThatStateIsNotCut) {
    recorded_process p(16);  // a ring of 16 entries: 4 steps overwrite it
    p.steps(2);
    auto [first, first_ends] = p.take(contents::full);
    p.steps(2);
    auto [state, state_ends] = p.take(contents::state);
    p.steps(6);
    // What the endpoint sends a subscriber the ring overtook: a full snapshot of what it holds.
    auto [again, again_ends] = p.take(contents::full);
    ASSERT_LT(again.find_trace(0)->entries.size(), again_ends[0] - state_ends[0]);
    live_trace trace;
    trace.start(first, first_ends);
    trace.start(again, again_ends);
    EXPECT_TRUE(trace.holds_through(state_ends));
    EXPECT_FALSE(trace.cut(state, state_ends)) << "the trace now starts after that state";
    const std::optional<snapshot::snapshot> cut = trace.cut(again, again_ends);
    ASSERT_TRUE(cut);
    EXPECT_EQ(trace_text(*cut), trace_text(again));
}

// Two documents of one process, the later grown from the earlier by the stream.
struct growing_documents {
    std::shared_ptr<const document> earlier, later, later_snapshot;
};

growing_documents grow() {
    recorded_process p;
    p.steps(6);
    auto [first, first_ends] = p.take(contents::full);
    live_trace trace;
    trace.start(first, first_ends);
    growing_documents docs;
    docs.earlier = document_of(first);
    p.steps(10);
    auto [later, later_ends] = p.take(contents::full);
    p.stream_into(trace, first_ends[0], 1000);
    docs.later = document_of(*trace.cut(later, later_ends));
    docs.later_snapshot = document_of(later);
    return docs;
}

TEST(LiveView, TheViewsOfTheGrownDocumentShowWhatTheSnapshotsShow) {
    const growing_documents docs = grow();
    headless_frame frame(width, height);
    for (const view_kind kind : {view_kind::timeline, view_kind::segments, view_kind::flame}) {
        view followed(docs.earlier);
        followed.select_moment("end");
        followed.show(kind);
        settle(frame, followed);
        view grown(docs.later);
        grown.carry_over(followed);
        view taken(docs.later_snapshot);
        taken.select_moment("end");
        taken.show(kind);
        EXPECT_EQ(grown.moment(), docs.later->main_device().model.event_count());
        EXPECT_EQ(grown.shown(), kind);
        const std::string shown = settled_text(frame, grown);
        EXPECT_NE(shown.find("MiB"), std::string::npos) << view_kind_name(kind) << ": " << shown;
        EXPECT_EQ(shown, settled_text(frame, taken)) << view_kind_name(kind);
    }
}

TEST(LiveView, AnEarlierMomentStaysWhileTheDocumentGrows) {
    const growing_documents docs = grow();
    view followed(docs.earlier);
    followed.set_moment(5);
    followed.set_range(std::pair<size_t, size_t>(2, 9));
    ASSERT_TRUE(followed.select_largest_live_allocation());
    const std::optional<size_t> allocation = followed.allocation();
    view grown(docs.later);
    grown.carry_over(followed);
    EXPECT_EQ(grown.moment(), 5u);
    EXPECT_EQ(grown.range(), std::optional(std::pair<size_t, size_t>(2, 9)));
    ASSERT_TRUE(grown.allocation());
    const auto& before = docs.earlier->main_device().model.lifetimes()[*allocation];
    const auto& after = docs.later->main_device().model.lifetimes()[*grown.allocation()];
    EXPECT_EQ(before.address, after.address);
    EXPECT_EQ(before.begin, after.begin);
}

// A pid no process has: a child's, once it has exited and been waited for.
pid_t finished_pid() {
    const pid_t child = ::fork();
    if (child == 0) {
        ::_exit(0);
    }
    ::waitpid(child, nullptr, 0);
    return child;
}

TEST(AttachableProcesses, TheSocketsOfRunningProcessesOthersLeftOut) {
    const std::filesystem::path folder =
        std::filesystem::temp_directory_path() / ("viewer-attach-" + std::to_string(::getpid()));
    std::filesystem::remove_all(folder);
    EXPECT_TRUE(attachable_processes(folder).empty()) << "no folder: no process yet";
    ASSERT_TRUE(std::filesystem::create_directory(folder));
    ::chmod(folder.c_str(), 0700);
    const pid_t parent = ::getppid();  // runs, and is not this process
    for (const std::string& name : std::vector<std::string>{
             std::to_string(parent) + ".sock", std::to_string(::getpid()) + ".sock",
             std::to_string(finished_pid()) + ".sock", "notes.txt", "12x.sock"}) {
        std::ofstream(folder / name).put('\n');
    }
    const std::vector<attachable_process> found = attachable_processes(folder);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].pid, parent);
    EXPECT_EQ(found[0].command, command_line_of(parent));
    EXPECT_FALSE(found[0].command.empty());
    ::chmod(folder.c_str(), 0755);
    EXPECT_THROW(attachable_processes(folder), live::endpoint_error) << "open to other users";
    std::filesystem::remove_all(folder);
}

// Draws frames of `draw` until the popup `title` is open (it opens on the frame after it is
// asked for); returns whether it was drawn with something in it.
template <class Draw>
bool popup_drawn(headless_frame& frame, const char* title, Draw&& draw) {
    for (int i = 0; i < 3; ++i) {
        frame.begin();
        ImGui::SetNextWindowPos(ImVec2(0, 0));
        ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
        ImGui::Begin("workspace", nullptr, ImGuiWindowFlags_NoDecoration);
        draw();
        ImGui::End();
        frame.end();
    }
    const ImGuiWindow* popup = ImGui::FindWindowByName(title);
    return popup != nullptr && popup->WasActive && popup->DrawList->VtxBuffer.Size > 100;
}

TEST(AttachDialog, ListsTheProcessesWithTheirCommandLines) {
    const std::filesystem::path folder =
        std::filesystem::temp_directory_path() / ("viewer-dialog-" + std::to_string(::getpid()));
    std::filesystem::remove_all(folder);
    ASSERT_TRUE(std::filesystem::create_directory(folder));
    ::chmod(folder.c_str(), 0700);
    const pid_t parent = ::getppid();
    std::ofstream(folder / (std::to_string(parent) + ".sock")).put('\n');
    headless_frame frame(width, height);
    attach_dialog dialog;
    dialog.open(folder);
    pid_t chosen = 0;
    EXPECT_TRUE(
        popup_drawn(frame, "Attach to a process", [&] { EXPECT_FALSE(dialog.draw(chosen)); }));
    ASSERT_EQ(dialog.listed().size(), 1u);
    EXPECT_EQ(dialog.listed()[0].pid, parent);
    EXPECT_EQ(dialog.listed()[0].command, command_line_of(parent));
    ::chmod(folder.c_str(), 0750);
    dialog.open(folder);
    EXPECT_TRUE(dialog.listed().empty());
    EXPECT_NE(dialog.error().find(folder.string()), std::string::npos) << dialog.error();
    std::filesystem::remove_all(folder);
}

TEST(AttachableProcesses, ACommandLineHasSpacesBetweenItsArguments) {
    const std::string own = command_line_of(::getpid());
    EXPECT_NE(own.find("viewer_live_test"), std::string::npos) << own;
    EXPECT_EQ(own.find('\0'), std::string::npos);
    EXPECT_EQ(command_line_of(finished_pid()), "");
}

TEST(LiveStatus, TheLineSaysWhatIsShown) {
    live_status s;
    s.pid = 42;
    s.now = live_status::phase::attached;
    s.events_received = 12345;
    EXPECT_EQ(live_status_line(s), "attached to process 42: 12,345 events received");
    s.restarts = 2;
    s.events_missed = 70000;
    EXPECT_EQ(live_status_line(s),
              "attached to process 42: 12,345 events received; fell behind 2x, 70,000 events "
              "missed, the state they led to sent instead");
    s.restarts = 0;
    s.now = live_status::phase::exited;
    s.events_after_shown = 4;
    EXPECT_EQ(live_status_line(s),
              "process 42 exited: showing the last state received (12,345 events received; the "
              "last 4 came after it, before the process ended)");
    s.now = live_status::phase::failed;
    s.error = "no process 42";
    EXPECT_EQ(live_status_line(s), "cannot follow process 42: no process 42");
}

}  // namespace
}  // namespace memtrail::viewer
