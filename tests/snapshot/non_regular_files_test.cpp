// Only regular files are opened by path (issue 13): a FIFO blocked `open` forever, /dev/zero behind
// a symlink grew memory until std::bad_alloc. Each is refused at once, naming the path and what is
// accepted.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "detail/file_io.hpp"
#include "memtrail/snapshot/load.hpp"
#include "memtrail/snapshot/msgpack_format.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"
#include "sample_snapshot.hpp"

namespace ms = memtrail::snapshot;
namespace fs = std::filesystem;

namespace {

constexpr unsigned child_seconds = 10;

// Runs `attempt` in a child process stopped after child_seconds, so a reader that blocks or
// reads forever fails the test instead of hanging it. Returns what the attempt returned, or why
// it gave nothing.
std::string in_child(const std::function<std::string()>& attempt) {
    int channel[2];
    if (::pipe(channel) != 0) {
        return "pipe failed";
    }
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(channel[0]);
        ::alarm(child_seconds);
        const std::string result = attempt();
        const ssize_t written = ::write(channel[1], result.data(), result.size());
        ::_exit(written == static_cast<ssize_t>(result.size()) ? 0 : 1);
    }
    ::close(channel[1]);
    std::string result;
    char buffer[4096];
    for (ssize_t n; (n = ::read(channel[0], buffer, sizeof buffer)) > 0;) {
        result.append(buffer, static_cast<size_t>(n));
    }
    ::close(channel[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (WIFSIGNALED(status)) {
        return WTERMSIG(status) == SIGALRM
                   ? "still running after " + std::to_string(child_seconds) + " s"
                   : "killed by signal " + std::to_string(WTERMSIG(status));
    }
    return result;
}

std::string load_error_of(const fs::path& path) {
    try {
        ms::load_snapshot(path);
        return "loaded";
    } catch (const ms::load_error& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("other error: ") + e.what();
    }
}

fs::path temporary(const std::string& name) {
    const fs::path path = fs::path(::testing::TempDir()) / (std::to_string(::getpid()) + name);
    fs::remove(path);
    return path;
}

}  // namespace

TEST(NonRegularFiles, AFifoIsRefusedWithoutBlocking) {
    const fs::path fifo = temporary("snapshot.fifo");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const std::string error = in_child([&] { return load_error_of(fifo); });
    EXPECT_EQ(error.rfind(fifo.string() + ": is a FIFO", 0), 0u) << error;
    EXPECT_NE(error.find("not a regular file"), std::string::npos) << error;
    fs::remove(fifo);
}

TEST(NonRegularFiles, ADeviceBehindASymlinkIsRefused) {
    const fs::path link = temporary("zero.pickle");
    fs::create_symlink("/dev/zero", link);
    const std::string error = in_child([&] { return load_error_of(link); });
    EXPECT_EQ(error.rfind(link.string() + ": is a character device", 0), 0u) << error;
    EXPECT_NE(error.find("regular files"), std::string::npos) << error;
    // The format readers open files the same way.
    EXPECT_THROW(ms::read_snapshot(link), ms::load_error);
    EXPECT_THROW(ms::read_torch_pickle(link), ms::load_error);
    fs::remove(link);
}

TEST(NonRegularFiles, ADirectoryIsRefused) {
    const std::string error = load_error_of(::testing::TempDir());
    EXPECT_NE(error.find("is a directory, not a regular file"), std::string::npos) << error;
}

TEST(NonRegularFiles, AnEmptyOrMissingFileNamesThePath) {
    const fs::path empty = temporary("empty.memtrail");
    { std::ofstream create(empty); }
    EXPECT_EQ(load_error_of(empty), empty.string() + ": the file is empty");
    const fs::path missing = temporary("missing.memtrail");
    EXPECT_EQ(load_error_of(missing).rfind(missing.string() + ": cannot open: ", 0), 0u);
    fs::remove(empty);
}

// A stream (standard input, a pipe) is read to its end into memory, up to a cap: it has no size to
// check first. Past the cap it is refused, naming the stream and what to do instead.
namespace {

// What load_snapshot_from_stream makes of `bytes` written into a pipe by another thread.
std::string stream_result(const std::vector<uint8_t>& bytes, size_t limit) {
    int channel[2];
    if (::pipe(channel) != 0) {
        return "pipe failed";
    }
    std::thread writer([&] {
        size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::write(channel[1], bytes.data() + done, bytes.size() - done);
            if (n <= 0) {
                break;  // the reader gave up (past its cap) and closed its end
            }
            done += static_cast<size_t>(n);
        }
        ::close(channel[1]);
    });
    std::string result;
    try {
        const ms::loaded_snapshot loaded =
            ms::load_snapshot_from_stream(channel[0], "standard input", limit);
        result = loaded.kind == ms::file_kind::memtrail ? "memtrail" : "pickle";
        result += " with " + std::to_string(loaded.snapshot->segments.size()) + " segments";
    } catch (const ms::load_error& e) {
        result = e.what();
    }
    ::close(channel[0]);
    writer.join();
    return result;
}

}  // namespace

