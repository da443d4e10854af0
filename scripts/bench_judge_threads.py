"""The local judge alone, one onnxruntime run of 3 pairs x 160 tokens (the hook's depth), with its thread pool
spinning (onnxruntime's default) or sleeping (episodic.judge.model's choice), on 2 or 1 threads: p50 / p95 of
40 runs each, and the load average. Run it beside busy loops to see the pool fight for the cores:

    python scripts/bench_judge_threads.py
    for i in 1 2 3; do sh -c 'while :; do :; done' & done; python scripts/bench_judge_threads.py; kill %1 %2 %3
"""

from __future__ import annotations

import os
import time

import numpy as np
import onnxruntime as ort
from episodic.judge.model import default_model_dir
from tokenizers import Tokenizer

QUERY = "pytest cannot find a fixture after conftest was moved into a subfolder of the tests package"
CARD = (
    "The fixture db was not found because conftest.py moved into tests/unit and pytest only collects conftest "
    "files on the path of the collected tests; moving it back to the root fixed it. "
) * 3


def main() -> None:
    model = default_model_dir()
    tokenizer = Tokenizer.from_file(str(model / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=160, strategy="longest_first")
    encodings = tokenizer.encode_batch([(QUERY, CARD)] * 3)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    feed = {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }
    for threads, spin in ((2, True), (2, False), (1, True), (1, False)):
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        session = ort.InferenceSession(str(model / "model.onnx"), options, providers=["CPUExecutionProvider"])
        for _ in range(3):
            session.run(["logits"], feed)
        seconds = []
        for _ in range(40):
            started = time.perf_counter()
            session.run(["logits"], feed)
            seconds.append(time.perf_counter() - started)
        seconds.sort()
        print(
            f"threads {threads}, {'spinning' if spin else 'sleeping'}: p50 {seconds[20] * 1000:.0f} ms, "
            f"p95 {seconds[37] * 1000:.0f} ms (load average {os.getloadavg()[0]:.1f})"
        )


if __name__ == "__main__":
    main()
