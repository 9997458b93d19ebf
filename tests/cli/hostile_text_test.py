"""Text from a snapshot or the command line never reaches a terminal or a JSON reader raw:
control characters (ESC, BEL, CR, LF) are escaped in text output and error messages, and JSON is
always valid UTF-8 (bytes that are not become U+FFFD). A file could otherwise clear the screen,
move the cursor or forge a line such as "memtrail: all good".

Environment: MEMTRAIL, TRACE_DIR (the unpacked tests/data/traces/*.tar.gz).
"""
import json
import os
import pathlib
import pickle
import subprocess
import tempfile
import unittest

MEMTRAIL = os.environ["MEMTRAIL"]
TRACES = pathlib.Path(os.environ["TRACE_DIR"])
FORGED = "\x1b[2J\rmemtrail: all good\n\x07"


def hostile_pickle(folder):
    """compile_tags.pickle with control characters in a frame's name and in the user's metadata,
    and bytes that are not UTF-8 in another frame's name (spliced into the pickle's bytes, which
    Python's own pickler would never write)."""
    with open(TRACES / "compile_tags.pickle", "rb") as f:
        snapshot = pickle.load(f)
    for entry in snapshot["device_traces"][0]:
        if entry["action"] == "alloc" and entry["frames"]:
            entry["frames"][0]["name"] = "grow" + FORGED
            entry["frames"][-1]["name"] = "QQQQ_not_utf8"
        if entry["user_metadata"] == "train step 1":
            entry["user_metadata"] = "step" + FORGED
    data = pickle.dumps(snapshot, protocol=4).replace(b"QQQQ_not_utf8", b"\xff\xfe\xc0\xaf_not_utf8")
    path = pathlib.Path(folder) / "hostile.pickle"
    path.write_bytes(data)
    return path


def run(*args):
    return subprocess.run([MEMTRAIL, *map(str, args)], capture_output=True)


class HostileText(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.path = hostile_pickle(self.folder.name)

    def tearDown(self):
        self.folder.cleanup()

    def test_json_is_valid_utf8_with_control_characters_escaped(self):
        for args in (["top", self.path, "--json"], ["summary", self.path, "--json"],
                     ["categories", self.path, "--json"]):
            with self.subTest(command=args[0]):
                result = run(*args)
                self.assertEqual(result.returncode, 0, result.stderr)
                text = result.stdout.decode("utf-8")  # strict: raises on bytes that are not
                self.assertNotIn("\x1b", text)
                self.assertNotIn("\x07", text)
                json.loads(text)
        tags = json.loads(run("summary", self.path, "--json").stdout)["ranks"][0]["tags"]
        self.assertIn("step" + FORGED, [t["value"] for t in tags])

    def test_text_output_escapes_control_characters(self):
        for args in (["summary", self.path], ["top", self.path]):
            with self.subTest(command=args[0]):
                result = run(*args)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertNotIn(b"\x1b", result.stdout)
                self.assertNotIn(b"\rmemtrail: all good", result.stdout)
                self.assertNotIn(b"\x07", result.stdout)

    def test_error_messages_escape_what_they_quote(self):
        bad = pathlib.Path(self.folder.name) / ("bad" + FORGED + ".pickle")
        bad.write_bytes(b"not a snapshot")
        result = run("summary", bad)
        self.assertEqual(result.returncode, 2)
        self.assertNotIn(b"\x1b", result.stderr)
        self.assertEqual(result.stderr.count(b"\n"), 1, result.stderr)
        self.assertIn(b"bad\\x1b[2J\\x0dmemtrail: all good\\x0a\\x07.pickle", result.stderr)
        result = run("evil" + FORGED)
        self.assertEqual(result.stderr.count(b"\n"), 1, result.stderr)
        self.assertNotIn(b"\x1b", result.stderr)


if __name__ == "__main__":
    unittest.main()
