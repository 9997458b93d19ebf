"""memtrail.ranks on a Dask cluster (dask.distributed.LocalCluster, Debian's
python3-distributed): the summaries made by the workers, and the report on them, equal what
`memtrail ranks` prints on the snapshots, byte for byte; so does `python -m memtrail ranks
--scheduler ADDRESS`, and the local process pool (client=None).

Environment: MEMTRAIL_CLI (the binary), MAKE_RANK_FILES, MEMTRAIL_UNPACKED_TRACES, PYTHONPATH
with python/src."""

import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

from dask.distributed import Client, LocalCluster

import memtrail.ranks

CLI = os.environ["MEMTRAIL_CLI"]
TRACES = pathlib.Path(os.environ["MEMTRAIL_UNPACKED_TRACES"])


def cli(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, check=True).stdout


class DaskRanks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.jobs = pathlib.Path(cls.tmp.name) / "jobs"
        subprocess.run([os.environ["MAKE_RANK_FILES"], TRACES / "fsdp2_imbalance__rank0.pickle",
                        TRACES / "fsdp2_imbalance__rank1.pickle", "13", "24",
                        cls.jobs / "a", "memtrail", "job-a"], check=True)
        subprocess.run([os.environ["MAKE_RANK_FILES"], TRACES / "ddp__rank0.pickle",
                        TRACES / "ddp__rank1.pickle", "2", "4", cls.jobs / "b", "pickle"],
                       check=True)
        cls.cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
        cls.client = Client(cls.cluster)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.cluster.close()
        cls.tmp.cleanup()

    def test_the_clusters_report_is_the_commands_byte_for_byte(self):
        output = pathlib.Path(self.tmp.name) / "summaries"
        summaries = memtrail.ranks.summarize([str(self.jobs)], client=self.client,
                                             output=str(output))
        self.assertEqual(len(summaries), 28)
        self.assertEqual(summaries[0], str(output / "rank0.memtrail.summary.json"))
        # Both workers took part.
        workers = {w["name"] for w in self.client.scheduler_info()["workers"].values()}
        self.assertEqual(len(workers), 2)
        expected = cli("ranks", self.jobs)
        self.assertEqual(memtrail.ranks.report(summaries), expected)
        self.assertEqual(memtrail.ranks.report(summaries, json=True), cli("ranks", "--json", self.jobs))
        self.assertIn("job 1 of 2: job-a, 24 ranks", expected)
        self.assertIn("ranks 0-12 and 14-23 did the same; rank 13 differs from step 0", expected)

    def test_python_m_memtrail_ranks_with_a_scheduler(self):
        result = subprocess.run(
            [sys.executable, "-m", "memtrail", "ranks", "--scheduler",
             self.cluster.scheduler_address, str(self.jobs / "a")],
            capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout, cli("ranks", self.jobs / "a"))

    def test_without_a_client_a_local_pool(self):
        summaries = memtrail.ranks.summarize([str(self.jobs / "b")])
        self.assertEqual(summaries, [str(self.jobs / "b" / f"rank{r}.pickle.summary.json")
                                     for r in range(4)])
        self.assertEqual(memtrail.ranks.report(summaries), cli("ranks", self.jobs / "b"))

    def test_a_bad_file_is_named(self):
        bad = pathlib.Path(self.tmp.name) / "rank9.pickle"
        bad.write_text("not a snapshot")
        with self.assertRaises(memtrail.ranks.RanksError) as caught:
            memtrail.ranks.summarize([str(bad)], client=self.client)
        self.assertIn(str(bad), str(caught.exception))


if __name__ == "__main__":
    unittest.main()
