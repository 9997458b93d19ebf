// The flat JSON reader: values by path, escapes decoded, array sizes, and clear errors (with the
// byte offset) for what is not JSON, including a document nested deep enough to exhaust a stack.

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "memtrail/snapshot/json_paths.hpp"

namespace memtrail::snapshot {
namespace {

TEST(json_paths, flattens_objects_and_arrays_into_paths) {
    const json_paths json(
        R"({"path": "a.pickle", "ooms": [{"entry": 61, "remedies": {"checked": true,
            "tried": [{"setting": "expandable_segments:True", "peak_reserved": 3019898880},
                      {"setting": "no memory cap", "avoids": false}]}}], "fraction": 0.25,
            "none": null})",
        "test");
    EXPECT_EQ(json.string_at("path"), "a.pickle");
    EXPECT_EQ(json.integer_at("ooms/0/entry"), 61);
    EXPECT_EQ(json.boolean_at("ooms/0/remedies/checked"), true);
    EXPECT_EQ(json.integer_at("ooms/0/remedies/tried/0/peak_reserved"), 3019898880);
    EXPECT_EQ(json.boolean_at("ooms/0/remedies/tried/1/avoids"), false);
    EXPECT_DOUBLE_EQ(json.number_at("fraction").value_or(0), 0.25);
    EXPECT_EQ(json.array_size("ooms"), 1u);
    EXPECT_EQ(json.array_size("ooms/0/remedies/tried"), 2u);
    EXPECT_EQ(json.array_size("missing"), 0u);
    EXPECT_EQ(json.find("none")->type, json_scalar::kind::null);
    EXPECT_FALSE(json.integer_at("path")) << "a string is not a number";
}

TEST(json_paths, arrays_of_ten_or_more_elements_count_every_one) {
    std::string text = "[";
    for (int i = 0; i < 12; ++i) {
        text += (i ? "," : "") + std::string("{\"v\":") + std::to_string(i) + "}";
    }
    const json_paths json(text + "]", "test");
    EXPECT_EQ(json.array_size(""), 12u);
    EXPECT_EQ(json.integer_at("11/v"), 11);
}

TEST(json_paths, decodes_escapes_to_utf8) {
    const json_paths json(R"({"s": "a\"b\\c\/\n\t\u00e9\ud83d\ude00"})", "test");
    EXPECT_EQ(json.string_at("s"), "a\"b\\c/\n\t\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(json_paths, rejects_what_is_not_json_with_the_source_and_the_byte) {
    for (const char* bad : {"", "{", "{\"a\":}", "[1,]", "{\"a\":1} x", "\"\\x\"", "\"\\ud83d\"",
                            "01a", "-", "1.", "1e", "\"unterminated", "tru", "{'a':1}"}) {
        try {
            json_paths(bad, "file.json");
            ADD_FAILURE() << "accepted: " << bad;
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("file.json: JSON error at byte "),
                      std::string::npos)
                << e.what();
        }
    }
}

TEST(json_paths, refuses_nesting_deeper_than_its_bound) {
    const std::string deep(100000, '[');
    try {
        json_paths(deep, "deep.json");
        FAIL() << "accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("nested deeper than"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace memtrail::snapshot
