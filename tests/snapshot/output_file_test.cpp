// One writer for every output (snapshot/include/memtrail/snapshot/output_file.hpp): a file is
// replaced whole, a symbolic link written through, a device or FIFO written directly with every
// error reported, a directory refused; and names as long as a folder takes.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "memtrail/snapshot/output_file.hpp"

namespace memtrail::snapshot {
namespace {

namespace fs = std::filesystem;

std::span<const uint8_t> bytes_of(const std::string& text) {
    return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

std::string read(const fs::path& path) {
    std::string text;
    std::FILE* in = std::fopen(path.c_str(), "rb");
    if (in == nullptr) {
        return text;
    }
    char chunk[4096];
    for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, in)) > 0;) {
        text.append(chunk, n);
    }
    std::fclose(in);
    return text;
}

class OutputFile : public testing::Test {
  protected:
    void SetUp() override {
        folder_ = fs::temp_directory_path() /
                  ("memtrail_output_file_" + std::to_string(::getpid()) + "_" +
                   testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(folder_);
        fs::create_directories(folder_);
    }
    void TearDown() override { fs::remove_all(folder_); }
    size_t entries() const {
        return static_cast<size_t>(std::distance(fs::directory_iterator(folder_), {}));
    }
    fs::path folder_;
};

TEST_F(OutputFile, AFileIsReplacedWholeAndNoTemporaryIsLeft) {
    const fs::path path = folder_ / "run.memtrail";
    write_output_file(path, bytes_of("a long first version"));
    write_output_file(path, bytes_of("second"));
    EXPECT_EQ(read(path), "second");
    EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFile, ASymbolicLinkIsWrittenThroughAndStays) {
    fs::create_directories(folder_ / "runs");
    fs::create_symlink("runs/7", folder_ / "latest");
    write_output_file(folder_ / "latest", bytes_of("through the link"));
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(folder_ / "latest")));
    EXPECT_EQ(fs::read_symlink(folder_ / "latest"), "runs/7");
    EXPECT_EQ(read(folder_ / "runs" / "7"), "through the link");
    EXPECT_EQ(std::distance(fs::directory_iterator(folder_ / "runs"), {}), 1);
}

TEST_F(OutputFile, ACharacterDeviceIsWrittenDirectlyAndStaysADevice) {
    write_output_file("/dev/null", bytes_of("nothing"));
    struct stat info {};
    ASSERT_EQ(::stat("/dev/null", &info), 0);
    EXPECT_TRUE(S_ISCHR(info.st_mode));
}

TEST_F(OutputFile, AFullDeviceIsAnErrorWithTheSystemsReason) {
    if (::access("/dev/full", W_OK) != 0) {
        GTEST_SKIP() << "no /dev/full here";
    }
    try {
        write_output_file("/dev/full", bytes_of("does not fit"));
        FAIL() << "no error from /dev/full";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), ENOSPC);
        EXPECT_NE(std::string(e.what()).find("/dev/full: cannot write"), std::string::npos)
            << e.what();
    }
    struct stat info {};
    ASSERT_EQ(::stat("/dev/full", &info), 0);
    EXPECT_TRUE(S_ISCHR(info.st_mode));
}

TEST_F(OutputFile, AFifoIsWrittenDirectly) {
    const fs::path fifo = folder_ / "pipe";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::string received;
    std::thread reader([&] { received = read(fifo); });
    write_output_file(fifo, bytes_of("through the pipe"));
    reader.join();
    EXPECT_EQ(received, "through the pipe");
    struct stat info {};
    ASSERT_EQ(::stat(fifo.c_str(), &info), 0);
    EXPECT_TRUE(S_ISFIFO(info.st_mode));
}

TEST_F(OutputFile, ADirectoryIsRefusedByName) {
    try {
        write_output_file(folder_, bytes_of("x"));
        FAIL() << "a directory was written";
    } catch (const std::system_error& e) {
        EXPECT_NE(std::string(e.what()).find("is a directory, not a file to write"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_TRUE(fs::is_directory(folder_));
}

TEST_F(OutputFile, ANameAsLongAsAFolderTakesIsWritten) {
    const fs::path path = folder_ / (std::string(245, 'n') + ".memtrail");  // 254 characters
    write_output_file(path, bytes_of("long"));
    write_output_file(path, bytes_of("longer"));
    EXPECT_EQ(read(path), "longer");
    EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFile, AMissingFolderIsAnErrorThatLeavesNothing) {
    EXPECT_THROW(write_output_file(folder_ / "no" / "such" / "folder.memtrail", bytes_of("x")),
                 std::system_error);
    EXPECT_EQ(entries(), 0u);
}

}  // namespace
}  // namespace memtrail::snapshot
