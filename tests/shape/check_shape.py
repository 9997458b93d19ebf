#!/usr/bin/env python3
"""The tree's shape, checked: short files, short functions, indexed big files, no warehouse folder.

Usage: check_shape.py [ROOT] [--list-functions N]

Fails (exit 1, one line per problem) when a product source file (anything outside tests/, bench/,
fuzz/, build*/ and hidden folders) is over 700 lines, a function is over 120 lines (C++ bodies
found by brace matching, Python ones by the ast), a file over 400 lines does not open with a
[SECTION] index whose sections come back as banners, or a top-level folder holds over 20% of the
product's source lines, or a header lies directly in a module's src/ folder (private headers go in
src/detail/, public ones in include/). Long functions that are a VM's or an interpreter's switch are allowed by
name in ALLOWED_LONG_FUNCTIONS, each with the reason. --list-functions N prints every function over
N lines instead, longest first, to find what to split.
"""

import ast
import os
import re
import sys

MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 120
INDEX_FROM_LINES = 400
MAX_FOLDER_SHARE = 0.20

SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".c", ".cc", ".py")
HEADER_SUFFIXES = (".hpp", ".h")
SKIPPED_TOP_LEVEL = {"tests", "bench", "fuzz", "docs", "cmake", "scripts"}

# (file name, function name): why it may be long. By file name, not path, so that the allowance
# follows a file that moves to another folder. An allowance whose function is no longer long is
# reported, so the list never outlives its reasons.
ALLOWED_LONG_FUNCTIONS = {
    ("pickle_vm.cpp", "step"):
        "the pickle VM's switch: one case per opcode, read best as one table",
}


def product_files(root):
    for folder, subfolders, files in os.walk(root):
        relative = os.path.relpath(folder, root)
        top = relative.split(os.sep)[0]
        if relative == ".":
            subfolders[:] = [s for s in subfolders
                             if not s.startswith(".") and not s.startswith("build")
                             and s not in SKIPPED_TOP_LEVEL]
        subfolders[:] = [s for s in subfolders if not s.startswith(".") and s != "__pycache__"]
        for name in files:
            if name.endswith(SOURCE_SUFFIXES) and top != ".":
                yield os.path.join(relative, name).replace(os.sep, "/")


def strip_cpp(text):
    """Blanks comments, string and character literals and preprocessor lines, keeping newlines,
    so that the braces left are the code's own."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if at_line_start and c == "#":
            # A preprocessor line, with its continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        at_line_start = c == "\n"
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\(', text[i:i + 24])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + raw.group(1) + '"', i + raw.end())
            end = n if end < 0 else end + len(raw.group(1)) + 2
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
            continue
        if c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            # A literal (a ' between digits is a digit separator, not a character literal).
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


SCOPE_HEADER = re.compile(r"^(?:template\s*<.*>\s*)?(?:namespace\b|extern\s*\"\"\s*$|"
                          r"(?:class|struct|union|enum)\b)", re.S)
CONTROL = re.compile(r"^(?:if|for|while|switch|catch|do|else|return|case)\b")


def function_name(header):
    """The name a function header declares: the identifier (with its class) before the
    parameter list's opening parenthesis."""
    depth = 0
    for position, c in enumerate(header):
        if c == "<":
            depth += 1
        elif c == ">" and depth:
            depth -= 1
        elif c == "(" and depth == 0:
            match = re.search(r"((?:[A-Za-z_]\w*\s*::\s*)*~?(?:operator\s*\S+?|[A-Za-z_]\w*))\s*$",
                              header[:position])
            if match:
                return re.sub(r"\s+", "", match.group(1))
            return None
    return None


def looks_like_function(header):
    header = header.strip()
    if "(" not in header or CONTROL.match(header) or SCOPE_HEADER.match(header):
        return False
    # An initializer at namespace scope (`auto table = make({...` or `x = {`) is not a body.
    before_paren = header[:header.index("(")]
    if re.search(r"(?<![=!<>])=(?!=)", before_paren) and "operator" not in before_paren:
        return False
    if header.endswith("="):
        return False
    return function_name(header) is not None


def cpp_functions(text):
    """(name, first line, last line) of each function body defined at namespace or class scope;
    lambdas and local classes count as part of the function around them."""
    code = strip_cpp(text)
    functions = []
    # Each open brace: "scope" (namespace, class, extern "C") or "function" or "other".
    stack = []
    header_start = 0
    line = 1
    line_of = []
    for c in code:
        line_of.append(line)
        if c == "\n":
            line += 1
    i = 0
    n = len(code)
    function_start = None
    while i < n:
        c = code[i]
        in_function = any(kind == "function" for kind, _ in stack)
        if c == "{":
            if in_function:
                stack.append(("other", i))
            else:
                header = code[header_start:i]
                stripped = header.strip()
                if SCOPE_HEADER.match(stripped) or re.match(r"^extern\s*\"\"", stripped) \
                        or not stripped:
                    kind = "scope" if stripped else "other"
                elif looks_like_function(stripped) and not member_initializer(stripped):
                    kind = "function"
                    first = header_start + (len(header) - len(header.lstrip()))
                    function_start = (function_name(stripped), line_of[first])
                else:
                    kind = "other"
                stack.append((kind, i))
                if kind in ("scope", "function"):
                    header_start = i + 1
        elif c == "}":
            kind = stack.pop()[0] if stack else "scope"
            if kind == "function" and not any(k == "function" for k, _ in stack):
                functions.append((function_start[0], function_start[1], line_of[i]))
                header_start = i + 1
            elif kind == "scope" and not any(k == "function" for k, _ in stack):
                header_start = i + 1
        elif c == ";" and not in_function and not any(k == "other" for k, _ in stack):
            header_start = i + 1
        i += 1
    return functions


