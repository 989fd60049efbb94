#!/usr/bin/env bash
# SGLang's serving benchmark: fixed 1024 in / 1024 out (range ratio 1), 512 concurrent users.
python3 -m sglang.bench_serving --backend sglang --model deepseek-ai/DeepSeek-R1 \
  --host localhost --port 30000 --dataset-name random \
  --random-input-len 1024 --random-output-len 1024 --random-range-ratio 1 \
  --num-prompts 2560 --max-concurrency 512
