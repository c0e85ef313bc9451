"""Builds tools.py with piton and calls the tool through piton, as an agent would:

    python3 test_tools.py

Needs `piton` on PATH (or $PITON) and componentize-py for the Python that
`piton build` uses (it says how to install it when it is missing)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
PITON = os.environ.get("PITON", "piton")


def piton(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PITON, *args], capture_output=True, text=True, timeout=600)


class Test__NAME__(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.plugins = tempfile.TemporaryDirectory()
        built = piton("build", str(HERE), "-o", os.path.join(cls.plugins.name, "__PROJECT__.wasm"))
        if built.returncode != 0:
            raise RuntimeError(f"piton build failed:\n{built.stderr}")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.plugins.cleanup()

    def call(self, args: dict) -> subprocess.CompletedProcess:
        return piton("call", "--plugins", self.plugins.name, "__NAME__", json.dumps(args))

    def test_counts_words(self) -> None:
        out = self.call({"text": "the quick brown fox"})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "4")
        self.assertEqual(self.call({"text": "a bb ccc", "min_length": 2}).stdout.strip(), "2")

    def test_wrong_arguments_are_input_errors(self) -> None:
        for args in ({"text": 3}, {"text": "a", "min_length": 0}, {}):
            with self.subTest(args=args):
                out = self.call(args)
                self.assertEqual(out.returncode, 1)
                self.assertIn("(input error:", out.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
