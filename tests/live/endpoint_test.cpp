// The attach endpoint as librecorder runs it, attached to from the same process (the endpoint's
// threads serve it like any client): snapshots now, events from a sequence number, a subscriber
// the ring overtook, fork, exit, another user, MEMTRAIL_LIVE=off.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "memtrail/live/client.hpp"
#include "memtrail/live/endpoint_folder.hpp"
#include "memtrail/memtrail.h"
#include "memtrail/snapshot/msgpack_format.hpp"

namespace memtrail::live {
namespace {

namespace fs = std::filesystem;
constexpr ssize_t MiB = 1 << 20;

fs::path my_socket() {
    return endpoint_path(endpoint_folder(::geteuid()), ::getpid());
}

// Starts librecorder on a simulated device, recording, with `max_entries` kept.
void start_recording(const char* max_entries = "100000") {
    setenv("MEMTRAIL_DEVICE", "sim:4GiB", 1);
    setenv("MEMTRAIL_RECORD", "all", 1);
    setenv("MEMTRAIL_MAX_ENTRIES", max_entries, 1);
    void* first = memtrail_malloc(MiB, 0, nullptr);
    ASSERT_NE(first, nullptr) << memtrail_last_error();
    memtrail_free(first, MiB, 0, nullptr);
}

uint64_t allocated_bytes(const snapshot::snapshot& s) {
    uint64_t bytes = 0;
    for (const auto& segment : s.segments) {
        for (const auto& block : segment.blocks) {
            if (block.state == snapshot::block_state::active_allocated) {
                bytes += block.size;
            }
        }
    }
    return bytes;
}

TEST(live_endpoint, a_snapshot_now_holds_what_is_allocated_now) {
    start_recording();
    void* a = memtrail_malloc(2 * MiB, 0, nullptr);
    void* b = memtrail_malloc(4 * MiB, 0, nullptr);
    client attached(::getpid());
    EXPECT_EQ(attached.device_count(), 1);
    const frame state = attached.take_snapshot(client::contents::state);
    const snapshot::snapshot now = snapshot::read_snapshot(state.payload);
    EXPECT_EQ(allocated_bytes(now), uint64_t(6 * MiB));
    EXPECT_TRUE(now.find_trace(0) == nullptr || now.find_trace(0)->entries.empty());

    memtrail_free(a, 0, 0, nullptr);
    const frame full = attached.take_snapshot(client::contents::full);
    const snapshot::snapshot later = snapshot::read_snapshot(full.payload);
    EXPECT_EQ(allocated_bytes(later), uint64_t(4 * MiB));
    // The trace ends at the cut the frame announces: every event so far, the snapshots' own
    // "snapshot" entries among them.
    ASSERT_EQ(full.numbers("ends").size(), 1u);
    EXPECT_EQ(later.find_trace(0)->entries.size(), full.numbers("ends")[0]);
    memtrail_free(b, 0, 0, nullptr);
}

TEST(live_endpoint, a_subscriber_receives_the_events_after_its_snapshot) {
    start_recording();
    client attached(::getpid());
    const frame full = attached.take_snapshot(client::contents::full);
    attached.subscribe(full.numbers("ends"));
    void* p = memtrail_malloc(3 * MiB, 0, nullptr);
    const std::optional<frame> events = attached.next_frame();
    ASSERT_TRUE(events);
    ASSERT_EQ(events->kind, "events");
    EXPECT_EQ(events->number("from"), full.numbers("ends")[0]);
    const snapshot::snapshot batch = snapshot::read_snapshot(events->payload);
    ASSERT_NE(batch.find_trace(0), nullptr);
    const auto& entries = batch.find_trace(0)->entries;
    ASSERT_EQ(entries.size(), events->number("count"));
    bool saw_alloc = false;
    for (const auto& entry : entries) {
        saw_alloc |= entry.kind == snapshot::action::alloc && entry.size == uint64_t(3 * MiB);
    }
    EXPECT_TRUE(saw_alloc);
    memtrail_free(p, 0, 0, nullptr);
}

// The ring keeps 100 entries; a subscriber asking from 0 after 1000 is told what it missed and
// gets a snapshot to start again from.
TEST(live_endpoint, a_subscriber_the_ring_overtook_is_told_and_resynchronised) {
    start_recording("100");
    for (int i = 0; i < 500; ++i) {
        memtrail_free(memtrail_malloc(MiB, 0, nullptr), 0, 0, nullptr);
    }
    client attached(::getpid());
    attached.subscribe({0});
    const std::optional<frame> behind = attached.next_frame();
    ASSERT_TRUE(behind);
    ASSERT_EQ(behind->kind, "behind");
    EXPECT_GE(behind->number("missed"), 900u);
    const std::optional<frame> resync = attached.next_frame();
    ASSERT_TRUE(resync);
    EXPECT_EQ(resync->kind, "snapshot");
    EXPECT_GE(resync->numbers("ends")[0], 1000u);
}

// A client that leaves mid-stream leaves the process as it was: it goes on allocating, and the
// next client is served.
TEST(live_endpoint, a_client_leaving_mid_stream_leaves_the_process_untouched) {
    start_recording();
    {
        client attached(::getpid());
        attached.subscribe({0});
        for (int i = 0; i < 2000; ++i) {
            memtrail_free(memtrail_malloc(MiB, 0, nullptr), 0, 0, nullptr);
        }
    }  // closed with frames unread
    for (int i = 0; i < 2000; ++i) {
        void* p = memtrail_malloc(MiB, 0, nullptr);
        ASSERT_NE(p, nullptr) << memtrail_last_error();
        memtrail_free(p, 0, 0, nullptr);
    }
    client again(::getpid());
    EXPECT_EQ(again.take_snapshot(client::contents::state).kind, "snapshot");
}

// A forked child opens an endpoint of its own and removes it at exit; the parent's stays.
TEST(live_endpoint, a_forked_child_has_its_own_endpoint) {
    start_recording();
    const pid_t child = ::fork();
    if (child == 0) {
        void* p = memtrail_malloc(5 * MiB, 0, nullptr);
        int code = p == nullptr ? 3 : 0;
        try {
            client self(::getpid());
            const snapshot::snapshot s =
                snapshot::read_snapshot(self.take_snapshot(client::contents::state).payload);
            code = code != 0 ? code : s.info.pid == ::getpid() ? 0 : 4;
        } catch (const std::exception& error) {
            std::fprintf(stderr, "child: %s\n", error.what());
            code = 5;
        }
        std::exit(code);  // exit, not _exit: the socket is removed by the exit handlers
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_FALSE(fs::exists(endpoint_path(endpoint_folder(::geteuid()), child)));
    EXPECT_TRUE(fs::exists(my_socket()));
    client parent(::getpid());
    EXPECT_EQ(parent.take_snapshot(client::contents::state).kind, "snapshot");
}

// Another user can neither reach the socket (the folder is the owner's alone) nor attach.
TEST(live_endpoint, another_user_cannot_attach) {
    if (::geteuid() != 0) {
        GTEST_SKIP() << "needs root to run a client as another user (nobody)";
    }
    start_recording();
    const pid_t owner = ::getpid();
    const std::string socket = my_socket().string();
    const pid_t child = ::fork();
    if (child == 0) {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
            std::_Exit(10);
        }
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strcpy(address.sun_path, socket.c_str());
        const bool reached =
            ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
        if (reached || errno != EACCES) {
            std::_Exit(11);
        }
        try {
            client stranger(owner);
            std::_Exit(12);
        } catch (const attach_error& error) {
            const bool said = std::string(error.what())
                                  .find(
                                      "belongs to another user (uid 0): only its owner can "
                                      "attach") != std::string::npos;
            std::_Exit(said ? 0 : 13);
        }
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(live_endpoint, memtrail_live_off_opens_no_endpoint) {
    setenv("MEMTRAIL_LIVE", "off", 1);
    start_recording();
    EXPECT_FALSE(fs::exists(my_socket()));
}

}  // namespace
}  // namespace memtrail::live
