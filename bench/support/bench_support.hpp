#pragma once
// What the benchmarks that open large files share: the file they open (made once, kept or
// removed) and the process's resident-memory high-water mark.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <system_error>

namespace memtrail::bench {

// The file a benchmark opens: the one the environment variable `variable` names when it exists;
// else a synthetic one made by `write`, at that name and kept (for running again, or for other
// tools on the same file), or, without the variable, in the temporary folder and removed at exit.
class bench_file {
  public:
    bench_file(const char* variable, const std::string& temporary_name,
               const std::function<void(const std::filesystem::path&)>& write) {
        const char* given = std::getenv(variable);
        if (given != nullptr && std::filesystem::exists(given)) {
            path_ = given;
            return;
        }
        owned_ = given == nullptr;
        path_ = owned_ ? std::filesystem::temp_directory_path() /
                             (std::to_string(getpid()) + "_" + temporary_name)
                       : std::filesystem::path(given);
        write(path_);
    }
    ~bench_file() {
        if (owned_) {
            std::error_code ignored;
            std::filesystem::remove(path_, ignored);
        }
    }
    bench_file(const bench_file&) = delete;
    bench_file& operator=(const bench_file&) = delete;

    const std::filesystem::path& path() const { return path_; }

  private:
    std::filesystem::path path_;
    bool owned_ = false;
};

// Resets the resident-memory high-water mark (Linux: "5" to clear_refs).
inline void reset_peak_memory() {
    std::ofstream("/proc/self/clear_refs") << "5";
}

// VmHWM in bytes: the most memory resident since the start or the last reset_peak_memory().
inline double peak_memory_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.starts_with("VmHWM:")) {
            return std::stod(line.substr(6)) * 1024.0;
        }
    }
    return 0.0;
}

}  // namespace memtrail::bench
