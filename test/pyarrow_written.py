#!/usr/bin/env python3
"""Parquet files written by pyarrow itself (and by pandas / datasets when installed) in verl's
RL schema, for our reader to load back: `test/pyarrow_written_test.ts` reads each and compares
with `expected.json`.

    python3 test/pyarrow_written.py OUT_DIR    # a machine with pyarrow (the GPU machine has it)
"""

import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

ROWS = [
    {
        "data_source": "openai/gsm8k",
        "prompt": [{"role": "user", "content": "Natalia sold 48 clips. Let's think step by step and output the final answer after \"####\"."}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": "72"},
        "extra_info": {"split": "train", "index": 0, "answer": "48 + 24 = 72\n#### 72", "question": "Natalia sold 48 clips."},
    },
    {
        "data_source": "openai/gsm8k",
        "prompt": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Weng earns $12 an hour. ¿Cuánto? 数学 \u00e9"},
        ],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": "10"},
        "extra_info": {"split": "train", "index": 1, "answer": None, "question": "Weng earns $12."},
    },
    {
        "data_source": "lighteval/MATH",
        "prompt": [{"role": "user", "content": "What is $\\frac{1}{2}+\\frac{1}{3}$?"}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": "\\frac{5}{6}"},
        "extra_info": {"split": "test", "index": 2, "answer": "", "question": ""},
    },
]


def table(large=False):
    s = pa.large_string() if large else pa.string()
    msg = pa.struct([("role", s), ("content", s)])
    schema = pa.schema([
        ("data_source", s),
        ("prompt", pa.list_(msg)),
        ("ability", s),
        ("reward_model", pa.struct([("style", s), ("ground_truth", s)])),
        ("extra_info", pa.struct([("split", s), ("index", pa.int64()), ("answer", s), ("question", s)])),
    ])
    return pa.Table.from_pylist(ROWS, schema=schema)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    written = {}
    variants = {
        "snappy": dict(),
        "zstd": dict(compression="zstd"),
        "gzip": dict(compression="gzip"),
        "none_v1": dict(compression="none", version="1.0", use_dictionary=False),
        "row_groups_of_1": dict(row_group_size=1),
        "data_page_v2": dict(data_page_version="2.0"),
    }
    for name, kw in variants.items():
        pq.write_table(table(), f"{out}/{name}.parquet", **kw)
        written[name] = f"pyarrow {pa.__version__} {kw}"
    pq.write_table(table(large=True), f"{out}/large_string.parquet")
    written["large_string"] = "pyarrow large_string columns"
    try:
        import pandas as pd
        pd.DataFrame(ROWS).to_parquet(f"{out}/pandas.parquet")  # verl's preprocess scripts' way
        written["pandas"] = f"pandas {pd.__version__} DataFrame.to_parquet"
    except ImportError:
        pass
    try:
        import datasets
        datasets.Dataset.from_list(ROWS).to_parquet(f"{out}/datasets.parquet")
        written["datasets"] = f"datasets {datasets.__version__} Dataset.to_parquet"
    except ImportError:
        pass
    with open(f"{out}/expected.json", "w") as f:
        json.dump({"rows": ROWS, "files": written}, f, ensure_ascii=False)
    for k, v in written.items():
        print(f"{k:18s} {v}")


if __name__ == "__main__":
    main()
