#!/usr/bin/env python3
"""The shape check finds what it is there to find (check_shape.py), on small made-up trees."""

import os
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_shape  # noqa: E402


def function_lines(name, body_lines):
    return "void %s() {\n%s}\n" % (name, "    ++x;\n" * body_lines)


class ShapeTest(unittest.TestCase):
    def tree(self, files):
        root = tempfile.mkdtemp()
        for path, text in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as out:
                out.write(text)
        return root

    def problems(self, files, allowed=None):
        """The check's problems with the tree `files`, allowing only `allowed` long functions
        (none by default: a made-up tree has no pickle VM)."""
        problems, _ = check_shape.check(self.tree(files), allowed=allowed or {})
        return problems

    def balanced(self, extra):
        """`extra` beside enough small folders that no folder holds over 20% of the lines."""
        files = {"f%d/src/a.cpp" % i: "int a;\n" * 300 for i in range(12)}
        files.update(extra)
        return files

    def test_a_balanced_tree_passes(self):
        self.assertEqual(self.problems(self.balanced({})), [])

    def test_a_file_over_700_lines_fails(self):
        index = "// a\n//\n// Index of this file:\n// [SECTION] one\n// [SECTION] two\n"
        banners = "\n// [SECTION] one\nint y;\n// [SECTION] two\n"
        text = index + banners + "int x;\n" * 700
        found = self.problems(self.balanced({"g0/src/big.cpp": text}))
        self.assertEqual(len(found), 1, found)
        self.assertIn("g0/src/big.cpp: 709 lines, over 700", found[0])

    def test_tests_bench_fuzz_and_build_folders_are_not_product(self):
        long_file = "int x;\n" * 900
        files = self.balanced({"tests/a.cpp": long_file, "bench/a.cpp": long_file,
                               "fuzz/a.cpp": long_file, "build-asan/a.cpp": long_file})
        self.assertEqual(self.problems(files), [])

    def test_a_function_over_120_lines_fails_and_its_name_is_given(self):
        text = "namespace n {\n" + function_lines("short_one", 50) + \
            function_lines("long_one", 119) + "}\n"
        found = self.problems(self.balanced({"f1/src/f.cpp": text}))
        self.assertEqual(found, ["f1/src/f.cpp:54: function long_one is 121 lines, over 120"])

    def test_methods_constructors_lambdas_and_initializers(self):
        text = textwrap.dedent("""\
            #include <vector>
            #define BODY { a; }
            namespace n {
            constexpr int table[] = {1, 2, 3};
            const auto made = std::vector<int>({1, 2});
            struct s : base {
                s(int a) : a_{a}, b_(a) {
                    auto f = [&] { return "}"; };
                }
                int a_{0};
            };
            int s::method(int x) const {
                for (int i = 0; i < x; ++i) { x += '{'; }
                return x;
            }
            }  // namespace n
            """)
        found = check_shape.cpp_functions(text)
        self.assertEqual([(name, first, last) for name, first, last in found],
                         [("s", 7, 9), ("s::method", 12, 15)])

    def test_an_allowed_switch_may_be_long(self):
        text = function_lines("step", 200)
        allowed = check_shape.ALLOWED_LONG_FUNCTIONS
        self.assertEqual(self.problems(self.balanced({"f2/src/pickle_vm.cpp": text}), allowed), [])
        found = self.problems(self.balanced({"f2/src/other_vm.cpp": text,
                                             "f3/src/pickle_vm.cpp": text}), allowed)
        self.assertEqual(len(found), 1, found)

    def test_an_allowance_no_longer_needed_is_reported(self):
        found = self.problems(self.balanced({"f2/src/pickle_vm.cpp": function_lines("step", 20)}),
                              check_shape.ALLOWED_LONG_FUNCTIONS)
        self.assertEqual(found, ["ALLOWED_LONG_FUNCTIONS names step in pickle_vm.cpp, which is not "
                                 "over 120 lines: remove it"])

    def test_python_functions_are_measured_too(self):
        text = "def long_one():\n" + "    x = 1\n" * 130
        found = self.problems(self.balanced({"f3/tool.py": text}))
        self.assertEqual(found, ["f3/tool.py:1: function long_one is 131 lines, over 120"])

    def test_a_file_over_400_lines_needs_a_section_index_with_banners(self):
        body = "int x;\n" * 420
        found = self.problems(self.balanced({"f4/src/a.cpp": "// what it is\n" + body}))
        self.assertEqual(found, ["f4/src/a.cpp: over 400 lines and opens with no [SECTION] index"])
        index = "// what it is\n//\n// Index of this file:\n// [SECTION] one\n// [SECTION] two\n"
        found = self.problems(self.balanced({"f4/src/a.cpp": index + "\n// [SECTION] one\n" + body}))
        self.assertEqual(found, ["f4/src/a.cpp: its index names sections with no banner: two"])
        indexed = index + "\n// [SECTION] one\n" + body + "// [SECTION] two\n"
        self.assertEqual(self.problems(self.balanced({"f4/src/a.cpp": indexed})), [])

    def test_a_folder_over_a_fifth_of_the_lines_fails(self):
        files = self.balanced({"f5/src/b.cpp": "int b;\n" * 400, "f5/src/c.cpp": "int c;\n" * 399})
        found = self.problems(files)
        self.assertEqual(found, ["f5/: 1099 of the product's 4399 source lines (25.0%), over 20%"])

    def test_a_header_beside_the_sources_fails_in_every_module(self):
        found = self.problems(self.balanced({"f6/src/private.hpp": "#pragma once\n",
                                             "f7/src/legacy.h": "#pragma once\n"}))
        self.assertEqual(found, [
            "f6/src/private.hpp: a private header beside the sources; move it to f6/src/detail/",
            "f7/src/legacy.h: a private header beside the sources; move it to f7/src/detail/"])

    def test_a_header_beside_the_sources_of_a_subfolder_fails(self):
        found = self.problems(self.balanced({"f8/src/hooks/private.hpp": "#pragma once\n",
                                             "f8/src/hooks/detail/kept.hpp": "#pragma once\n"}))
        self.assertEqual(found, [
            "f8/src/hooks/private.hpp: a private header beside the sources; move it to "
            "f8/src/hooks/detail/"])

    def test_headers_in_detail_and_include_pass(self):
        files = self.balanced({"f6/src/detail/private.hpp": "#pragma once\n",
                               "f6/include/memtrail/f6/api.hpp": "#pragma once\n",
                               "f6/src/source.cpp": "int s;\n"})
        self.assertEqual(self.problems(files), [])


if __name__ == "__main__":
    unittest.main()
