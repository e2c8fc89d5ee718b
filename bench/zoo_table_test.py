#!/usr/bin/env python3
"""Test of bench/zoo_table.py on the fixed CSV files of bench/testdata/zoo (no engine needed).

model_a: joint 10 ms, ONNX Runtime 12, OpenVINO 11: best peer OpenVINO, 1.10x.
model_b: joint 5 ms (the same module as default_heuristic), ONNX Runtime 4, OpenVINO 8: 0.80x.
model_c: joint 2 ms, ONNX Runtime 4, OpenVINO failed: best peer ONNX Runtime, 2.00x.
model_d: joint failed: no ratio, left out of the geomean (1.1 * 0.8 * 2.0) ** (1 / 3).
"""
import glob
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import zoo_table  # noqa: E402

FIXTURES = sorted(glob.glob(os.path.join(HERE, "testdata", "zoo", "*.csv")))
PEERS = list(zoo_table.DEFAULT_PEERS)


class ZooTableTest(unittest.TestCase):
    def setUp(self):
        self.assertEqual(len(FIXTURES), 4)
        self.models, self.configurations = zoo_table.read_csv_files(FIXTURES)

    def test_best_peer(self):
        picks = {m: zoo_table.best_peer(r, PEERS) for m, r in self.models.items()}
        self.assertEqual(picks["model_a"], ("openvino", 11.0))
        self.assertEqual(picks["model_b"], ("onnxruntime", 4.0))
        self.assertEqual(picks["model_c"], ("onnxruntime", 4.0))  # OpenVINO failed
        self.assertEqual(picks["model_d"], ("onnxruntime", 0.3))  # OpenVINO did not run

    def test_ratios_and_geomean(self):
        ratios = {m: zoo_table.ratio_to_best_peer(r, "joint", PEERS)
                  for m, r in self.models.items()}
        self.assertAlmostEqual(ratios["model_a"], 1.1)
        self.assertAlmostEqual(ratios["model_b"], 0.8)
        self.assertAlmostEqual(ratios["model_c"], 2.0)
        self.assertIsNone(ratios["model_d"])  # joint failed
        mean = zoo_table.geomean([r for r in ratios.values() if r is not None])
        self.assertAlmostEqual(mean, (1.1 * 0.8 * 2.0) ** (1 / 3))

    def test_table(self):
        out = subprocess.run([sys.executable, os.path.join(HERE, "zoo_table.py")] + FIXTURES,
                             check=True, capture_output=True, text=True).stdout
        lines = out.splitlines()
        self.assertEqual(lines[0], "| model | default_heuristic | sequential | joint | "
                                   "ONNX Runtime | OpenVINO | best peer | joint vs best peer |")
        self.assertIn("| model_a | 20.0 | 12.0 | 10.0 | 12.0 | 11.0 | OpenVINO | 1.10x |", lines)
        self.assertIn("| model_b | 5.00 | 5.00 | 5.00 | 4.00 | 8.00 | ONNX Runtime | 0.80x |",
                      lines)
        self.assertIn("| model_c | 3.00 | 2.50 | 2.00 | 4.00 | failed | ONNX Runtime | 2.00x |",
                      lines)
        self.assertIn("| model_d | 0.500 | 0.400 | failed | 0.300 | - | ONNX Runtime | - |", lines)
        self.assertIn("| geomean (3 of 4 models) |  |  |  |  |  |  | 1.21x |", lines)

    def test_not_a_bench_csv(self):
        result = subprocess.run([sys.executable, os.path.join(HERE, "zoo_table.py"),
                                 os.path.join(HERE, "zoo_table.py")],
                                capture_output=True, text=True)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("not a `tandem bench --csv` file", result.stderr)


if __name__ == "__main__":
    unittest.main()
