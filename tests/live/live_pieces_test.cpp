// The attach endpoint's guards and framing, without a recording process: the folder's checks,
// the peer-credential check (a socketpair whose owner is faked), frames across a socket, and the
// client's word for each process it cannot attach to.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "memtrail/live/client.hpp"
#include "memtrail/live/endpoint_folder.hpp"
#include "memtrail/live/protocol.hpp"

namespace memtrail::live {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test's temporary directory.
class scratch : public ::testing::Test {
  protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() /
                ("memtrail-live-test-" + std::to_string(::getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
        fs::create_directories(root_);
    }
    void TearDown() override { fs::remove_all(root_); }
    fs::path root_;
};

template <typename Call>
std::string error_of(Call&& call) {
    try {
        call();
    } catch (const std::exception& error) {
        return error.what();
    }
    return "(no error)";
}

// A pid no process has: a child that has exited and been waited for.
pid_t ended_pid() {
    const pid_t child = ::fork();
    if (child == 0) {
        ::_exit(0);
    }
    ::waitpid(child, nullptr, 0);
    return child;
}

TEST(peer_credentials, same_user_passes_and_another_is_refused) {
    int ends[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0);
    uid_t peer = 12345;
    EXPECT_TRUE(peer_runs_as(ends[0], ::geteuid(), peer));
    EXPECT_EQ(peer, ::geteuid());
    // The process pretends to belong to another user: its own peer is then a stranger.
    EXPECT_FALSE(peer_runs_as(ends[0], ::geteuid() + 1, peer));
    EXPECT_EQ(peer, ::geteuid());
    ::close(ends[0]);
    ::close(ends[1]);
}

TEST_F(scratch, a_private_folder_is_made_owner_only) {
    const fs::path folder = root_ / "endpoints";
    make_private_folder(folder, ::geteuid());
    struct ::stat info {};
    ASSERT_EQ(::lstat(folder.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700u);
    make_private_folder(folder, ::geteuid());  // existing: checked, kept
}

// A socket file bound at `path` and left behind, as by a process killed while listening.
void leave_socket(const fs::path& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strcpy(address.sun_path, path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
    ::close(fd);
}

TEST_F(scratch, the_sockets_of_dead_processes_are_removed_and_nothing_else) {
    const pid_t dead = ended_pid();
    leave_socket(endpoint_path(root_, dead));
    leave_socket(endpoint_path(root_, ::getpid()));  // a process that runs: kept
    leave_socket(root_ / "notapid.sock");
    { std::ofstream(root_ / (std::to_string(ended_pid()) + ".sock")) << "a file, not a socket"; }
    EXPECT_EQ(remove_dead_endpoints(root_), 1u);
    EXPECT_FALSE(fs::exists(endpoint_path(root_, dead)));
    EXPECT_TRUE(fs::exists(endpoint_path(root_, ::getpid())));
    EXPECT_TRUE(fs::exists(root_ / "notapid.sock"));
    EXPECT_EQ(std::distance(fs::directory_iterator(root_), fs::directory_iterator()), 3);
    EXPECT_EQ(remove_dead_endpoints(root_ / "missing"), 0u);
}

TEST_F(scratch, unsafe_folders_are_refused) {
    const fs::path open = root_ / "open";
    fs::create_directory(open);
    ::chmod(open.c_str(), 0755);
    EXPECT_NE(error_of([&] {
                  check_private_folder(open, ::geteuid());
              }).find("open to other users (mode 755); it must be 700"),
              std::string::npos);

    const fs::path link = root_ / "link";
    const fs::path target = root_ / "target";
    fs::create_directory(target);
    ::chmod(target.c_str(), 0700);
    fs::create_directory_symlink(target, link);
    EXPECT_NE(error_of([&] { make_private_folder(link, ::geteuid()); }).find("a symbolic link"),
              std::string::npos);

    const fs::path file = root_ / "file";
    ::close(::creat(file.c_str(), 0600));
    EXPECT_NE(error_of([&] { check_private_folder(file, ::geteuid()); }).find("not a folder"),
              std::string::npos);

    // Someone else's folder, as another user would have made it first.
    EXPECT_NE(error_of([&] {
                  check_private_folder(target, ::geteuid() + 1);
              }).find("owned by uid " + std::to_string(::geteuid())),
              std::string::npos);
}

TEST(framing, frames_cross_a_socket_whole) {
    int ends[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0);
    const std::string payload(100000, 'x');
    ASSERT_TRUE(send_frame(ends[0], "events", "device=0 from=5 next=9 count=4",
                           {reinterpret_cast<const uint8_t*>(payload.data()), payload.size()}));
    ASSERT_TRUE(send_frame(ends[0], "behind", "device=0 missed=3", {}));
    ::shutdown(ends[0], SHUT_WR);
    frame_reader reader(ends[1]);
    const std::optional<frame> events = reader.read_frame();
    ASSERT_TRUE(events);
    EXPECT_EQ(events->kind, "events");
    EXPECT_EQ(events->number("next"), 9u);
    EXPECT_EQ(events->text(), payload);
    const std::optional<frame> behind = reader.read_frame();
    ASSERT_TRUE(behind);
    EXPECT_EQ(behind->number("missed"), 3u);
    EXPECT_FALSE(reader.read_frame());  // the end of the stream, between frames
    ::close(ends[0]);
    ::close(ends[1]);
}

TEST(framing, a_stream_cut_inside_a_frame_is_an_error) {
    int ends[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0);
    ASSERT_TRUE(send_text(ends[0], "snapshot ends=4 bytes=100\nonly this"));
    ::shutdown(ends[0], SHUT_WR);
    frame_reader reader(ends[1]);
    EXPECT_NE(error_of([&] { reader.read_frame(); }).find("ended inside a 'snapshot' frame"),
              std::string::npos);
    EXPECT_NE(error_of([] { parse_header("events no-equals"); }).find("malformed header"),
              std::string::npos);
    ::close(ends[0]);
    ::close(ends[1]);
}

TEST(framing, a_send_to_a_peer_gone_fails_without_a_signal) {
    int ends[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0);
    ::close(ends[1]);
    // Without MSG_NOSIGNAL this would raise SIGPIPE and end the test program.
    EXPECT_FALSE(send_text(ends[0], "snapshot bytes=0\n"));
    ::close(ends[0]);
}

TEST_F(scratch, the_client_says_why_it_cannot_attach) {
    const fs::path folder = root_ / "endpoints";
    make_private_folder(folder, ::geteuid());

    const pid_t gone = ended_pid();
    EXPECT_EQ(error_of([&] { client c(gone, folder); }),
              "there is no process " + std::to_string(gone));

    // This process is alive but has no endpoint: it does not record with memtrail.
    EXPECT_NE(error_of([&] {
                  client c(::getpid(), folder);
              }).find("is not recording with memtrail: it has no endpoint at"),
              std::string::npos);

    // A socket file nobody listens on: left by a killed process, whose pid is now free or used
    // by another process.
    const auto leave_socket = [&](pid_t pid) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strcpy(address.sun_path, endpoint_path(folder, pid).c_str());
        ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
        ::close(fd);
    };
    leave_socket(gone);
    EXPECT_NE(error_of([&] { client c(gone, folder); }).find("was stale"), std::string::npos);
    EXPECT_FALSE(fs::exists(endpoint_path(folder, gone)));  // removed
    leave_socket(::getpid());
    EXPECT_NE(error_of([&] {
                  client c(::getpid(), folder);
              }).find("is stale: process " + std::to_string(::getpid()) + " does not listen on it"),
              std::string::npos);

    ::chmod(folder.c_str(), 0777);
    EXPECT_NE(error_of([&] { client c(::getpid(), folder); }).find("open to other users"),
              std::string::npos);
}

}  // namespace
}  // namespace memtrail::live
