// A fixed number of bench_allocator's random-mix steps on the simulated device, after 50,000
// steps that make the segments, for instruction and cache-miss counts (timings are for
// bench_allocator). Count only the measured steps, and divide the totals by their number:
//   valgrind --tool=callgrind --toggle-collect='*measured_steps*' --cache-sim=yes
//            --branch-sim=yes build/bin/random_mix_steps 40000

#include <cstdio>
#include <cstdlib>
#include <string>

#include "memtrail/core/simulated_device.hpp"
#include "random_mix.hpp"

namespace {

[[gnu::noinline]] void measured_steps(memtrail::bench::random_mix& mix, size_t steps) {
    for (size_t i = 0; i < steps; ++i) {
        mix.step();
    }
}

}  // namespace

int main(int argc, char** argv) {
    char* end = nullptr;
    const unsigned long steps = argc == 2 ? std::strtoul(argv[1], &end, 10) : 0;
    if (argc != 2 || steps == 0 || *end != '\0') {
        std::fprintf(stderr, "usage: %s STEPS  (a positive number of random-mix steps)\n", argv[0]);
        return 2;
    }
    memtrail::simulated_device device{memtrail::simulated_device_options{}};
    memtrail::device_allocator allocator(device);
    memtrail::bench::random_mix mix(allocator, 0, 7);
    for (int i = 0; i < 50000; ++i) {
        mix.step();
    }
    measured_steps(mix, steps);
    std::printf("%lu steps\n", steps);
    return 0;
}
