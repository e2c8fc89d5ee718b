#!/usr/bin/env python3
"""Budgets that resume, through the CLI: `tandem tune --trials N` is killed with SIGKILL at a
random moment (a seeded random number of spent trials), then the same command is run again. The
second run says "resuming: K of N trials already spent", measures only the N - K trials left, and
the two runs together record no more measurements than one uninterrupted run of the command.

Usage: resume_cli_test.py TANDEM MODEL WORK_DIR [TRIALS] [SEED]
"""
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

tandem, model, work = sys.argv[1], sys.argv[2], sys.argv[3]
trials = int(sys.argv[4]) if len(sys.argv) > 4 else 24
seed = int(sys.argv[5]) if len(sys.argv) > 5 else 1
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def command(db):
    return [tandem, "tune", model, "--pipeline", "default_tuning", "--trials", str(trials),
            "--repeats", "2", "--db", db]


def query(db, sql):
    if not os.path.exists(db):
        return 0
    try:
        connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            row = connection.execute(sql).fetchone()
        finally:
            connection.close()
    except sqlite3.OperationalError:  # the table is not there yet
        return 0
    return row[0] if row and row[0] is not None else 0


def spent(db):
    return query(db, "SELECT COUNT(*) FROM tuning_job_trials")


def records(db):
    return query(db, "SELECT COUNT(*) FROM records")


# The trials of default_tuning are kernel measurements; the graph measurements besides them (the
# latency before and after, confirmations of a decision) are outside every run's trial budget.
def kernel_records(db):
    return query(db, "SELECT COUNT(*) FROM records WHERE json_extract(measured_by, '$.runner') = "
                     "'kernel'")


def total_measured(stdout):
    # The "total" row of the summary's evaluations table: asked, from db, measured, ...
    match = re.search(r"^total +\d+ +\d+ +(\d+) ", stdout, re.M)
    if not match:
        sys.exit("no evaluation table in the output:\n" + stdout)
    return int(match.group(1))


# One uninterrupted run.
whole_db = os.path.join(work, "whole.db")
whole = subprocess.run(command(whole_db), capture_output=True, text=True, timeout=900)
if whole.returncode != 0:
    sys.exit("the uninterrupted run failed:\n" + whole.stderr)
whole_spent, whole_records = spent(whole_db), kernel_records(whole_db)
print(f"uninterrupted: {whole_spent} trials spent, {whole_records} kernel records")
if whole_spent != trials:
    sys.exit(f"the uninterrupted run spent {whole_spent} trials, expected {trials}")

# Killed at a random moment: once a seeded random number of trials is spent.
db = os.path.join(work, "resumed.db")
kill_at = random.Random(seed).randint(1, trials - 1)
child = subprocess.Popen(command(db), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.time() + 600
while child.poll() is None and spent(db) < kill_at and time.time() < deadline:
    time.sleep(0.005)
if child.poll() is not None:
    sys.exit("the tuning run finished before it was killed")
os.kill(child.pid, signal.SIGKILL)
child.wait()
k = spent(db)
print(f"killed with SIGKILL after {k} trials spent ({records(db)} records)")
if not 1 <= k < trials:
    sys.exit(f"killed after {k} trials: expected between 1 and {trials - 1}")

again = subprocess.run(command(db), capture_output=True, text=True, timeout=900)
if again.returncode != 0:
    sys.exit("the resumed run failed:\n" + again.stderr)
expected = f"resuming: {k} of {trials} trials already spent"
if expected not in again.stderr + again.stdout:
    sys.exit(f"'{expected}' not printed:\n" + again.stderr)
measured = total_measured(again.stdout)
print(f"resumed: measured {measured} more; job spent {spent(db)}; {kernel_records(db)} kernel "
      f"records")
failures = []
if measured != trials - k:
    failures.append(f"the resumed run measured {measured}, expected {trials - k}")
if spent(db) != trials:
    failures.append(f"the job spent {spent(db)} trials, expected {trials}")
if kernel_records(db) > whole_records:
    failures.append(f"{kernel_records(db)} kernel records after the two runs, more than the "
                    f"{whole_records} of one uninterrupted run")
# Spent: the same command replays the committed run and measures nothing for the pipeline.
third = subprocess.run(command(db), capture_output=True, text=True, timeout=900)
if third.returncode != 0 or "reusing the tuning run" not in third.stderr:
    failures.append("a third run of the finished job measured again:\n" + third.stderr)
for failure in failures:
    print("FAILED:", failure)
sys.exit(1 if failures else 0)
