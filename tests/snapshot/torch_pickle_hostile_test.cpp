// Hand-made pickles: what the reader accepts at the edges (big ints) and how it refuses what it
// must refuse (code execution, lengths beyond the input, memo abuse, sharing bombs), always with a
// format_error that names the place.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memtrail/snapshot/format_error.hpp"
#include "memtrail/snapshot/torch_pickle.hpp"

namespace ms = memtrail::snapshot;
using namespace std::string_literals;

namespace {

// A pickle spelled as opcode bytes; strings in the literal are raw bytes.
std::vector<uint8_t> bytes(std::initializer_list<std::string> parts) {
    std::vector<uint8_t> out;
    for (const auto& p : parts) {
        out.insert(out.end(), p.begin(), p.end());
    }
    return out;
}

std::string short_string(const std::string& s) {
    return std::string("\x8c") + static_cast<char>(s.size()) + s;
}

std::string uint8(int v) {
    return std::string("K") + static_cast<char>(v);
}

// {"segments": [{"address": <value>}]}
std::vector<uint8_t> segment_with_address(const std::string& value) {
    return bytes(
        {"\x80\x04}(", short_string("segments"), "](}(", short_string("address"), value, "ueu."});
}

std::string error_of(const std::vector<uint8_t>& pickle) {
    try {
        ms::read_torch_pickle(std::span<const uint8_t>(pickle));
    } catch (const ms::format_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(TorchPickleHostile, MinimalDictReads) {
    const auto s = ms::read_torch_pickle(std::span<const uint8_t>(bytes({"\x80\x02}."})));
    EXPECT_TRUE(s.segments.empty());
    EXPECT_TRUE(s.traces.empty());
}

TEST(TorchPickleHostile, BigIntsThatFit64BitsAreAccepted) {
    // 2^64-1 needs nine bytes in Python's two's complement encoding: ff*8 00.
    const auto max_u64 = segment_with_address(std::string("\x8a\x09") + std::string(8, '\xff') +
                                              std::string(1, '\0'));
    const auto s = ms::read_torch_pickle(std::span<const uint8_t>(max_u64));
    ASSERT_EQ(s.segments.size(), 1u);
    EXPECT_EQ(s.segments[0].address, UINT64_MAX);

    // 2^63 exactly, and a zero-length LONG1 (0).
    const auto two63 = segment_with_address(std::string("\x8a\x09") + std::string(7, '\0') +
                                            "\x80" + std::string(1, '\0'));
    EXPECT_EQ(ms::read_torch_pickle(std::span<const uint8_t>(two63)).segments[0].address,
              uint64_t{1} << 63);
    const auto zero = segment_with_address(std::string("\x8a\x00", 2));
    EXPECT_EQ(ms::read_torch_pickle(std::span<const uint8_t>(zero)).segments[0].address, 0u);

    // Redundant sign bytes beyond the ninth are still a 64-bit value (LONG4, 12 bytes).
    const auto padded = segment_with_address(std::string("\x8b\x0c\x00\x00\x00", 5) + "\x01" +
                                             std::string(11, '\0'));
    EXPECT_EQ(ms::read_torch_pickle(std::span<const uint8_t>(padded)).segments[0].address, 1u);
}

TEST(TorchPickleHostile, BigIntsBeyond64BitsAreRejectedWhereANumberIsNeeded) {
    const auto two64 =
        segment_with_address(std::string("\x8a\x09", 2) + std::string(8, '\0') + "\x01");
    EXPECT_EQ(error_of(two64),
              "pickle: key 'address' of a segment at byte 27: expected a non-negative 64-bit "
              "integer, got a 9-byte integer out of the 64-bit range");
    // -(2^63) - 1
    const auto below_min = segment_with_address(
        std::string("\x8a\x09", 2) + std::string(8, '\xff').replace(7, 1, "\x7f") + "\xff");
    EXPECT_NE(error_of(below_min).find("got a 9-byte integer out of the 64-bit range"),
              std::string::npos)
        << error_of(below_min);
    // A negative address is a type error naming the key and the value.
    const auto negative = segment_with_address("J\xff\xff\xff\xff");
    EXPECT_EQ(error_of(negative),
              "pickle: key 'address' of a segment at byte 27: expected a non-negative 64-bit "
              "integer, got the integer -1");
}

TEST(TorchPickleHostile, BigIntsOutsideTheModelAreIgnored) {
    // An unknown key of a segment holding 2^64 is not needed, so the file still opens.
    const auto p = bytes({"\x80\x04}(", short_string("segments"), "](}(", short_string("future"),
                          std::string("\x8a\x09", 2) + std::string(8, '\0') + "\x01", "ueu."});
    const auto s = ms::read_torch_pickle(std::span<const uint8_t>(p));
    EXPECT_EQ(s.segments.size(), 1u);
}

TEST(TorchPickleHostile, SignedFieldGivenUnsignedNamesTheValue) {
    // time_us is int64 in PyTorch: 2^64-1 there is out of range, and the error says so.
    const auto p =
        bytes({"\x80\x04}(", short_string("segments"), "](}(", short_string("time_us"),
               std::string("\x8a\x09", 2) + std::string(8, '\xff') + std::string(1, '\0'), "ueu."});
    EXPECT_EQ(error_of(p),
              "pickle: key 'time_us' of a segment at byte 27: expected a signed 64-bit integer, "
              "got the integer 18446744073709551615 (above INT64_MAX)");
}

TEST(TorchPickleHostile, HostileLengthsAreCheckedAgainstTheInput) {
    // BINUNICODE claiming 500 bytes with 2 left (then STOP would follow).
    const auto truncated = bytes({"\x80\x04X\xf4\x01\x00\x00"s, "ab"});
    EXPECT_EQ(error_of(truncated),
              "pickle: truncated BINUNICODE string at byte 2: needs 500 bytes, 2 left");
    // BINUNICODE8 claiming 2^63 bytes.
    const auto huge = bytes({"\x80\x04\x8d", std::string(7, '\0') + "\x80", "."});
    EXPECT_NE(error_of(huge).find("truncated BINUNICODE8"), std::string::npos) << error_of(huge);
    // LONG4 with a negative and with an enormous length.
    EXPECT_NE(error_of(bytes({"\x80\x04\x8b\xff\xff\xff\xff."})).find("negative length"),
              std::string::npos);
    EXPECT_NE(error_of(bytes({"\x80\x04\x8b\xff\xff\xff\x7f."})).find("truncated LONG4"),
              std::string::npos);
    // FRAME longer than the rest of the input.
    EXPECT_NE(error_of(bytes({"\x80\x04\x95\xff\xff\xff\xff\x00\x00\x00\x00}."s}))
                  .find("truncated FRAME"),
              std::string::npos);
}

TEST(TorchPickleHostile, CodeExecutionOpcodesAreRefused) {
    // The classic: os.system('...') through GLOBAL + REDUCE.
    const auto global = bytes({"\x80\x02\x63os\nsystem\nq\x00X\x02\x00\x00\x00id\x85R."s});
    EXPECT_NE(error_of(global).find("refused opcode 0x63 (GLOBAL)"), std::string::npos)
        << error_of(global);
    const auto stack_global =
        bytes({"\x80\x04", short_string("os"), short_string("system"), "\x93."});
    EXPECT_NE(error_of(stack_global).find("STACK_GLOBAL"), std::string::npos);
    EXPECT_NE(error_of(bytes({"\x80\x04}}b."})).find("BUILD"), std::string::npos);
    EXPECT_NE(error_of(bytes({"\x80\x04}]R."})).find("REDUCE"), std::string::npos);
    EXPECT_NE(error_of(bytes({"\x80\x06}."})).find("unsupported pickle protocol 6"),
              std::string::npos);
    // Protocol 5's out-of-band buffer, which a file cannot carry.
    EXPECT_EQ(error_of(bytes({"\x80\x05\x97."})),
              "pickle: refused opcode 0x97 (NEXT_BUFFER) at byte 2: out-of-band buffers are not "
              "part of a snapshot file");
}

TEST(TorchPickleHostile, MemoAbuseIsRefused) {
    EXPECT_NE(error_of(bytes({"\x80\x04}r\xff\xff\xff\xff."})).find("memo index 4294967295"),
              std::string::npos);
    EXPECT_NE(error_of(bytes({"\x80\x04h\x05."})).find("never stored"), std::string::npos);
    EXPECT_NE(error_of(bytes({"\x80\x04\x94."})).find("MEMOIZE needs 1 value"), std::string::npos);
}

TEST(TorchPickleHostile, StackAndMarkAbuseIsRefused) {
    EXPECT_NE(error_of(bytes({"\x80\x04."})).find("STOP needs 1 value"), std::string::npos);
    EXPECT_NE(error_of(bytes({"\x80\x04}"})).find("missing STOP"), std::string::npos);
    EXPECT_NE(error_of(bytes({"\x80\x04}e."})).find("APPENDS without a MARK"), std::string::npos);
    EXPECT_NE(error_of(bytes({"\x80\x04(", uint8(1), "e."})).find("no container below its MARK"),
              std::string::npos);
    EXPECT_NE(error_of(bytes({"\x80\x04}(", uint8(1), "u."})).find("odd number"),
              std::string::npos);
    EXPECT_NE(error_of(bytes({"\x80\x04]", uint8(1), "(", uint8(2), "a."})).find("APPEND needs 2"),
              std::string::npos);
    EXPECT_NE(error_of(bytes({"\x80\x04)", uint8(1), "a."})).find("got a tuple"),
              std::string::npos);
    EXPECT_NE(error_of(bytes({std::string("\x80\x04") + std::string(100000, '(')}))
                  .find("nesting deeper than"),
              std::string::npos);
}

TEST(TorchPickleHostile, SelfReferenceCannotLoop) {
    // l = []; l.append(l); {"device_traces": l}: the trace list holds itself, not entries.
    const auto cycle =
        bytes({"\x80\x04}(", short_string("device_traces"), "]\x94h\x00"s, "a", "u."});
    EXPECT_NE(error_of(cycle).find("expected a dict"), std::string::npos) << error_of(cycle);
}

TEST(TorchPickleHostile, SharingBombsAreRefused) {
    // blocks = [b] * 1000 with b one block dict, then 1000 segments all sharing `blocks`:
    // a few kilobytes that would describe a million blocks.
    // The first segment makes the blocks list (memo 0) holding one block dict (memo 1) 1000
    // times; 999 more segments refer to that list.
    std::string p = "\x80\x04}(" + short_string("segments") + "](" + "}(" + short_string("blocks") +
                    "]\x94(" + "}(" + short_string("size") + uint8(1) + "u\x94";
    for (int i = 0; i < 999; ++i) {
        p += "h\x01";
    }
    p += "eu";  // blocks done, first segment done
    for (int i = 0; i < 999; ++i) {
        p += "}(" + short_string("blocks") + "h\x00u"s;
    }
    p += "eu.";
    const auto bomb = bytes({p});
    EXPECT_LT(bomb.size(), 30000u);
    EXPECT_NE(error_of(bomb).find("expand far beyond"), std::string::npos) << error_of(bomb);
}

TEST(TorchPickleHostile, WrongTypesNameKeyAndOffset) {
    const auto p =
        bytes({"\x80\x04}(", short_string("device_traces"), "](](}(", short_string("action"),
               short_string("alloc"), short_string("size"), short_string("big"), "ueeu."});
    EXPECT_EQ(error_of(p),
              "pickle: key 'size' of a trace entry at byte 46: expected a non-negative 64-bit "
              "integer, got the string \"big\"");
    const auto unknown = bytes({"\x80\x04}(", short_string("device_traces"), "](](}(",
                                short_string("action"), short_string("malloc"), "ueeu."});
    EXPECT_NE(error_of(unknown).find("unknown action \"malloc\""), std::string::npos);
    const auto no_action = bytes({"\x80\x04}(", short_string("device_traces"), "](](}eeu."});
    EXPECT_NE(error_of(no_action).find("has no 'action'"), std::string::npos);
}

TEST(TorchPickleHostile, ATraceThatIsNotAListIsRefused) {
    // Found by fuzz_torch_pickle: a device's trace was counted as a container before its kind
    // was checked, so a number read far outside the tree.
    const auto p =
        bytes({"\x80\x04}(", short_string("device_traces"), "](J\xff\xff\xff\x7f", "eu."});
    EXPECT_EQ(error_of(p),
              "pickle: device_traces at byte 21: expected a list, got the integer 2147483647");
}

TEST(TorchPickleHostile, SharedValuesCannotChangeType) {
    // Found by fuzz_torch_pickle: a string shared through the memo (interned as a string id when
    // read as compile_context) placed in a frames list must not pass as a frame id.
    const auto p =
        bytes({"\x80\x04}(", short_string("device_traces"), "](](}(", short_string("action"),
               short_string("alloc"), short_string("compile_context"), short_string("shared"),
               "\x94", "u}(", short_string("action"), short_string("alloc"), short_string("frames"),
               "](h\x00"s, "eueeu."});
    EXPECT_NE(error_of(p).find("a frame at byte"), std::string::npos) << error_of(p);
    EXPECT_NE(error_of(p).find("expected a dict, got the string \"shared\""), std::string::npos);
}