def member_initializer(header):
    """True when the brace closes a constructor's member initializer (`: a_(a), b_{` or a
    nested brace inside one) rather than opening the constructor's body."""
    depth = 0
    for position, c in enumerate(header):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                rest = header[position + 1:]
                initializers = re.match(r"^[\s\w]*:(?!:)", rest)
                if not initializers:
                    return False
                tail = header.rstrip()
                return bool(re.search(r"[\w>]$", tail)) or header.count("{") > header.count("}")
    return False


def python_functions(text):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return [(node.name, node.lineno, node.end_lineno) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def section_index_problem(lines):
    """None when the file opens with an index of [SECTION]s (in its opening comment) and each
    comes back later as a banner; else what is wrong."""
    index = []
    index_end = 0
    for number, line in enumerate(lines):
        stripped = line.strip()
        is_comment = stripped.startswith(("//", "#", "/*", "*", '"""')) and \
            not re.match(r"#\s*(include|pragma|if|define)", stripped)
        if "[SECTION]" in stripped and is_comment:
            index.append(re.sub(r"^[/#*\s]*\[SECTION\]\s*", "", stripped).strip())
            index_end = number + 1
        elif index or not (is_comment or not stripped):
            break
    if len(index) < 2:
        return "over %d lines and opens with no [SECTION] index" % INDEX_FROM_LINES
    rest = "\n".join(lines[index_end:])
    missing = [name for name in index
               if not re.search(r"\[SECTION\]\s*" + re.escape(name) + r"\s*$", rest, re.M)]
    if missing:
        return "its index names sections with no banner: %s" % ", ".join(missing)
    return None


def header_place_problem(path):
    """None unless `path` is a header beside the sources in a `src/` folder or one of its
    subfolders (src/interpose/): a module keeps its private headers in a detail/ folder beside
    them (its public ones in include/)."""
    folder, _, name = path.rpartition("/")
    parts = folder.split("/")
    if not name.endswith(HEADER_SUFFIXES) or "src" not in parts or "detail" in parts:
        return None
    return "%s: a private header beside the sources; move it to %s/detail/" % (path, folder)


def check(root, list_over=None, allowed=None):
    """(problems, functions over list_over lines) of the tree at root; `allowed` stands for
    ALLOWED_LONG_FUNCTIONS."""
    allowed = ALLOWED_LONG_FUNCTIONS if allowed is None else allowed
    problems = []
    folder_lines = {}
    long_functions = []
    allowances_used = set()
    for path in sorted(product_files(root)):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as source:
            text = source.read()
        lines = text.splitlines()
        top = path.split("/")[0]
        folder_lines[top] = folder_lines.get(top, 0) + len(lines)
        found = []
        misplaced = header_place_problem(path)
        if misplaced:
            found.append(misplaced)
        if len(lines) > MAX_FILE_LINES:
            found.append("%s: %d lines, over %d" % (path, len(lines), MAX_FILE_LINES))
        if len(lines) > INDEX_FROM_LINES:
            problem = section_index_problem(lines)
            if problem:
                found.append("%s: %s" % (path, problem))
        functions = python_functions(text) if path.endswith(".py") else cpp_functions(text)
        for name, first, last in functions:
            length = last - first + 1
            if list_over is not None and length > list_over:
                long_functions.append((length, path, first, name))
            key = (path.split("/")[-1], name.split("::")[-1])
            if length > MAX_FUNCTION_LINES and key in allowed:
                allowances_used.add(key)
            if length > MAX_FUNCTION_LINES and key not in allowed:
                found.append("%s:%d: function %s is %d lines, over %d"
                             % (path, first, name, length, MAX_FUNCTION_LINES))
        problems.extend(found)
    for file_name, function in sorted(set(allowed) - allowances_used):
        problems.append("ALLOWED_LONG_FUNCTIONS names %s in %s, which is not over %d lines: "
                        "remove it" % (function, file_name, MAX_FUNCTION_LINES))
    total = sum(folder_lines.values())
    for folder, count in sorted(folder_lines.items()):
        if count > MAX_FOLDER_SHARE * total:
            line = "%s/: %d of the product's %d source lines (%.1f%%), over %d%%" % (
                folder, count, total, 100.0 * count / total, 100 * MAX_FOLDER_SHARE)
            problems.append(line)
    return problems, long_functions


def main(argv):
    list_over = None
    arguments = argv[1:]
    if "--list-functions" in arguments:
        at = arguments.index("--list-functions")
        list_over = int(arguments[at + 1])
        del arguments[at:at + 2]
    root = arguments[0] if arguments else os.path.join(os.path.dirname(__file__), "..", "..")
    root = os.path.abspath(root)
    if not os.path.isdir(root):
        print("check_shape: %s is not a folder (give the project's root)" % root)
        return 2
    problems, long_functions = check(root, list_over)
    if list_over is not None:
        for length, path, first, name in sorted(long_functions, reverse=True):
            print("%4d  %s:%d  %s" % (length, path, first, name))
        return 0
    for line in problems:
        print(line)
    if problems:
        print("check_shape: %d problem(s) in %s" % (len(problems), root))
        return 1
    print("check_shape: the tree keeps its shape (files <= %d lines, functions <= %d, "
          "indexed files > %d, folders <= %d%%, private headers in src/detail/)" % (MAX_FILE_LINES, MAX_FUNCTION_LINES,
                                                      INDEX_FROM_LINES, 100 * MAX_FOLDER_SHARE))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