TEST(Streams, ASnapshotOrAPickleIsReadFromAPipeWhateverItsSize) {
    const ms::snapshot sample = ms::test::make_sample_snapshot();
    const std::string expected = " with " + std::to_string(sample.segments.size()) + " segments";
    EXPECT_EQ(stream_result(ms::write_snapshot(sample), ms::stream_read_limit),
              "memtrail" + expected);
    EXPECT_EQ(stream_result(ms::write_torch_pickle(sample), ms::stream_read_limit),
              "pickle" + expected);
}

TEST(Streams, PastTheCapAStreamIsRefusedNamingIt) {
    ::signal(SIGPIPE, SIG_IGN);  // the writer sees EPIPE once the reader stops
    const std::vector<uint8_t> bytes = ms::write_snapshot(ms::test::make_sample_snapshot());
    EXPECT_EQ(stream_result(bytes, bytes.size()).rfind("memtrail", 0), 0u) << "exactly the cap";
    const std::string error = stream_result(bytes, bytes.size() - 1);
    EXPECT_EQ(
        error.rfind("standard input: more than " + std::to_string(bytes.size() - 1) + " bytes", 0),
        0u)
        << error;
    EXPECT_NE(error.find("open the file instead"), std::string::npos) << error;
    std::vector<uint8_t> long_stream(3u << 20, 0x80);  // past a first chunk, still refused
    EXPECT_NE(stream_result(long_stream, 2u << 20).find("more than 2097152 bytes"),
              std::string::npos);
}

TEST(Streams, AnEmptyOrForeignStreamSaysSo) {
    EXPECT_EQ(stream_result({}, 100), "standard input: is empty (nothing came before its end)");
    const std::string text = "hello";
    EXPECT_EQ(stream_result({text.begin(), text.end()}, 100)
                  .rfind("standard input: is neither a memtrail snapshot nor a PyTorch", 0),
              0u);
}

// A mapped file that shrank while it was read killed the reader with SIGBUS (issue 31): PyTorch's
// _dump_snapshot and cp rewrite a file in place. Files are read, not mapped: bytes once read stay.
TEST(ChangingFiles, AFileCutRightAfterOpeningIsNoSignal) {
    const fs::path path = temporary("cut.bin");
    std::vector<char> content(size_t{8} << 20, 'x');
    std::ofstream(path, std::ios::binary).write(content.data(), std::ssize(content));
    const std::string result = in_child([&] {
        const ms::detail::file_bytes bytes(path);
        fs::resize_file(path, 0);
        size_t sum = 0;
        for (const uint8_t b : bytes) {
            sum += b;
        }
        return std::to_string(bytes.size()) + " bytes, sum " + std::to_string(sum);
    });
    EXPECT_EQ(result, std::to_string(content.size()) + " bytes, sum " +
                          std::to_string(content.size() * 'x'));
    fs::remove(path);
}

// A snapshot rewritten in place over and over while it is loaded: each load reads it whole, or
// is refused naming the file (changed while it was read, or cut short when opened), never a
// signal.
TEST(ChangingFiles, ASnapshotRewrittenInPlaceIsReadOrRefusedNamingIt) {
    ms::snapshot big = ms::test::make_sample_snapshot();
    auto& entries = big.trace_for(0).entries;
    for (uint64_t i = 0; i < 500000; ++i) {
        ms::trace_entry& e = entries.emplace_back();
        e.kind = ms::action::alloc;
        e.address = 0x7f0000000000 + i * 4096 + i % 7;
        e.size = 512 + i % 1000;
    }
    const std::vector<uint8_t> bytes = ms::write_snapshot(big);
    const fs::path path = temporary("rewritten.memtrail");
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::ssize(bytes));
    const std::string result = in_child([&] {
        std::atomic<bool> done{false};
        std::thread writer([&] {
            while (!done) {
                const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
                for (size_t at = 0; fd >= 0 && at < bytes.size(); at += 65536) {
                    if (::write(fd, bytes.data() + at, std::min<size_t>(65536, bytes.size() - at)) <
                        0) {
                        break;
                    }
                }
                ::close(fd);
            }
        });
        std::string outcome = "ok";
        for (int attempt = 0; attempt < 40 && outcome == "ok"; ++attempt) {
            const std::string error = load_error_of(path);
            if (error != "loaded" && error.rfind(path.string() + ": ", 0) != 0) {
                outcome = error;
            }
        }
        done = true;
        writer.join();
        return outcome;
    });
    EXPECT_EQ(result, "ok");
    EXPECT_EQ(load_error_of(path), "loaded");
    fs::remove(path);
}
