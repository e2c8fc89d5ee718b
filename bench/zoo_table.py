#!/usr/bin/env python3
"""One Markdown table of a model-zoo benchmark, from the CSV files of `tandem bench --csv`.

Per model (one row per subject): the latency of each Tandem configuration and of each peer (an
external engine such as onnxruntime or openvino), the fastest peer, and the latency of that peer
divided by the latency of the Tandem configuration --tandem (joint by default): above 1, Tandem
is faster. A last row gives the geometric mean of that ratio over the models that have it.
A configuration that failed shows "failed", one that did not run "-"; a model whose --tandem
configuration or every peer failed or is missing has no ratio and stays out of the geomean.

Standard library only: scripts/bench_zoo.sh calls it, and a test runs it on fixed CSV files.
"""
import argparse
import csv
import math
import sys

DEFAULT_PEERS = ("onnxruntime", "openvino")
DISPLAY_NAMES = {"onnxruntime": "ONNX Runtime", "openvino": "OpenVINO"}
REQUIRED_COLUMNS = ("subject", "configuration", "latency_ms", "failure")


class Result:
    """One configuration's outcome on one model: latency in ms, or None with why."""

    def __init__(self, latency_ms, failure):
        self.latency_ms, self.failure = latency_ms, failure


def read_csv_files(paths):
    """{model: {configuration: Result}} in the order met, and the configurations in that order."""
    models, configurations = {}, []
    for path in paths:
        try:
            with open(path, newline="") as f:
                reader = csv.DictReader(f)
                missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
                if missing:
                    raise ValueError(f"{path}: not a `tandem bench --csv` file (no column "
                                     f"{', '.join(missing)})")
                for row in reader:
                    model = row["subject"].split("/")[0]
                    latency = float(row["latency_ms"])
                    failure = row["failure"]
                    ok = not failure and latency > 0
                    results = models.setdefault(model, {})
                    results[row["configuration"]] = Result(latency if ok else None,
                                                           failure or "no latency")
                    if row["configuration"] not in configurations:
                        configurations.append(row["configuration"])
        except OSError as error:
            raise ValueError(f"cannot read {path}: {error.strerror}") from error
    return models, configurations


def best_peer(results, peers):
    """(name, latency_ms) of the fastest peer that has a latency, or None."""
    timed = [(results[p].latency_ms, p) for p in peers
             if p in results and results[p].latency_ms is not None]
    if not timed:
        return None
    latency, name = min(timed)
    return name, latency


def ratio_to_best_peer(results, tandem, peers):
    """Best peer's latency / the latency of configuration `tandem`, or None."""
    best = best_peer(results, peers)
    own = results.get(tandem)
    if best is None or own is None or own.latency_ms is None:
        return None
    return best[1] / own.latency_ms


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def format_ms(ms):
    if ms >= 10:
        return f"{ms:.1f}"
    return f"{ms:.2f}" if ms >= 1 else f"{ms:.3f}"


def cell(results, configuration):
    result = results.get(configuration)
    if result is None:
        return "-"
    return "failed" if result.latency_ms is None else format_ms(result.latency_ms)


def make_table(models, configurations, tandem, peers):
    """The Markdown table's lines."""
    own = [c for c in configurations if c not in peers]
    present_peers = [p for p in peers if p in configurations]
    header = ["model"] + own + [DISPLAY_NAMES.get(p, p) for p in present_peers]
    header += ["best peer", f"{tandem} vs best peer"]
    lines = ["| " + " | ".join(header) + " |",
             "|---" + "|---:" * (len(header) - 3) + "|---|---:|"]
    ratios = []
    for model, results in models.items():
        best = best_peer(results, present_peers)
        ratio = ratio_to_best_peer(results, tandem, present_peers)
        if ratio is not None:
            ratios.append(ratio)
        row = [model] + [cell(results, c) for c in own + present_peers]
        row += [DISPLAY_NAMES.get(best[0], best[0]) if best else "-",
                f"{ratio:.2f}x" if ratio is not None else "-"]
        lines.append("| " + " | ".join(row) + " |")
    mean = geomean(ratios)
    label = f"geomean ({len(ratios)} of {len(models)} models)"
    lines.append("| " + " | ".join([label] + [""] * (len(header) - 2) +
                                   [f"{mean:.2f}x" if mean is not None else "-"]) + " |")
    lines.append("")
    lines.append(f"Latency in ms; {tandem} vs best peer: the best peer's latency / {tandem}'s "
                 "(above 1: Tandem faster).")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("csv_files", nargs="+", metavar="CSV", help="tandem bench --csv files")
    parser.add_argument("--tandem", default="joint",
                        help="the Tandem configuration compared with the best peer")
    parser.add_argument("--peers", default=",".join(DEFAULT_PEERS),
                        help="comma-separated configurations that are other engines")
    args = parser.parse_args()
    try:
        models, configurations = read_csv_files(args.csv_files)
    except ValueError as error:
        sys.exit(f"zoo_table.py: {error}")
    if not models:
        sys.exit("zoo_table.py: the CSV files hold no rows")
    peers = [p for p in args.peers.split(",") if p]
    print("\n".join(make_table(models, configurations, args.tandem, peers)))


if __name__ == "__main__":
    main()
