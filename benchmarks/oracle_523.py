"""Times transformers 5.23.0 on one workload, in a process of its own (its folder first on `sys.path`).

    python benchmarks/oracle_523.py WORKLOAD SHAPE SIZE ROUNDS     # prints the median seconds a round

Run by benchmarks/test_release_523.py: transformers 5.23.0 cannot share the environment with 5.24.0, the
main oracle, so its rows of the speed table are measured here, on the same inputs (benchmarks/workloads.py).
"""

from __future__ import annotations

import statistics
import sys
import time

from workloads import chunks_of, response, template


def main() -> None:
    import transformers
    from transformers.utils.chat_parsing import ResponseParser, parse_response

    assert transformers.__version__ == "5.23.0", transformers.__file__
    workload, shape, size, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    tpl = template(shape)
    if workload == "stream-4":
        chunks = chunks_of(response(shape, size))

        def run() -> None:
            parser = ResponseParser(tpl, "")
            for chunk in chunks:
                parser.feed(chunk)
            parser.finalize()

    elif workload == "parse":
        text = response(shape, size)

        def run() -> None:
            parse_response(text, tpl, prefix="")

    else:  # batch-1000
        texts = [response(shape, size, seed) for seed in range(1000)]

        def run() -> None:
            for text in texts:
                parse_response(text, tpl, prefix="")

    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    print(statistics.median(times))


if __name__ == "__main__":
    main()
