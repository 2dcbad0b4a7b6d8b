"""Parse stored generations on a Ray cluster with Ray Data, writing Parquet shards from the workers.

    python examples/ray_job.py generations/ messages/ --preset qwen3 [--address HOST:PORT] [--actors N]

INPUT is a Parquet file or a directory of shards with a `response` column (and optionally `prompt`
and `id`); OUTPUT a new directory of Parquet shards with respc's output schema (`id`, `message` as
JSON, `error`, the raw `response` of failed rows). Unlike `respc parse --engine ray`, which streams
the results back to write one output in order, the shards are written by the workers themselves:
the way to go when one machine cannot take the output. Without `--address` a local cluster is
started (on loopback) and stopped.
"""

from __future__ import annotations

import argparse
import os


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--preset", required=True)
    parser.add_argument("--address", help="a running cluster's GCS address (default: start one here)")
    parser.add_argument("--actors", type=int, default=2, help="parser actors (default: 2)")
    args = parser.parse_args()

    from respc.batch.ray import ParseResponses, ray_environment

    ray_environment()  # loopback only, no usage stats: set before Ray is imported
    import ray
    from ray.data import ActorPoolStrategy, DataContext

    ray.init(address=args.address, logging_level="ERROR", log_to_driver=False)
    try:
        context = DataContext.get_current()
        context.enable_progress_bars = False
        context.target_max_block_size = 4 * 1024 * 1024  # several blocks per file: every actor works
        cpus = ray.cluster_resources().get("CPU", 2)
        parsed = ray.data.read_parquet(os.path.abspath(args.input)).map_batches(
            ParseResponses,
            fn_constructor_kwargs={"preset": args.preset},
            batch_format="pyarrow",
            compute=ActorPoolStrategy(size=args.actors),
            num_cpus=max(cpus - 1, 1) / args.actors,  # leave a CPU for reading and writing
        )
        parsed.write_parquet(os.path.abspath(args.output))
        written = ray.data.read_parquet(os.path.abspath(args.output))
        failed = written.filter(lambda row: row["error"] is not None).count()
        print(f"{written.count()} records, {failed} failed -> {args.output}")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
